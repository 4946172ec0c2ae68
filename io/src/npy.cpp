#include "io/npy.h"

#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "io/error.h"
#include "io/input_file.h"
#include "io/output_set.h"
#include "io/text.h"

namespace systolic::io {

namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr std::size_t kMagicLen = 6;
constexpr std::size_t kPreambleFixed = kMagicLen + 2;  // magic + major + minor
constexpr std::uint64_t kMaxHeaderLen = 1u << 20;      // numpy itself refuses anything above 10000 bytes
constexpr std::uint64_t kMaxDataBytes = 1ull << 40;    // 1 TiB
constexpr std::size_t kMaxDims = 64;                   // numpy 2 allows at most 64 dimensions
constexpr std::size_t kArrayAlign = 64;                // numpy's ARRAY_ALIGN
constexpr std::size_t kGrowthAxisMaxDigits = 21;       // numpy's GROWTH_AXIS_MAX_DIGITS

// Escaped whole: a header's NUL or newline must not cut the one-line message short.
[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw npy_error(printable(path + ": " + message));
}

bool host_is_little_endian() {
    const std::uint16_t one = 1;
    unsigned char first = 0;
    std::memcpy(&first, &one, 1);
    return first == 1;
}

char host_order() {
    return host_is_little_endian() ? '<' : '>';
}

// ---------------------------------------------------------------------------------------------------------------
// dtype descriptors

struct dtype_info {
    char order = '|';            // '<', '>' or '|' (byte order not applicable), after normalisation
    char kind = 0;               // numpy kind character: b i u f c S U V M m
    std::uint64_t count = 0;     // the number written in the descr (characters for 'U', bytes otherwise)
    std::uint64_t itemsize = 0;  // bytes per element
    std::string unit;            // datetime unit including brackets, e.g. "[ns]"
};

// Parses a simple (non-structured) numpy dtype descr such as "<i4", "|u1", "f8", "=c16", "<M8[ns]". Returns
// nothing if the descr is not one of those. The byte order is normalised: '=', '|' and a missing order mean
// the host order for multi-byte numbers and '|' when byte order does not apply.
std::optional<dtype_info> parse_descr(const std::string& descr) {
    dtype_info info;
    std::size_t pos = 0;
    char order = '=';
    if (pos < descr.size() && std::string("<>|=").find(descr[pos]) != std::string::npos) order = descr[pos++];
    if (pos >= descr.size()) return std::nullopt;

    if (descr.substr(pos) == "?") {
        info.kind = 'b';
        info.count = 1;
    } else {
        info.kind = descr[pos++];
        if (std::string("biufcSUVMm").find(info.kind) == std::string::npos) return std::nullopt;
        const std::size_t digits_begin = pos;
        while (pos < descr.size() && descr[pos] >= '0' && descr[pos] <= '9') {
            if (pos - digits_begin >= 9) return std::nullopt;  // keeps count far from overflow
            info.count = info.count * 10 + static_cast<std::uint64_t>(descr[pos] - '0');
            ++pos;
        }
        if (pos == digits_begin || info.count == 0) return std::nullopt;
        if ((info.kind == 'M' || info.kind == 'm') && pos < descr.size()) {
            if (descr[pos] != '[' || descr.back() != ']' || descr.size() - pos < 3) return std::nullopt;
            for (std::size_t i = pos + 1; i + 1 < descr.size(); ++i) {
                const char c = descr[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))) {
                    return std::nullopt;
                }
            }
            info.unit = descr.substr(pos);
            pos = descr.size();
        }
        if (pos != descr.size()) return std::nullopt;
    }

    const std::uint64_t n = info.count;
    bool size_ok = false;
    switch (info.kind) {
        case 'b':
            size_ok = n == 1;
            break;
        case 'i':
        case 'u':
            size_ok = n == 1 || n == 2 || n == 4 || n == 8;
            break;
        case 'f':
            size_ok = n == 2 || n == 4 || n == 8 || n == 12 || n == 16;
            break;
        case 'c':
            size_ok = n == 8 || n == 16 || n == 24 || n == 32;
            break;
        case 'M':
        case 'm':
            size_ok = n == 8;
            break;
        default:
            size_ok = true;
            break;  // S, U, V: any positive length
    }
    if (!size_ok) return std::nullopt;
    info.itemsize = info.kind == 'U' ? 4 * n : n;

    const bool order_matters =
        info.kind == 'U' || (info.kind != 'S' && info.kind != 'V' && info.itemsize > 1);
    if (!order_matters) {
        info.order = '|';
    } else if (order == '<' || order == '>') {
        info.order = order;
    } else {
        info.order = host_order();
    }
    return info;
}

std::string canonical_descr(const dtype_info& d) {
    return std::string(1, d.order) + d.kind + std::to_string(d.count) + d.unit;
}

// A human name such as "int32" or "float64"; the quoted descr for anything more exotic.
std::string dtype_name(const dtype_info& d, const std::string& descr) {
    const std::string bits = std::to_string(d.itemsize * 8);
    switch (d.kind) {
        case 'b':
            return "bool";
        case 'i':
            return "int" + bits;
        case 'u':
            return "uint" + bits;
        case 'f':
            return "float" + bits;
        case 'c':
            return "complex" + bits;
        default:
            return "'" + descr + "'";
    }
}

// ---------------------------------------------------------------------------------------------------------------
// Formatting helpers for messages

// Shape as a compact tuple: "()", "(3,)", "(0,3)", "(2,3,4)".
std::string shape_tuple(const std::vector<std::uint64_t>& shape) {
    std::string s = "(";
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) s += ',';
        s += std::to_string(shape[i]);
    }
    if (shape.size() == 1) s += ',';
    return s + ")";
}

// Shape as "3x4", "3" or "scalar".
std::string shape_dims(const std::vector<std::uint64_t>& shape) {
    if (shape.empty()) return "scalar";
    std::string s;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (i > 0) s += 'x';
        s += std::to_string(shape[i]);
    }
    return s;
}

// Printable, single-line, length-limited rendering of header text for error messages.
std::string header_snippet(const std::string& text) {
    constexpr std::size_t kMaxShown = 100;
    std::size_t end = text.size();
    while (end > 0 && (text[end - 1] == ' ' || text[end - 1] == '\n'))
        --end;
    std::string out = "\"";
    for (std::size_t i = 0; i < end && i < kMaxShown; ++i) {
        const auto c = static_cast<unsigned char>(text[i]);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += static_cast<char>(c);
        } else if (c >= 0x20 && c < 0x7f) {
            out += static_cast<char>(c);
        } else {
            static const char kHex[] = "0123456789abcdef";
            out += "\\x";
            out += kHex[c >> 4];
            out += kHex[c & 0xf];
        }
    }
    if (end > kMaxShown) out += "...";
    return out + "\"";
}

// ---------------------------------------------------------------------------------------------------------------
// Header dict parser: accepts the subset of Python literal syntax that numpy writes (and a little more:
// double quotes, arbitrary whitespace, optional trailing comma, Python 2 'L' suffixes on integers).

struct header_fields {
    std::string descr;
    bool fortran_order = false;
    std::vector<std::uint64_t> shape;
};

class header_parser {
public:
    header_parser(const std::string& path, const std::string& text) : path_(path), text_(text) {}

    header_fields parse() {
        header_fields out;
        bool have_descr = false;
        bool have_fortran = false;
        bool have_shape = false;

        skip_ws();
        expect('{', "at the start of the header dict");
        skip_ws();
        bool closed = consume('}');
        while (!closed) {
            const std::size_t key_pos = pos_;
            const std::string key = parse_string("a quoted key");
            skip_ws();
            expect(':', "after key '" + key + "'");
            skip_ws();
            if (key == "descr") {
                if (have_descr) error_at(key_pos, "duplicate key 'descr'");
                if (peek() == '[') error("structured dtypes are not supported");
                out.descr = parse_string("a quoted dtype string for 'descr'");
                have_descr = true;
            } else if (key == "fortran_order") {
                if (have_fortran) error_at(key_pos, "duplicate key 'fortran_order'");
                out.fortran_order = parse_bool();
                have_fortran = true;
            } else if (key == "shape") {
                if (have_shape) error_at(key_pos, "duplicate key 'shape'");
                out.shape = parse_shape();
                have_shape = true;
            } else {
                error_at(key_pos, "unexpected key '" + key + "'");
            }
            skip_ws();
            if (consume(',')) {
                skip_ws();
                closed = consume('}');
            } else if (consume('}')) {
                closed = true;
            } else {
                error("expected ',' or '}' after the value of '" + key + "'");
            }
        }
        skip_ws();
        if (pos_ != text_.size()) error("unexpected text after the closing '}'");

        if (!have_descr) fail(path_, "header is missing key 'descr': " + header_snippet(text_));
        if (!have_fortran) fail(path_, "header is missing key 'fortran_order': " + header_snippet(text_));
        if (!have_shape) fail(path_, "header is missing key 'shape': " + header_snippet(text_));
        return out;
    }

private:
    [[noreturn]] void error_at(std::size_t pos, const std::string& what) const {
        fail(path_, "malformed header at offset " + std::to_string(pos) + ": " + what + "; header is " +
                        header_snippet(text_));
    }
    [[noreturn]] void error(const std::string& what) const { error_at(pos_, what); }

    char peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }

    void skip_ws() {
        while (pos_ < text_.size() &&
               (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
            ++pos_;
        }
    }

    bool consume(char c) {
        if (pos_ < text_.size() && text_[pos_] == c) {
            ++pos_;
            return true;
        }
        return false;
    }

    void expect(char c, const std::string& context) {
        if (!consume(c)) error(std::string("expected '") + c + "' " + context);
    }

    std::string parse_string(const std::string& what) {
        const char quote = peek();
        if (quote != '\'' && quote != '"') error("expected " + what);
        ++pos_;
        std::string s;
        while (pos_ < text_.size() && text_[pos_] != quote) {
            if (text_[pos_] == '\\') error("escape sequences in strings are not supported");
            if (text_[pos_] == '\n') break;
            s += text_[pos_++];
        }
        if (!consume(quote)) error("unterminated string");
        return s;
    }

    bool is_identifier_char(char c) const {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    }

    bool consume_word(const std::string& word) {
        if (text_.compare(pos_, word.size(), word) != 0) return false;
        const std::size_t after = pos_ + word.size();
        if (after < text_.size() && is_identifier_char(text_[after])) return false;
        pos_ = after;
        return true;
    }

    bool parse_bool() {
        if (consume_word("True")) return true;
        if (consume_word("False")) return false;
        error("expected True or False for 'fortran_order'");
    }

    std::uint64_t parse_dim() {
        if (peek() == '-') error("negative dimension in 'shape'");
        const std::size_t begin = pos_;
        std::uint64_t value = 0;
        while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
            const auto digit = static_cast<std::uint64_t>(text_[pos_] - '0');
            if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) {
                error_at(begin, "dimension in 'shape' does not fit in 64 bits");
            }
            value = value * 10 + digit;
            ++pos_;
        }
        if (pos_ == begin) error("expected a non-negative integer in 'shape'");
        if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long literal
        if (is_identifier_char(peek())) error("expected a non-negative integer in 'shape'");
        return value;
    }

    std::vector<std::uint64_t> parse_shape() {
        const std::size_t begin = pos_;
        expect('(', "to start the 'shape' tuple");
        std::vector<std::uint64_t> dims;
        skip_ws();
        if (consume(')')) return dims;
        for (;;) {
            if (dims.size() >= kMaxDims) {
                error("'shape' has more than " + std::to_string(kMaxDims) + " dimensions");
            }
            dims.push_back(parse_dim());
            skip_ws();
            if (consume(',')) {
                skip_ws();
                if (consume(')')) break;
            } else if (consume(')')) {
                if (dims.size() == 1) error_at(begin, "'shape' is a parenthesised integer, not a tuple");
                break;
            } else {
                error("expected ',' or ')' in 'shape'");
            }
        }
        return dims;
    }

    const std::string& path_;
    const std::string& text_;
    std::size_t pos_ = 0;
};

// ---------------------------------------------------------------------------------------------------------------
// Reading

struct header_info {
    std::string descr;
    dtype_info dtype;
    std::vector<std::uint64_t> shape;
    std::uint64_t data_bytes = 0;
};

using header_check = std::function<void(const header_info&)>;

std::uint64_t read_le(const unsigned char* p, std::size_t n) {
    std::uint64_t v = 0;
    for (std::size_t i = n; i > 0; --i)
        v = (v << 8) | p[i - 1];
    return v;
}

// Where the bytes of a .npy image come from: a file (opened so that it can never block) or memory.
class byte_source {
public:
    virtual ~byte_source() = default;
    virtual std::uint64_t size() const = 0;
    // Reads exactly n bytes at the current position; false on a short read or an error.
    virtual bool read(void* dst, std::size_t n) = 0;
};

class memory_source : public byte_source {
public:
    memory_source(const void* data, std::size_t size)
        : m_data(static_cast<const unsigned char*>(data)), m_size(size) {}
    std::uint64_t size() const override { return m_size; }
    bool read(void* dst, std::size_t n) override {
        if (n > m_size - m_pos) return false;
        if (n > 0) std::memcpy(dst, m_data + m_pos, n);
        m_pos += n;
        return true;
    }

private:
    const unsigned char* m_data;
    std::size_t m_size;
    std::size_t m_pos = 0;
};

// A regular file only, opened as every input is (io/input_file.h): a FIFO, device, socket or
// directory is refused without blocking, and a /proc file, whose size is unknown, too.
class file_source : public byte_source {
public:
    explicit file_source(const std::string& path) try : m_file(path) {
        m_size = m_file.known_size();
    } catch (const io_error& e) {
        throw npy_error(e.what());
    }
    std::uint64_t size() const override { return m_size; }
    bool read(void* dst, std::size_t n) override { return m_file.read(dst, n); }

private:
    input_file m_file;
    std::uint64_t m_size = 0;
};

// Reads and validates a whole .npy image. `check` (optional) sees the parsed header before any data is
// read and may throw to reject the file. With header_only, the data is not read (its length is checked).
// Bytes after the data are ignored, as numpy.load ignores them.
npy_array load(const std::string& path, byte_source& in, const header_check& check,
               bool header_only = false) {
    const std::uint64_t file_size = in.size();

    unsigned char pre[kPreambleFixed + 4] = {};
    const std::size_t magic_avail = file_size < kMagicLen ? static_cast<std::size_t>(file_size) : kMagicLen;
    if (!in.read(pre, magic_avail)) fail(path, "read error in the preamble");
    if (file_size == 0) fail(path, "not a .npy file (the file is empty)");
    if (std::memcmp(pre, kMagic, magic_avail) != 0) fail(path, "not a .npy file (bad magic)");
    if (file_size < kPreambleFixed) {
        fail(path, "truncated: the file ends inside the preamble (" + std::to_string(file_size) + " bytes)");
    }
    const bool version_read = in.read(pre + kMagicLen, 2);
    const unsigned major = pre[6];
    const unsigned minor = pre[7];
    if (!version_read || minor != 0 || major < 1 || major > 3) {
        fail(path, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                       " (supported: 1.0, 2.0, 3.0)");
    }

    const std::size_t len_bytes = major == 1 ? 2 : 4;
    if (file_size < kPreambleFixed + len_bytes) {
        fail(path, "truncated: the file ends inside the preamble (" + std::to_string(file_size) + " bytes)");
    }
    if (!in.read(pre + kPreambleFixed, len_bytes)) fail(path, "read error in the preamble");
    const std::uint64_t header_len = read_le(pre + kPreambleFixed, len_bytes);
    const std::uint64_t data_offset = kPreambleFixed + len_bytes + header_len;
    if (data_offset > file_size) {
        fail(path, "truncated: header length " + std::to_string(header_len) +
                       " runs past the end of the file (" +
                       std::to_string(file_size - kPreambleFixed - len_bytes) + " bytes after the preamble)");
    }
    if (header_len > kMaxHeaderLen) {
        fail(path, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                       std::to_string(kMaxHeaderLen) + " bytes");
    }

    std::string text(static_cast<std::size_t>(header_len), '\0');
    if (header_len > 0 && !in.read(&text[0], static_cast<std::size_t>(header_len))) {
        fail(path, "read error in the header");
    }
    header_fields fields = header_parser(path, text).parse();

    header_info info;
    info.descr = fields.descr;
    info.shape = fields.shape;
    const std::optional<dtype_info> dtype = parse_descr(fields.descr);
    if (!dtype) {
        if (fields.descr == "O" || fields.descr == "|O") {
            fail(path, "dtype '" + fields.descr + "' (Python objects) is not supported");
        }
        fail(path, "dtype '" + fields.descr + "' is not supported");
    }
    info.dtype = *dtype;
    if (fields.fortran_order) fail(path, "Fortran-order arrays are not supported, save with C order");

    std::uint64_t count = 1;
    bool has_zero = false;
    for (const std::uint64_t d : info.shape)
        has_zero = has_zero || d == 0;
    if (has_zero) {
        count = 0;
    } else {
        for (const std::uint64_t d : info.shape) {
            if (count > std::numeric_limits<std::uint64_t>::max() / d) {
                fail(path, "shape " + shape_tuple(info.shape) + " has more elements than fit in 64 bits");
            }
            count *= d;
        }
    }
    if (count > kMaxDataBytes / info.dtype.itemsize) {
        fail(path, "shape " + shape_tuple(info.shape) + " of " + dtype_name(info.dtype, info.descr) +
                       " exceeds the 1 TiB data size limit");
    }
    info.data_bytes = count * info.dtype.itemsize;

    if (check) check(info);

    const std::uint64_t held = file_size - data_offset;
    if (held < info.data_bytes) {
        fail(path, "truncated: header says " + shape_dims(info.shape) + " " +
                       dtype_name(info.dtype, info.descr) + " (" + std::to_string(info.data_bytes) +
                       " bytes of data) but the file holds " + std::to_string(held));
    }

    npy_array out;
    out.descr = info.descr;
    out.shape = info.shape;
    if (header_only) return out;
    try {
        out.data.resize(static_cast<std::size_t>(info.data_bytes));
    } catch (const std::bad_alloc&) {
        fail(path, "out of memory reading " + std::to_string(info.data_bytes) + " bytes of data");
    }
    if (!out.data.empty() && !in.read(out.data.data(), out.data.size())) {
        fail(path, "read error in the data (the file may have changed while being read)");
    }
    return out;
}

// ---------------------------------------------------------------------------------------------------------------
// Writing

// Header bytes (magic through the terminating '\n') exactly as numpy.save writes them for a 2-D C-order
// array.
std::string make_header(const std::string& descr, std::uint64_t rows, std::uint64_t cols) {
    std::string dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" +
                       std::to_string(rows) + ", " + std::to_string(cols) + "), }";
    // numpy leaves room for the first axis to grow in place.
    const std::size_t axis_digits = std::to_string(rows).size();
    if (axis_digits < kGrowthAxisMaxDigits) dict.append(kGrowthAxisMaxDigits - axis_digits, ' ');

    const std::size_t preamble = kPreambleFixed + 2;
    const std::size_t hlen = dict.size() + 1;  // + '\n'
    const std::size_t pad = kArrayAlign - (preamble + hlen) % kArrayAlign;
    const std::size_t total_len = hlen + pad;

    std::string out(kMagic, kMagicLen);
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(total_len & 0xff);
    out += static_cast<char>((total_len >> 8) & 0xff);
    out += dict;
    out.append(pad, ' ');
    out += '\n';
    return out;
}

}  // namespace

npy_array read_npy(const std::string& path) {
    file_source in(path);
    return load(path, in, nullptr);
}

npy_array parse_npy(const void* data, std::size_t size, const std::string& name) {
    memory_source in(data, size);
    return load(name, in, nullptr);
}

namespace {

// The header checks read_matrix applies: the expected little-endian dtype, 2-D, no zero dimension.
header_check matrix_check(const std::string& path, const std::string& expected_descr,
                          const std::string& what) {
    const std::optional<dtype_info> expected = parse_descr(expected_descr);
    if (!expected || expected->order == '>') {
        fail(path, "cannot read as '" + expected_descr + "': not a supported little-endian dtype");
    }
    const std::string want = what + " ('" + expected_descr + "')";
    return [path, want, expected](const header_info& h) {
        if (h.dtype.order == '>') {
            fail(path, "dtype '" + h.descr + "' is big-endian, which is not supported; expected " + want +
                           ", save with a little-endian dtype");
        }
        if (canonical_descr(h.dtype) != canonical_descr(*expected)) {
            fail(path, "dtype '" + h.descr + "' is not supported, expected " + want);
        }
        if (h.shape.size() != 2) fail(path, "expected a 2-D array, got shape " + shape_tuple(h.shape));
        if (h.shape[0] == 0 || h.shape[1] == 0) {
            fail(path, "shape " + shape_tuple(h.shape) + " has a zero dimension");
        }
    };
}

}  // namespace

npy_array read_matrix(const std::string& path, const std::string& expected_descr, const std::string& what) {
    file_source in(path);
    return load(path, in, matrix_check(path, expected_descr, what));
}

npy_array read_matrix_header(const std::string& path, const std::string& expected_descr,
                             const std::string& what) {
    file_source in(path);
    return load(path, in, matrix_check(path, expected_descr, what), true);
}

npy_array parse_matrix(const void* data, std::size_t size, const std::string& name,
                       const std::string& expected_descr, const std::string& what) {
    memory_source in(data, size);
    return load(name, in, matrix_check(name, expected_descr, what));
}

std::string npy_header(const std::string& path, const std::string& descr, std::uint64_t rows,
                       std::uint64_t cols) {
    const std::optional<dtype_info> dtype = parse_descr(descr);
    if (!dtype) fail(path, "cannot write dtype '" + descr + "': not a supported dtype");
    return make_header(canonical_descr(*dtype), rows, cols);
}

void write_npy(const std::string& path, const std::string& descr, std::uint64_t rows, std::uint64_t cols,
               const void* data, std::size_t bytes) {
    const std::optional<dtype_info> dtype = parse_descr(descr);
    if (!dtype) fail(path, "cannot write dtype '" + descr + "': not a supported dtype");

    const std::uint64_t itemsize = dtype->itemsize;
    const std::string name =
        std::to_string(rows) + "x" + std::to_string(cols) + " " + dtype_name(*dtype, descr);
    if (cols != 0 && rows > std::numeric_limits<std::uint64_t>::max() / cols / itemsize) {
        fail(path, "cannot write a " + name + " array: its size does not fit in 64 bits");
    }
    const std::uint64_t needed = rows * cols * itemsize;
    if (needed != bytes) {
        fail(path, "cannot write a " + name + " array: it needs " + std::to_string(needed) +
                       " bytes of data but " + std::to_string(bytes) + " were given");
    }
    if (bytes > 0 && data == nullptr) fail(path, "cannot write: data pointer is null");

    const std::string header = make_header(canonical_descr(*dtype), rows, cols);

    try {
        write_file({"", path}, {header, std::string_view(static_cast<const char*>(data), bytes)});
    } catch (const io_error& e) {
        throw npy_error(e.what());
    }
}

}  // namespace systolic::io
