#include "topology.h"

#include "io/input_file.h"
#include "io/text.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace systolic::run {

std::string trim(std::string_view s) {
    std::size_t b = 0, e = s.size();
    while (b < e && std::isspace(static_cast<unsigned char>(s[b])))
        ++b;
    while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1])))
        --e;
    return std::string(s.substr(b, e - b));
}

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

namespace {

// SCALE-Sim's depth-wise rule: a convolution row whose name contains "DP" runs as one
// single-channel layer per channel, named <name>Channel_<c>.
bool depthwise_name(std::string_view name) {
    return name.find("DP") != std::string_view::npos;
}
constexpr std::string_view channel_tag = "Channel_";

constexpr const char* gemm_fields[] = {"Layer", "M", "N", "K"};
constexpr const char* conv_fields[] = {"Layer name",    "IFMAP Height", "IFMAP Width",
                                       "Filter Height", "Filter Width", "Channels",
                                       "Num Filter",    "Strides",      "Column stride"};

// A field as typed, shown on one line and not too long.
std::string quoted(const std::string& s) {
    std::string out = "'";
    for (unsigned char c : s.substr(0, 40)) {
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += char(c);
        }
    }
    return out + (s.size() > 40 ? "...'" : "'");
}

// The fields of one row; SCALE-Sim drops what follows the last comma, so a trailing empty field goes.
std::vector<std::string> split_row(const std::string& row) {
    std::vector<std::string> fields;
    std::size_t start = 0;
    for (;;) {
        const std::size_t comma = row.find(',', start);
        fields.push_back(trim(std::string_view(row).substr(
            start, comma == std::string::npos ? std::string::npos : comma - start)));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    if (fields.size() > 1 && fields.back().empty()) fields.pop_back();
    return fields;
}

class row_context {
public:
    row_context(const std::string& path, std::uint64_t line) : m_path(path), m_line(line) {}

    [[noreturn]] void fail(const std::string& field, std::size_t column, const std::string& what) const {
        std::ostringstream os;
        os << m_path << ":" << m_line << ": field '" << field << "' (column " << column + 1 << "): " << what;
        throw topology_error(os.str());
    }
    [[noreturn]] void fail_row(const std::string& what) const {
        throw topology_error(m_path + ":" + std::to_string(m_line) + ": " + what);
    }

    // A positive decimal integer, digits only, at most max_dimension.
    std::uint64_t number(const std::vector<std::string>& fields, std::size_t column, const char* name) const {
        const std::string& s = fields[column];
        if (s.empty()) fail(name, column, "is empty");
        std::uint64_t v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') fail(name, column, "expected a positive integer, got " + quoted(s));
            v = v * 10 + std::uint64_t(c - '0');
            if (v > max_dimension)
                fail(name, column, quoted(s) + " is larger than " + std::to_string(max_dimension));
        }
        if (v == 0) fail(name, column, "must be positive, got " + quoted(s));
        return v;
    }

private:
    const std::string& m_path;
    std::uint64_t m_line;
};

layer_kind header_kind(const std::vector<std::string>& fields, const std::string& path) {
    if (fields.size() == 4 && lower(fields[0]) == "layer" && lower(fields[1]) == "m" &&
        lower(fields[2]) == "n" && lower(fields[3]) == "k")
        return layer_kind::gemm;
    if ((fields.size() == 8 || fields.size() == 9) && lower(fields[1]) == "ifmap height")
        return layer_kind::conv;
    throw topology_error(path +
                         ":1: the header is neither SCALE-Sim's GEMM header (Layer, M, N, K,) nor its "
                         "convolution header (Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter "
                         "Width, Channels, Num Filter, Strides,)");
}

// Refuses a row that would take the topology past max_layers, before its layers are made.
void check_layer_count(const row_context& ctx, const topology& topo, std::uint64_t adding) {
    if (adding > max_layers - std::min<std::uint64_t>(max_layers, topo.layers.size()))
        ctx.fail_row("the topology would have more than " + std::to_string(max_layers) +
                     " layers (this row adds " + std::to_string(adding) +
                     (adding > 1 ? ", one per channel of a depth-wise layer" : "") + ", after " +
                     std::to_string(topo.layers.size()) + ")");
}

void check_product(const row_context& ctx, const std::vector<std::uint64_t>& factors, const char* what) {
    std::uint64_t v = 1;
    for (auto f : factors) {
        v *= f;  // each factor <= 2^31 and the running product <= 2^31: no overflow
        if (v > max_dimension)
            ctx.fail_row(std::string("the lowered GEMM's ") + what + " is larger than " +
                         std::to_string(max_dimension));
    }
}

}  // namespace

topology parse_topology(std::string_view text, const std::string& path) {
    topology topo;
    {
        const std::size_t slash = path.find_last_of('/');
        std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
        const std::size_t dot = base.find_last_of('.');
        topo.name = dot == std::string::npos || dot == 0 ? base : base.substr(0, dot);
    }
    if (text.find('\0') != std::string_view::npos)
        throw topology_error(path + ": not a text file (it holds NUL bytes)");
    if (const std::string bom = io::bom_error(text, path, "SCALE-Sim", "the first header name"); !bom.empty())
        throw topology_error(bom);
    if (const std::string bad = io::utf8_error(text, path); !bad.empty()) throw topology_error(bad);
    std::uint64_t line_no = 0;
    bool header_seen = false;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string row(text.substr(pos, end - pos));
        pos = end + 1;
        ++line_no;
        if (!row.empty() && row.back() == '\r') row.pop_back();
        if (trim(row).empty()) continue;
        const auto fields = split_row(row);
        if (!header_seen) {
            if (line_no != 1)
                throw topology_error(path + ":" + std::to_string(line_no) +
                                     ": the header must be the first line");
            topo.kind = header_kind(fields, path);
            header_seen = true;
            continue;
        }
        const row_context ctx(path, line_no);
        const bool gemm = topo.kind == layer_kind::gemm;
        const std::size_t want = gemm ? 4 : 8;
        if (fields.size() < want || fields.size() > (gemm ? 4 : 9)) {
            const std::size_t missing = std::min(fields.size(), want);
            if (fields.size() < want)
                ctx.fail(gemm ? gemm_fields[missing] : conv_fields[missing], missing,
                         "missing (the row has " + std::to_string(fields.size()) + " fields, " +
                             (gemm ? "a GEMM row has 4: Layer, M, N, K" : "a convolution row has 8") + ")");
            ctx.fail_row("too many fields (" + std::to_string(fields.size()) + "; " +
                         (gemm ? "a GEMM row has 4: Layer, M, N, K"
                               : "a convolution row has 8, or 9 with a column stride") +
                         ")");
        }
        if (fields[0].empty()) ctx.fail(gemm ? gemm_fields[0] : conv_fields[0], 0, "is empty");
        layer l;
        l.name = fields[0];
        l.line = line_no;
        l.kind = topo.kind;
        if (gemm) {
            l.gemm.m = ctx.number(fields, 1, "M");
            l.gemm.p = ctx.number(fields, 2, "N");
            l.gemm.k = ctx.number(fields, 3, "K");
            check_layer_count(ctx, topo, 1);
            l.id = topo.layers.size();
            topo.layers.push_back(l);
            continue;
        }
        conv_params& c = l.conv;
        c.ifmap_h = ctx.number(fields, 1, conv_fields[1]);
        c.ifmap_w = ctx.number(fields, 2, conv_fields[2]);
        c.filter_h = ctx.number(fields, 3, conv_fields[3]);
        c.filter_w = ctx.number(fields, 4, conv_fields[4]);
        c.channels = ctx.number(fields, 5, conv_fields[5]);
        c.filters = ctx.number(fields, 6, conv_fields[6]);
        c.stride_h = ctx.number(fields, 7, conv_fields[7]);
        c.stride_w = fields.size() == 9 ? ctx.number(fields, 8, conv_fields[8]) : c.stride_h;
        if (c.filter_h > c.ifmap_h)
            ctx.fail(conv_fields[3], 3,
                     "the filter (" + std::to_string(c.filter_h) + ") is taller than the IFMAP (" +
                         std::to_string(c.ifmap_h) + ")");
        if (c.filter_w > c.ifmap_w)
            ctx.fail(conv_fields[4], 4,
                     "the filter (" + std::to_string(c.filter_w) + ") is wider than the IFMAP (" +
                         std::to_string(c.ifmap_w) + ")");
        c.ofmap_h = conv_output_side(c.ifmap_h, c.filter_h, c.stride_h);
        c.ofmap_w = conv_output_side(c.ifmap_w, c.filter_w, c.stride_w);
        const bool depthwise = depthwise_name(l.name);
        const std::uint64_t copies = depthwise ? c.channels : 1;
        if (depthwise) c.channels = 1;
        check_product(ctx, {c.ofmap_h, c.ofmap_w}, "M (output pixels)");
        check_product(ctx, {c.filter_h, c.filter_w, c.channels}, "K (filter height x width x channels)");
        l.gemm = {c.ofmap_h * c.ofmap_w, c.filter_h * c.filter_w * c.channels, c.filters};
        check_layer_count(ctx, topo, copies);
        const std::string base = l.name;
        for (std::uint64_t i = 0; i < copies; ++i) {
            if (depthwise) l.name = base + std::string(channel_tag) + std::to_string(i);
            l.id = topo.layers.size();
            topo.layers.push_back(l);
        }
    }
    if (!header_seen) throw topology_error(path + ": empty file (expected a SCALE-Sim topology header)");
    if (topo.layers.empty()) throw topology_error(path + ": no layers after the header");
    return topo;
}

namespace {

// `name` without a last "<tag><digits>" (at least one digit), or empty when it does not end so.
std::string_view strip_numbered(std::string_view name, std::string_view tag) {
    std::size_t end = name.size();
    while (end > 0 && name[end - 1] >= '0' && name[end - 1] <= '9')
        --end;
    if (end == name.size() || end < tag.size() || name.substr(end - tag.size(), tag.size()) != tag) return {};
    return name.substr(0, end - tag.size());
}

}  // namespace

std::string layer_group(std::string_view name) {
    std::string_view group = name;
    // SCALE-Sim's depth-wise copies, as parse_topology makes them.
    if (const std::string_view base = strip_numbered(group, channel_tag);
        !base.empty() && depthwise_name(base))
        group = base;
    for (;;) {
        std::string_view base = strip_numbered(group, ".g");
        if (base.empty()) base = strip_numbered(group, ".b");
        if (base.empty()) break;
        group = base;
    }
    return std::string(group);
}

topology read_topology(const std::string& path) {
    try {
        return parse_topology(io::read_text_file(path), path);
    } catch (const io::io_error& e) {
        throw topology_error(e.what());
    }
}

}  // namespace systolic::run
