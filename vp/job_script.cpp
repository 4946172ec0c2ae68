#include "job_script.h"

#include <systolic/accelerator_regs.h>

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iomanip>
#include <limits>
#include <sstream>

#include "cli_values.h"
#include "io/text.h"
#include "systolic/accelerator_map.h"
#include "systolic/counting.h"
#include "systolic/verify/problem.h"

namespace systolic::vp {

namespace {

using wide = address_range::wide;

// What each verb takes: its positional words, and whether key=value words are options.
struct verb_rule {
    vp::verb verb;
    std::size_t min_args, max_args;
    bool takes_keys;
};

// clang-format off
constexpr verb_rule verb_rules[] = {
    {verb::job, 1, 1, true},
    {verb::write, 2, 2, false},
    {verb::read, 1, 3, false},        // read REG [== VALUE]
    {verb::poll, 3, 4, false},        // poll REG MASK VALUE [TIMEOUT]
    {verb::wait_irq, 0, 1, false},
    {verb::delay, 1, 1, false},
    {verb::mem, 3, 3, false},         // mem ADDR TYPE v1,v2,...
    {verb::expect_mem, 3, 3, false},  // expect-mem ADDR TYPE v1,v2,...
    {verb::print, 1, 1, false},
};
// clang-format on

// One rule per verb, in verb_names' order, so that a verb's rule is its index.
constexpr bool rules_in_order() {
    if (std::size(verb_rules) != std::size(verb_names)) return false;
    for (std::size_t i = 0; i < std::size(verb_rules); ++i)
        if (static_cast<std::size_t>(verb_rules[i].verb) != i) return false;
    return true;
}
static_assert(rules_in_order());

// The element types of mem and expect-mem.
struct mem_type {
    const char* name;
    unsigned bytes;
    bool is_float;
};
const mem_type mem_types[] = {
    {"int8", 1, false}, {"int32", 4, false}, {"int64", 8, false}, {"fp32", 4, true}};

const regmap::reg* reg_named(std::string_view name) {
    for (const auto& r : regmap::registers)
        if (name == r.name) return &r;
    return nullptr;
}

const regmap::reg* reg_at(std::uint32_t offset) {
    for (const auto& r : regmap::registers)
        if (r.offset == offset) return &r;
    return nullptr;
}

const regmap::value_set& value_set_of(const char* reg_name) {
    for (const auto& set : regmap::value_sets)
        if (std::string_view(set.used_by) == reg_name) return set;
    throw std::logic_error(std::string("no value set for ") + reg_name);
}

// A register value's name as a job option writes it: lower case, '-' for '_' (nearest-even).
std::string option_spelling(const char* name) {
    std::string s;
    for (const char* c = name; *c; ++c)
        s += *c == '_' ? '-' : char(std::tolower(static_cast<unsigned char>(*c)));
    return s;
}

std::string choices_of(const regmap::value_set& set) {
    std::string s;
    for (const auto& v : set.values)
        s += (s.empty() ? "" : ", ") + option_spelling(v.name);
    return s;
}

std::optional<std::uint64_t> parse_in(std::string_view s, std::uint64_t max) {
    const auto v = parse_number(s);
    if (!v || *v > max) return std::nullopt;
    return v;
}

// A signed number in [-2^(bits-1), 2^bits - 1]: its low `bits` bits, two's complement.
std::optional<std::uint64_t> parse_word(std::string_view s, unsigned bits) {
    const auto v = parse_number(s, true);
    if (!v) return std::nullopt;
    const std::uint64_t max = bits == 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << bits) - 1;
    if (s[0] == '-') {
        const std::uint64_t magnitude = std::uint64_t{0} - *v;
        if (magnitude > (std::uint64_t{1} << (bits - 1))) return std::nullopt;
        return *v & max;
    }
    if (*v > max) return std::nullopt;
    return v;
}

// A finite float, the whole word (strtof in the C locale, which every process starts with).
std::optional<float> parse_float(std::string_view s) {
    const std::string text(s);
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0]))) return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const float f = std::strtof(text.c_str(), &end);
    if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(f)) return std::nullopt;
    return f;
}

// How a job option's text is read into the job, by `read`: a name of one of the model's enums that
// has a code in one of the register map's value sets (DTYPE, ORDER, ...; `value_set` names the
// register, for the message), or other values. `fallback` is read as if it were given (nullptr:
// the option has no default).
struct job_key {
    const char* name;
    const char* fallback;
    const char* value_set = nullptr;  // the register whose named values the key takes
    bool (*read)(job_spec&, std::string_view) = nullptr;
    const char* choices = nullptr;  // what `read` accepts, when not a value set's names
};

// The field a choice sets: a function, since most live in the job's run_options.
template <auto field, const auto& set, const auto& table>
bool read_choice(job_spec& j, std::string_view s) {
    const auto v = parse_name(table, s);
    if (!v || !regmap::code_for(set, table, *v)) return false;
    field(j) = *v;
    return true;
}

systolic::dtype& dtype_of(job_spec& j) {
    return j.dtype;
}
systolic::k_policy& policy_of(job_spec& j) {
    return j.run.policy;
}
tile_order& order_of(job_spec& j) {
    return j.run.order;
}
overflow_mode& overflow_of(job_spec& j) {
    return j.run.overflow;
}
rounding_mode& rounding_of(job_spec& j) {
    return j.run.quant.rounding;
}
dataflow_kind& dataflow_of(job_spec& j) {
    return j.run.dataflow;
}

// out=acc or out=int8: OUT_DTYPE's names.
bool read_out(job_spec& j, std::string_view s) {
    const auto v = parse_name(output_dtype_names, s);
    if (!v || !regmap::code_for(regmap::out_dtype_values, output_dtype_names, *v)) return false;
    j.run.quant.enabled = *v == output_dtype::int8;
    return true;
}

bool read_k_tile(job_spec& j, std::string_view s) {
    const auto v = parse_in(s, 0xffffffffu);  // K_TILE is 32 bits
    if (v) j.run.k_tile = *v;
    return bool(v);
}

template <std::uint32_t job_spec::*field>
bool read_u32(job_spec& j, std::string_view s) {
    const auto v = parse_in(s, 0xffffffffu);
    if (v) j.*field = std::uint32_t(*v);
    return bool(v);
}

template <std::uint64_t job_spec::*field>
bool read_dim(job_spec& j, std::string_view s) {
    const auto v = parse_in(s, 0xffffffffu);
    if (v) j.*field = *v;
    return bool(v);
}

bool read_seed(job_spec& j, std::string_view s) {
    const auto v = parse_number(s);
    if (v) j.seed = *v;
    return bool(v);
}

bool read_data(job_spec& j, std::string_view s) {
    j.seed_data = s == "seed";
    return s == "seed" || s == "random";
}

bool read_scale(job_spec& j, std::string_view s) {
    const auto v = parse_float(s);  // SCALE is binary32
    if (v) j.run.quant.scale = *v;
    return bool(v);
}

std::optional<std::int32_t> parse_int32(std::string_view s) {
    const auto v = parse_word(s, 32);
    if (!v || (s[0] != '-' && *v > 0x7fffffff)) return std::nullopt;
    return std::int32_t(std::uint32_t(*v));
}

bool read_zero_point(job_spec& j, std::string_view s) {
    const auto v = parse_int32(s);
    if (v) j.run.quant.zero_point = *v;
    return bool(v);
}

// A comma-separated list, each value read by `one`; false when one is not.
template <class T, class Parse>
bool read_list(std::vector<T>& out, std::string_view s, Parse one) {
    out.clear();
    for (std::size_t start = 0;;) {
        const std::size_t comma = s.find(',', start);
        const auto v = one(s.substr(start, comma == std::string_view::npos ? comma : comma - start));
        if (!v) return false;
        out.push_back(*v);
        if (comma == std::string_view::npos) return true;
        start = comma + 1;
    }
}

// scales=: the vector holds float64, but a finite float is what every other scale takes.
bool read_scales(job_spec& j, std::string_view s) {
    return read_list(j.scales, s, [](std::string_view v) -> std::optional<double> { return parse_float(v); });
}

bool read_zero_points(job_spec& j, std::string_view s) {
    return read_list(j.zero_points, s, parse_int32);
}

bool read_wait(job_spec& j, std::string_view s) {
    j.use_irq = s == "irq";
    return s == "irq" || s == "poll";
}

bool read_timeout(job_spec& j, std::string_view s) {
    j.timeout_ps = cli::parse_time(s);
    return j.timeout_ps.has_value();
}

bool read_expect(job_spec& j, std::string_view s) {
    if (s == "ok") {
        j.expected = job_outcome{};
        return true;
    }
    const std::string_view name = s.substr(0, 4) == "ERR_" ? s.substr(4) : s;
    for (const auto& v : regmap::error_values)
        if (name == v.name && v.code != SYSTOLIC_ERR_NONE) {
            j.expected = job_outcome{v.code};
            return true;
        }
    return false;
}

bool placed_later(job_spec&, std::string_view) {
    return true;
}

constexpr const char* k_u32 = "0 to 2^32 - 1";

const job_key job_keys[] = {
    {"dtype", "int32", "DTYPE", read_choice<dtype_of, regmap::dtype_values, dtype_names>},
    {"data", "random", nullptr, read_data, "random, seed"},
    {"m", nullptr, nullptr, read_dim<&job_spec::m>, k_u32},
    {"k", nullptr, nullptr, read_dim<&job_spec::k>, k_u32},
    {"p", nullptr, nullptr, read_dim<&job_spec::p>, k_u32},
    {"seed", nullptr, nullptr, read_seed, "0 to 2^64 - 1"},
    {"k_tile", "0", nullptr, read_k_tile, k_u32},
    {"policy", "preserve", "K_POLICY", read_choice<policy_of, regmap::k_policy_values, k_policy_names>},
    {"order", "row", "ORDER", read_choice<order_of, regmap::order_values, tile_order_names>},
    {"overflow", "wrap", "OVERFLOW", read_choice<overflow_of, regmap::overflow_values, overflow_mode_names>},
    {"dataflow", "os", "DATAFLOW", read_choice<dataflow_of, regmap::dataflow_values, dataflow_kind_names>},
    {"out", "acc", "OUT_DTYPE", read_out},
    {"rounding", "nearest-even", "ROUNDING",
     read_choice<rounding_of, regmap::rounding_values, rounding_mode_names>},
    {"scale", "1", nullptr, read_scale, "a finite float"},
    {"zero_point", "0", nullptr, read_zero_point, "-2^31 to 2^31 - 1"},
    {"scales", nullptr, nullptr, read_scales, "P finite floats separated by commas"},
    {"zero_points", nullptr, nullptr, read_zero_points,
     "P numbers from -2^31 to 2^31 - 1 separated by commas"},
    {"a_stride", "0", nullptr, read_u32<&job_spec::a_stride>, k_u32},
    {"b_stride", "0", nullptr, read_u32<&job_spec::b_stride>, k_u32},
    {"c_stride", "0", nullptr, read_u32<&job_spec::c_stride>, k_u32},
    {"wait", "irq", nullptr, read_wait, "irq, poll"},
    {"timeout", nullptr, nullptr, read_timeout, "a time with its unit, e.g. 10ms"},
    {"expect", "ok", nullptr, read_expect, "ok, or an ERROR name such as OVERLAP or ERR_OVERLAP"},
    // Read by the layout, which knows where a, b and c are.
    {"a_addr", nullptr, nullptr, placed_later},
    {"b_addr", nullptr, nullptr, placed_later},
    {"c_addr", nullptr, nullptr, placed_later},
};

const job_key* job_key_named(std::string_view name) {
    for (const auto& k : job_keys)
        if (name == k.name) return &k;
    return nullptr;
}

std::string hex(wide v) {
    std::ostringstream os;
    os << "0x" << std::hex;
    if (v >> 64) os << std::uint64_t(v >> 64) << std::setw(16) << std::setfill('0');
    os << std::uint64_t(v);
    return os.str();
}

bool inside(const ram_window& ram, wide begin, wide end) {
    return begin >= ram.base && end <= wide{ram.base} + ram.size && begin <= end;
}

class line_parser {
public:
    line_parser(const std::string& name, int line, const std::string& text)
        : m_name(name), m_line(line), m_text(text) {}

    [[noreturn]] void fail(const std::string& what) const {
        throw script_error(m_name + ":" + std::to_string(m_line) + ": " + what + " in '" + m_text + "'");
    }

    void job(command& c, const ram_window& ram) const {
        job_spec& j = c.job;
        // The name is printed and names the job's --c-out file.
        if (io::printable(c.args[0]) != c.args[0])
            fail("the job name '" + io::printable(c.args[0]) + "' holds control characters");
        for (const auto& [key, value] : c.keys)
            if (!job_key_named(key)) fail("unknown option '" + io::printable(key) + "'");
        for (const auto& k : job_keys) {
            const auto given = c.keys.find(k.name);
            if (given == c.keys.end() && !k.fallback) continue;
            const std::string_view text =
                given == c.keys.end() ? std::string_view(k.fallback) : given->second;
            if (!k.read(j, text))
                fail(std::string("bad ") + k.name + " '" + io::printable(text) + "' (" +
                     (k.value_set ? choices_of(value_set_of(k.value_set)) : std::string(k.choices)) + ")");
        }
        if (j.seed_data) {
            for (const char* key : {"m", "k", "p", "seed"})
                if (c.keys.count(key))
                    fail(std::string("data=seed is the seeds' 3x3 example: ") + key +
                         " goes with data=random");
            const problem_shape s = verify::seed_example<int32_format>().shape;
            j.m = s.m;
            j.k = s.k;
            j.p = s.p;
        } else if (!c.keys.count("m") || !c.keys.count("k") || !c.keys.count("p")) {
            fail("a job with random data needs m, k and p");
        }
        columns(c);
        lay_out(c, ram);
    }

    // Per-column requantization, as systolic-tb's --scale-file and --zero-point-file give it: P
    // values each, one scale rule and one zero-point rule per job, int8 output.
    void columns(command& c) const {
        job_spec& j = c.job;
        const bool scales = c.keys.count("scales") > 0, zero_points = c.keys.count("zero_points") > 0;
        if (!scales && !zero_points) return;
        if (scales && c.keys.count("scale"))
            fail("scales and scale exclude each other: one scale per column, or one for all");
        if (zero_points && c.keys.count("zero_point"))
            fail("zero_points and zero_point exclude each other: one zero point per column, or one for all");
        if (!j.run.quant.enabled) fail("scales and zero_points need out=int8: they requantize C's columns");
        for (const auto& [key, n] : {std::pair<const char*, std::size_t>{"scales", j.scales.size()},
                                     {"zero_points", j.zero_points.size()}})
            if (c.keys.count(key) && n != j.p)
                fail(std::string(key) + " has " + std::to_string(n) +
                     " values, one per column of C needs P = " + std::to_string(j.p));
        // Zero points per column and one scale for all: the tensor's scale for every column.
        if (!scales) j.scales.assign(j.p, j.run.quant.scale);
        j.run.quant.columns = column_vectors{0, zero_points};  // its base: lay_out
    }

    // A, B, C and the partial-sum buffer one after another from the RAM's base + 0x1000, each
    // 64-byte aligned with 64 bytes between, rows packed unless a stride is given; then the
    // addresses the script moves on purpose. Sums in 128 bits, so no size wraps.
    void lay_out(command& c, const ram_window& ram) const {
        job_spec& j = c.job;
        const auto [osz, asz] = with_format(j.dtype, [](auto f) {
            using F = decltype(f);
            return std::pair<std::uint64_t, std::uint64_t>(sizeof(typename F::operand_type),
                                                           sizeof(typename F::accumulator_type));
        });
        const std::uint64_t csz = output_size(j.run.quant, asz);
        const std::uint64_t a_row = j.a_stride ? j.a_stride : j.k * osz;
        const std::uint64_t b_row = j.b_stride ? j.b_stride : j.p * osz;
        const std::uint64_t c_row = j.c_stride ? j.c_stride : j.p * csz;
        const wide ram_end = wide{ram.base} + ram.size;
        // The operands and C as the CPU makes and checks them, packed whatever the strides say: a
        // stride below a row (a job expected to be refused) must not make them larger than RAM.
        const wide packed = (wide{j.m} * j.k + wide{j.k} * j.p) * osz + wide{j.m} * j.p * asz;
        if (packed > ram.size)
            fail("the job's matrices do not fit in RAM (" + std::to_string(ram.size >> 20) +
                 " MiB), even packed");
        wide next = wide{ram.base} + 0x1000;
        const auto alloc = [&](wide bytes) {
            const wide at = next;
            next = (next + bytes + 64 + 63) / 64 * 64;
            if (next > ram_end)
                fail("the job does not fit in RAM (" + std::to_string(ram.size >> 20) + " MiB from " +
                     hex(ram.base) + ")");
            return std::uint64_t(at);
        };
        job_layout& l = j.layout;
        l.a = make_layout(alloc(wide{j.m} * a_row), j.m, j.k, osz, a_row);
        l.b = make_layout(alloc(wide{j.k} * b_row), j.k, j.p, osz, b_row);
        l.c = make_layout(alloc(wide{j.m} * c_row), j.m, j.p, csz, c_row);
        if (j.run.policy == k_policy::partials && k_chunks(j.k, j.run.k_tile) > 1)
            l.partial = make_layout(alloc(wide{j.m} * j.p * asz), j.m, j.p, asz);
        // The per-column vectors (8-byte aligned, as SCALE_VEC_ADDR needs): P float64 scales, then
        // P int32 zero points when the job has them.
        if (j.run.quant.columns) j.run.quant.columns->base = alloc(j.run.quant.columns->bytes(j.p));
        l.scratch = std::uint64_t(next - ram.base);

        const std::uint64_t bases[] = {l.a.base, l.b.base, l.c.base};
        matrix_layout* const moved[] = {&l.a, &l.b, &l.c};
        const char* const keys[] = {"a_addr", "b_addr", "c_addr"};
        for (int i = 0; i < 3; ++i) {
            const auto given = c.keys.find(keys[i]);
            if (given == c.keys.end()) continue;
            const std::string_view text = given->second;
            std::optional<wide> at;
            if (!text.empty() && text[0] >= 'a' && text[0] <= 'c') {
                if (text.size() == 1) {
                    at = bases[text[0] - 'a'];
                } else if (text[1] == '+') {
                    if (const auto off = parse_number(text.substr(2))) at = wide{bases[text[0] - 'a']} + *off;
                }
            } else if (const auto v = parse_number(text)) {
                at = *v;
            }
            if (!at || *at >> 64)
                fail(std::string("bad ") + keys[i] + " '" + io::printable(text) +
                     "' (an address, or a, b or c with an optional +N, inside the address space)");
            moved[i]->base = std::uint64_t(*at);
        }
        // A job expected to complete must have its matrices in RAM; one expected to be refused may
        // point anywhere, and only what lies in RAM is loaded and compared.
        if (!j.expected.ok()) return;
        const std::pair<const char*, const matrix_layout*> named[] = {
            {"A", &l.a}, {"B", &l.b}, {"C", &l.c}, {"the partial-sum buffer", &l.partial}};
        for (const auto& [what, m] : named) {
            const address_range r = m->range();
            if (!r.empty() && !inside(ram, r.base, r.end))
                fail(std::string(what) + " at " + hex(r.base) + " (" +
                     std::to_string(std::uint64_t(r.end - r.base)) + " bytes) lies outside RAM (" +
                     hex(ram.base) + " to " + hex(ram_end) +
                     "); a job expected to complete needs its matrices in RAM");
        }
    }

    void memory(command& c, const ram_window& ram) const {
        const auto& a = c.args;
        const auto addr = parse_number(a[0]);
        if (!addr) fail("bad address '" + io::printable(a[0]) + "'");
        c.address = *addr;
        const mem_type* type = nullptr;
        for (const auto& t : mem_types)
            if (a[1] == t.name) type = &t;
        if (!type) fail("unknown element type '" + io::printable(a[1]) + "' (int8, int32, int64, fp32)");
        std::size_t start = 0;
        for (;;) {
            const std::size_t comma = a[2].find(',', start);
            const std::string v =
                a[2].substr(start, comma == std::string::npos ? std::string::npos : comma - start);
            std::uint64_t bits = 0;
            if (type->is_float) {
                const auto f = parse_float(v);
                if (!f)
                    fail("bad " + std::string(type->name) + " value '" + io::printable(v) +
                         "' (a finite float)");
                std::uint32_t u;
                std::memcpy(&u, &*f, 4);
                bits = u;
            } else {
                const auto n = parse_word(v, 8 * type->bytes);
                if (!n)
                    fail("bad " + std::string(type->name) + " value '" + io::printable(v) + "' (" +
                         std::to_string(8 * type->bytes) + "-bit, signed or unsigned)");
                bits = *n;
            }
            for (unsigned b = 0; b < type->bytes; ++b)
                c.bytes.push_back(std::uint8_t(bits >> (8 * b)));  // little-endian, as the RAM holds it
            if (comma == std::string::npos) break;
            start = comma + 1;
        }
        if (!inside(ram, *addr, wide{*addr} + c.bytes.size()))
            fail(std::to_string(c.bytes.size()) + " bytes at " + hex(*addr) + " lie outside RAM (" +
                 hex(ram.base) + " to " + hex(wide{ram.base} + ram.size) + ")");
    }

private:
    const std::string& m_name;
    int m_line;
    const std::string& m_text;
};

}  // namespace

std::vector<command> parse_script(std::string_view text, const std::string& name, const ram_window& ram) {
    if (const std::string bad = io::utf8_error(text, name); !bad.empty()) throw script_error(bad);
    std::vector<command> out;
    std::size_t pos = 0;
    for (int n = 1; pos < text.size(); ++n) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string line(text.substr(pos, end - pos));
        pos = end + 1;
        const std::string body = line.substr(0, line.find('#'));
        std::istringstream words(body);
        command c;
        c.line = n;
        c.text = io::printable(body.substr(0, body.find_last_not_of(" \t\r") + 1));
        std::string word;
        if (!(words >> word)) continue;
        const line_parser lp(name, n, c.text);
        const auto v = parse_name(verb_names, word);
        if (!v) lp.fail("unknown command '" + io::printable(word) + "'");
        c.verb = *v;
        const verb_rule* rule = &verb_rules[static_cast<std::size_t>(c.verb)];
        for (std::string w; words >> w;) {
            const auto eq = w.find('=');
            if (rule->takes_keys && eq != std::string::npos && eq > 0) {
                const std::string key = w.substr(0, eq);
                if (!c.keys.emplace(key, w.substr(eq + 1)).second)
                    lp.fail("option '" + io::printable(key) + "' given twice");
            } else {
                c.args.push_back(w);
            }
        }
        const auto& a = c.args;
        if (a.size() < rule->min_args || a.size() > rule->max_args) lp.fail("wrong number of arguments");
        if (c.verb == verb::read && a.size() != 1 && !(a.size() == 3 && a[1] == "=="))
            lp.fail("expected 'read REG' or 'read REG == VALUE'");
        if (c.verb == verb::write || c.verb == verb::read || c.verb == verb::poll || c.verb == verb::print) {
            const auto off = register_offset(a[0]);
            if (!off) lp.fail("unknown register '" + io::printable(a[0]) + "'");
            c.reg = *off;
        }
        const auto value = [&](const std::string& s) {
            const auto v = register_value(c.reg, s);
            if (!v) lp.fail("bad value '" + io::printable(s) + "'");
            return *v;
        };
        const auto time = [&](const std::string& s) {
            const auto t = cli::parse_time(s);
            if (!t)
                lp.fail("bad time '" + io::printable(s) +
                        "' (a whole number with ps, ns, us, ms or s, at most 2^64 - 1 ps)");
            return *t;
        };
        if (c.verb == verb::write) c.value = value(a[1]);
        if (c.verb == verb::read && a.size() == 3) c.value = value(a[2]);
        if (c.verb == verb::poll) {
            const auto mask = register_value(c.reg, a[1]), want = register_value(c.reg, a[2]);
            if (!mask || !want || (a.size() == 4 && !cli::parse_time(a[3])))
                lp.fail("bad mask, value or timeout");
            c.mask = *mask;
            c.value = *want;
            if (a.size() == 4) c.time_ps = cli::parse_time(a[3]);
        }
        if ((c.verb == verb::wait_irq && !a.empty()) || c.verb == verb::delay) c.time_ps = time(a[0]);
        if (c.verb == verb::mem || c.verb == verb::expect_mem) lp.memory(c, ram);
        if (c.verb == verb::job) {
            c.job = job_spec{};
            lp.job(c, ram);
        }
        out.push_back(std::move(c));
    }
    return out;
}

std::string job_outcome::name() const {
    if (ok()) return "ok";
    for (const auto& v : regmap::error_values)
        if (v.code == error) return std::string("ERR_") + v.name;
    return "ERR_" + std::to_string(error);
}

std::optional<std::uint64_t> parse_number(std::string_view s, bool allow_negative) {
    const bool neg = allow_negative && !s.empty() && s[0] == '-';
    if (neg) s.remove_prefix(1);
    const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
    if (hex) s.remove_prefix(2);
    if (s.empty()) return std::nullopt;
    const std::uint64_t base = hex ? 16 : 10;
    std::uint64_t v = 0;
    for (const char ch : s) {
        std::uint64_t d;
        if (ch >= '0' && ch <= '9')
            d = std::uint64_t(ch - '0');
        else if (hex && ch >= 'a' && ch <= 'f')
            d = std::uint64_t(ch - 'a' + 10);
        else if (hex && ch >= 'A' && ch <= 'F')
            d = std::uint64_t(ch - 'A' + 10);
        else
            return std::nullopt;
        if (v > (~std::uint64_t{0} - d) / base) return std::nullopt;  // v * base + d would pass 2^64 - 1
        v = v * base + d;
    }
    return neg ? std::uint64_t(0) - v : v;
}

std::optional<std::uint32_t> register_offset(std::string_view s) {
    if (const regmap::reg* r = reg_named(s)) return r->offset;
    if (const auto v = parse_number(s); v && *v < regmap::block_size && *v % 4 == 0) return std::uint32_t(*v);
    return std::nullopt;
}

std::optional<std::uint32_t> register_value(std::uint32_t offset, std::string_view s) {
    const regmap::reg* r = reg_at(offset);
    std::uint32_t v = 0;
    if (s.empty()) return std::nullopt;
    for (std::size_t start = 0;;) {
        const std::size_t bar = s.find('|', start);
        const std::string_view part = s.substr(start, bar == std::string_view::npos ? bar : bar - start);
        if (const auto n = parse_word(part, 32)) {
            v |= std::uint32_t(*n);
        } else {
            bool found = false;
            if (r) {
                for (const auto& f : r->fields)
                    if (part == f.name) {
                        v |= ((1u << f.width) - 1u) << f.shift;
                        found = true;
                    }
                for (const auto& set : regmap::value_sets)
                    if (std::string_view(set.used_by) == r->name)
                        for (const auto& val : set.values)
                            if (part == val.name) {
                                v |= val.code;
                                found = true;
                            }
            }
            if (!found) return std::nullopt;
        }
        if (bar == std::string_view::npos) break;
        start = bar + 1;
    }
    return v;
}

std::string value_name(std::uint32_t offset, std::uint32_t value) {
    if (const regmap::reg* r = reg_at(offset))
        for (const auto& set : regmap::value_sets)
            if (std::string_view(set.used_by) == r->name)
                for (const auto& val : set.values)
                    if (val.code == value) return std::string(set.prefix) + "_" + val.name;
    return std::to_string(value);
}

}  // namespace systolic::vp
