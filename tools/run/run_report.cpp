#include "run_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "io/input_file.h"
#include "io/job_json.h"
#include "io/text.h"
#include "run_options.h"
#include "scale_config.h"
#include "systolic/job.h"
#include "systolic/number_format.h"
#include "systolic/verify/fault.h"
#include "topology.h"

namespace systolic::run {

bool fold_group::operator<(const fold_group& o) const {
    return std::tie(edges, used_pes, macs_real, count) < std::tie(o.edges, o.used_pes, o.macs_real, o.count);
}
bool fold_group::operator==(const fold_group& o) const {
    return std::tie(edges, used_pes, macs_real, count) == std::tie(o.edges, o.used_pes, o.macs_real, o.count);
}

bool memory_settings::operator==(const memory_settings& o) const {
    return std::tie(config, buffers, interface_bandwidth, a_sram, b_sram, c_sram, dram_bandwidth) ==
           std::tie(o.config, o.buffers, o.interface_bandwidth, o.a_sram, o.b_sram, o.c_sram,
                    o.dram_bandwidth);
}

bool expect_record::operator==(const expect_record& o) const {
    return std::tie(result, checked, failures, max_abs_error, max_rel_error, errors) ==
           std::tie(o.result, o.checked, o.failures, o.max_abs_error, o.max_rel_error, o.errors);
}

std::string layer_record::array_name() const {
    return std::to_string(array_rows) + "x" + std::to_string(array_cols);
}

compute_figures compute_figures_of(const layer_record& r) {
    compute_figures f;
    const double pes = double(r.array_rows) * double(r.array_cols);
    f.stall_cycles = r.memory_use.stall_cycles;
    const std::uint64_t edges = r.preload_edges + r.advance_edges;
    f.total_cycles = edges ? edges - 1 + f.stall_cycles : 0;
    f.total_cycles_incl_prefetch = r.memory_use.total_cycles;
    if (f.total_cycles) f.overall_util = double(r.macs_real) * 100.0 / (double(f.total_cycles) * pes);
    std::uint64_t folds = 0;
    double mapping = 0, compute = 0;
    for (const auto& g : r.folds) {
        folds += g.count;
        mapping += double(g.count) * double(g.used_pes) / pes;
        if (g.edges) compute += double(g.count) * double(g.macs_real) / (pes * double(g.edges));
    }
    if (folds) {
        f.mapping_efficiency = mapping * 100.0 / double(folds);
        f.compute_util = compute * 100.0 / double(folds);
    }
    return f;
}

bandwidth_figures bandwidth_figures_of(const layer_record& r) {
    bandwidth_figures b;
    const compute_figures f = compute_figures_of(r);
    const memory_report& m = r.memory_use;
    auto per = [](std::uint64_t bytes, std::uint64_t word, std::uint64_t cycles) {
        return cycles && word ? double(bytes) / double(word) / double(cycles) : 0.0;
    };
    b.ifmap_sram = per(m.a.array, r.operand_bytes, f.total_cycles);
    b.filter_sram = per(m.b.array, r.operand_bytes, f.total_cycles);
    b.ofmap_sram = per(m.c.array, r.output_bytes, f.total_cycles);
    b.ifmap_dram = per(m.a.dram, r.operand_bytes, f.total_cycles_incl_prefetch);
    b.filter_dram = per(m.b.dram, r.operand_bytes, f.total_cycles_incl_prefetch);
    b.ofmap_dram = per(m.c.dram, r.output_bytes, f.total_cycles_incl_prefetch);
    return b;
}

namespace {

nlohmann::json stream_json(const stream_bytes& s) {
    return {{"dram", s.dram}, {"array", s.array}};
}

// A bandwidth; "inf" when none would do (stalls that come from latency, not bandwidth): JSON has
// no infinity, and null would read back as nothing.
nlohmann::json bandwidth_json(double v) {
    return std::isinf(v) ? nlohmann::json("inf") : nlohmann::json(v);
}

}  // namespace

nlohmann::json to_json(const layer_record& r) {
    nlohmann::json folds = nlohmann::json::array();
    for (const auto& g : r.folds)
        folds.push_back(
            {{"count", g.count}, {"edges", g.edges}, {"used_pes", g.used_pes}, {"macs_real", g.macs_real}});
    const auto& t = r.traffic;
    nlohmann::json j =
        io::job_json({r.m, r.k, r.p, r.advance_edges, r.macs_padded, r.macs_real, r.tiles, r.real_outputs,
                      r.masked_outputs, io::scoreboard_counts{r.checked, r.mismatches, r.scoreboard_errors}});
    j.update({{"topology", r.topology},
              {"layers_in_topology", r.layers_in_topology},
              {"sweep", r.sweep},
              {"dataflows", r.dataflows},
              {"layer_id", r.layer_id},
              {"layer", r.layer},
              {"kind", r.kind},
              {"conv", r.conv},
              {"array", r.array_name()},
              {"array_rows", r.array_rows},
              {"array_cols", r.array_cols},
              {"dataflow", r.dataflow},
              {"dtype", r.dtype},
              {"engine", r.engine},
              {"seed", r.seed},
              {"data", r.data},
              {"k_tile", r.k_tile},
              {"inject", r.inject},
              {"memory",
               {{"config", r.memory.config},
                {"buffers", r.memory.buffers},
                {"interface_bandwidth", r.memory.interface_bandwidth},
                {"a_sram", r.memory.a_sram},
                {"b_sram", r.memory.b_sram},
                {"c_sram", r.memory.c_sram},
                {"dram_bandwidth", r.memory.dram_bandwidth}}},
              {"operand_bytes", r.operand_bytes},
              {"output_bytes", r.output_bytes},
              {"status", r.status},
              {"error", r.error},
              {"pass", r.pass},
              {"expect",
               {{"result", r.expect.result},
                {"checked", r.expect.checked},
                {"failures", r.expect.failures},
                {"max_abs_error", r.expect.max_abs_error},
                {"max_rel_error", r.expect.max_rel_error},
                {"errors", r.expect.errors}}},
              {"preload_edges", r.preload_edges},
              {"overflows", r.overflows},
              {"folds", folds},
              {"clock_ps", r.clock_ps},
              {"time_ps",
               {{"sim", r.sim_time_ps},
                {"clear", r.clear_ps},
                {"load", r.load_ps},
                {"preload", r.preload_ps},
                {"advance", r.advance_ps},
                {"drain", r.drain_ps}}},
              {"traffic",
               {{"a_read_bytes", t.a_read_bytes},
                {"b_read_bytes", t.b_read_bytes},
                {"c_write_bytes", t.c_write_bytes},
                {"c_read_bytes", t.c_read_bytes},
                {"partial_read_bytes", t.partial_read_bytes},
                {"partial_write_bytes", t.partial_write_bytes},
                {"other_bytes", t.other_bytes},
                {"reads", t.reads},
                {"writes", t.writes}}},
              {"memory_use",
               {{"stall_cycles", r.memory_use.stall_cycles},
                {"prefetch_cycles", r.memory_use.prefetch_cycles},
                {"total_cycles", r.memory_use.total_cycles},
                {"a", stream_json(r.memory_use.a)},
                {"b", stream_json(r.memory_use.b)},
                {"c", stream_json(r.memory_use.c)},
                {"average_bandwidth", bandwidth_json(r.memory_use.average_bandwidth)},
                {"peak_bandwidth", bandwidth_json(r.memory_use.peak_bandwidth)},
                {"zero_stall_bandwidth", bandwidth_json(r.memory_use.zero_stall_bandwidth)},
                {"streamed_tiles", r.memory_use.streamed_tiles},
                {"stream_k_chunk", r.memory_use.stream_k_chunk}}}});
    return j;
}

namespace {

// Reads a record's fields as the topology reader reads a row: each number an unsigned integer in
// its range, each name from its list, each list of the right kind. Anything else is a report_error
// naming the source and the field.
class field_reader {
public:
    explicit field_reader(const std::string& source) : m_source(source) {}

    [[noreturn]] void fail(const std::string& field, const std::string& what) const {
        throw report_error(m_source + ": field '" + field + "': " + what);
    }

    const nlohmann::json& at(const nlohmann::json& j, const char* key) const {
        if (!j.is_object()) fail(key, "its object is " + shown(j));
        const auto it = j.find(key);
        if (it == j.end()) fail(key, "missing");
        return *it;
    }

    // A value that must be an unsigned integer in [min, max]; `field` names it in messages.
    std::uint64_t number_value(const nlohmann::json& v, const char* field, std::uint64_t min = 0,
                               std::uint64_t max = ~std::uint64_t{0}) const {
        const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<std::int64_t>() >= 0);
        if (!whole) fail(field, "expected an unsigned integer, got " + shown(v));
        const auto n = v.get<std::uint64_t>();
        if (n < min || n > max)
            fail(field, std::to_string(n) + " is outside [" + std::to_string(min) + ", " +
                            std::to_string(max) + "]");
        return n;
    }
    std::uint64_t number(const nlohmann::json& j, const char* key, std::uint64_t min = 0,
                         std::uint64_t max = ~std::uint64_t{0}) const {
        return number_value(at(j, key), key, min, max);
    }

    std::string text(const nlohmann::json& j, const char* key) const {
        const auto& v = at(j, key);
        if (!v.is_string()) fail(key, "expected a string, got " + shown(v));
        return v.get<std::string>();
    }

    template <class List>
    std::string name(const nlohmann::json& j, const char* key, const List& names) const {
        const std::string s = text(j, key);
        std::string all;
        for (const auto& n : names) {
            if (s == n) return s;
            all += (all.empty() ? "" : ", ") + std::string(n);
        }
        fail(key, "'" + io::printable(s.substr(0, 40)) + "' is not one of " + all);
    }

    // A bandwidth: a finite number >= 0, or "inf" (bandwidth_json).
    double real(const nlohmann::json& j, const char* key) const {
        const auto& v = at(j, key);
        if (v.is_string() && v.get<std::string>() == "inf") return HUGE_VAL;
        if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
            fail(key, "expected a number >= 0 or \"inf\", got " + shown(v));
        return v.get<double>();
    }

    bool flag(const nlohmann::json& j, const char* key) const {
        const auto& v = at(j, key);
        if (!v.is_boolean()) fail(key, "expected true or false, got " + shown(v));
        return v.get<bool>();
    }

    const nlohmann::json& array(const nlohmann::json& j, const char* key) const {
        const auto& v = at(j, key);
        if (!v.is_array()) fail(key, "expected a list, got " + shown(v));
        return v;
    }

    std::vector<std::string> texts(const nlohmann::json& j, const char* key) const {
        std::vector<std::string> out;
        for (const auto& v : array(j, key)) {
            if (!v.is_string()) fail(key, "expected strings, got " + shown(v));
            out.push_back(v.get<std::string>());
        }
        return out;
    }

private:
    static std::string shown(const nlohmann::json& v) {
        const std::string s = v.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        return io::printable(s.size() > 40 ? s.substr(0, 40) + "..." : s);
    }
    const std::string& m_source;
};

// "RxC" as array_name() writes it, each side in [1, max_array].
bool is_array_name(const std::string& s) {
    const std::size_t x = s.find('x');
    if (x == std::string::npos) return false;
    std::uint64_t sides[2] = {0, 0};
    const std::string parts[2] = {s.substr(0, x), s.substr(x + 1)};
    for (int i = 0; i < 2; ++i) {
        if (parts[i].empty() || parts[i].size() > 4 || parts[i][0] == '0') return false;
        for (const char c : parts[i]) {
            if (c < '0' || c > '9') return false;
            sides[i] = sides[i] * 10 + std::uint64_t(c - '0');
        }
        if (sides[i] > max_array) return false;
    }
    return true;
}

}  // namespace

layer_record record_from_json(const nlohmann::json& j, const std::string& source) {
    const field_reader f(source);
    layer_record r;
    r.topology = f.text(j, "topology");
    if (r.topology.empty()) f.fail("topology", "is empty");
    r.layers_in_topology = f.number(j, "layers_in_topology", 1, max_dimension);
    r.sweep = f.texts(j, "sweep");
    if (r.sweep.empty()) f.fail("sweep", "is empty");
    std::set<std::string> arrays;
    for (const auto& a : r.sweep) {
        if (!is_array_name(a))
            f.fail("sweep", "'" + io::printable(a.substr(0, 40)) +
                                "' is not an array RxC, each side in [1, " + std::to_string(max_array) + "]");
        if (!arrays.insert(a).second) f.fail("sweep", a + " is given twice");
    }
    r.dataflows = f.texts(j, "dataflows");
    if (r.dataflows.empty()) f.fail("dataflows", "is empty");
    std::set<std::string> dataflows;
    for (const auto& d : r.dataflows) {
        if (!parse_dataflow_kind(d))
            f.fail("dataflows",
                   "'" + io::printable(d.substr(0, 40)) + "' is not " + names_text(dataflow_kind_names));
        if (!dataflows.insert(d).second) f.fail("dataflows", d + " is given twice");
    }
    r.layer_id = f.number(j, "layer_id", 0, r.layers_in_topology - 1);
    r.layer = f.text(j, "layer");
    if (r.layer.empty()) f.fail("layer", "is empty");
    r.kind = f.name(j, "kind", names(layer_kind_names));
    for (const auto& v : f.array(j, "conv"))
        r.conv.push_back(f.number_value(v, "conv", 1, max_dimension));
    r.array_rows = f.number(j, "array_rows", 1, max_array);
    r.array_cols = f.number(j, "array_cols", 1, max_array);
    if (std::find(r.sweep.begin(), r.sweep.end(), r.array_name()) == r.sweep.end())
        f.fail("array_rows", "the array " + r.array_name() + " is not in the sweep");
    r.dataflow = f.name(j, "dataflow", r.dataflows);
    const dataflow_kind df = *parse_dataflow_kind(r.dataflow);
    r.m = f.number(j, "m", 1, max_dimension);
    r.k = f.number(j, "k", 1, max_dimension);
    r.p = f.number(j, "p", 1, max_dimension);
    if (r.kind == to_string(layer_kind::gemm) && !r.conv.empty()) f.fail("conv", "a GEMM layer has none");
    if (r.kind == to_string(layer_kind::conv)) {
        // The convolution's fields must lower to the record's GEMM, as the topology reader lowers them.
        if (r.conv.size() != 8)
            f.fail("conv",
                   "a convolution has 8 (IFMAP height, width, filter height, width, channels, filters, "
                   "strides), got " +
                       std::to_string(r.conv.size()));
        const auto& c = r.conv;
        if (c[2] > c[0] || c[3] > c[1]) f.fail("conv", "the filter is larger than the IFMAP");
        const std::uint64_t m = conv_output_side(c[0], c[2], c[6]) * conv_output_side(c[1], c[3], c[7]);
        const unsigned __int128 k = static_cast<unsigned __int128>(c[2]) * c[3] * c[4];
        if (m != r.m || k != r.k || c[5] != r.p)
            f.fail("conv", "the convolution does not lower to M=" + std::to_string(r.m) +
                               " K=" + std::to_string(r.k) + " P=" + std::to_string(r.p));
    }
    r.dtype = f.name(j, "dtype", names(dtype_names));
    r.engine = f.text(j, "engine");
    if (!parse_engine_kind(r.engine))
        f.fail("engine",
               "'" + io::printable(r.engine.substr(0, 40)) + "' is not an engine systolic-run knows");
    r.seed = f.number(j, "seed");
    r.data = f.name(j, "data", data_sources);
    r.k_tile = f.number(j, "k_tile", 0, max_dimension);
    r.inject = f.text(j, "inject");
    const auto fault = verify::parse_fault(r.inject);
    if (!fault)
        f.fail("inject",
               "'" + io::printable(r.inject.substr(0, 40)) + "' is not a fault systolic-run --inject knows");
    if (!verify::fault_applies(*fault, df))
        f.fail("inject", r.inject + " does not exist in dataflow " + r.dataflow);
    const auto& mem = f.at(j, "memory");
    r.memory.config = f.text(mem, "config");
    r.memory.buffers = f.name(mem, "buffers", names(buffer_mode_names));
    r.memory.interface_bandwidth = f.text(mem, "interface_bandwidth");
    if (!r.memory.interface_bandwidth.empty())
        f.name(mem, "interface_bandwidth", names(interface_bandwidth_names));
    r.memory.a_sram = f.number(mem, "a_sram");
    r.memory.b_sram = f.number(mem, "b_sram");
    r.memory.c_sram = f.number(mem, "c_sram");
    r.memory.dram_bandwidth = f.number(mem, "dram_bandwidth");
    if (r.memory.config.empty() != r.memory.interface_bandwidth.empty())
        f.fail("interface_bandwidth", "a run with --config has CALC or USER, one without has none");
    r.operand_bytes = f.number(j, "operand_bytes", 1, 8);
    r.output_bytes = f.number(j, "output_bytes", 1, 8);
    r.status = f.name(j, "status", names(job_status_names));
    r.error = f.text(j, "error");
    r.pass = f.flag(j, "pass");
    const auto& sb = f.at(j, "scoreboard");
    r.checked = f.number(sb, "checked", 0, r.m * r.p);
    r.mismatches = f.number(sb, "mismatches", 0, r.checked);
    r.scoreboard_errors = f.texts(sb, "errors");
    if (r.pass && (r.status != to_string(job_status::completed) || r.checked == 0 || r.mismatches != 0))
        f.fail("pass", "true, but the job is " + r.status + " with " + std::to_string(r.checked) +
                           " elements checked and " + std::to_string(r.mismatches) + " mismatches");
    const auto& ex = f.at(j, "expect");
    r.expect.result = f.name(ex, "result", expect_results);
    r.expect.checked = f.number(ex, "checked", 0, r.m * r.p);
    r.expect.failures = f.number(ex, "failures", 0, r.expect.checked);
    r.expect.max_abs_error = f.real(ex, "max_abs_error");
    r.expect.max_rel_error = f.real(ex, "max_rel_error");
    r.expect.errors = f.texts(ex, "errors");
    if ((r.expect.result == "none") != (r.expect.checked == 0) ||
        (r.expect.result == "fail") != (r.expect.failures != 0))
        f.fail("expect", "result " + r.expect.result + " with " + std::to_string(r.expect.checked) +
                             " elements checked and " + std::to_string(r.expect.failures) + " failures");
    if (r.pass && r.expect.result == "fail") f.fail("pass", "true, but C differs from --expect's file");
    r.tiles = f.number(j, "tiles");
    r.advance_edges = f.number(j, "advance_edges");
    r.macs_padded = f.number(j, "macs_padded");
    r.macs_real = f.number(j, "macs_real", 0, r.macs_padded);
    r.real_outputs = f.number(j, "real_outputs");
    r.masked_outputs = f.number(j, "masked_outputs");
    r.preload_edges = f.number(j, "preload_edges");
    r.overflows = f.number(j, "overflows");
    if (!is_stationary(df) && r.preload_edges != 0)
        f.fail("preload_edges", std::to_string(r.preload_edges) + ", but output stationary preloads nothing");
    std::uint64_t folded = 0;
    for (const auto& g : f.array(j, "folds")) {
        fold_group fg{f.number_value(f.at(g, "count"), "folds", 1), f.number_value(f.at(g, "edges"), "folds"),
                      f.number_value(f.at(g, "used_pes"), "folds", 0, r.array_rows * r.array_cols),
                      f.number_value(f.at(g, "macs_real"), "folds")};
        folded += fg.count;
        r.folds.push_back(fg);
    }
    // SCALE-Sim's folds: our tiles for os; for ws and is each tile's folds of the stationary block,
    // all of them unless the job stopped in a tile.
    const std::uint64_t folds_per_tile =
        is_stationary(df) ? count_job({r.m, r.k, r.p}, {r.array_rows, r.array_cols}, r.k_tile, df).k_chunks
                          : 1;
    const bool stopped = is_stationary(df) && r.status != to_string(job_status::completed);
    if (stopped ? folded > r.tiles * folds_per_tile : folded != r.tiles * folds_per_tile)
        f.fail("folds", "they count " + std::to_string(folded) + " folds, the record's " +
                            std::to_string(r.tiles) + " tiles have " +
                            std::to_string(r.tiles * folds_per_tile));
    // A job that completed without a planted fault counted what the model's counting rule says for
    // its shape (the scoreboard checks the same against the same function): a record whose counts
    // do not follow from its M, K, P, array, dataflow and k_tile was edited.
    if (r.status == to_string(job_status::completed) && r.inject == "none") {
        const expected_counts want = count_job({r.m, r.k, r.p}, {r.array_rows, r.array_cols}, r.k_tile, df);
        const std::pair<const char*, std::pair<std::uint64_t, std::uint64_t>> counts[] = {
            {"tiles", {r.tiles, want.tiles}},
            {"advance_edges", {r.advance_edges, want.advance_edges}},
            {"preload_edges", {r.preload_edges, want.preload_edges}},
            {"macs_padded", {r.macs_padded, want.macs_padded}},
            {"macs_real", {r.macs_real, want.macs_real}},
            {"real_outputs", {r.real_outputs, want.outputs_real}},
            {"masked_outputs", {r.masked_outputs, want.outputs_masked}},
        };
        for (const auto& [field, v] : counts)
            if (v.first != v.second)
                f.fail(field, std::to_string(v.first) + ", but M=" + std::to_string(r.m) +
                                  " K=" + std::to_string(r.k) + " P=" + std::to_string(r.p) +
                                  (r.k_tile ? " KT=" + std::to_string(r.k_tile) : std::string()) + " on " +
                                  r.array_name() + " in " + r.dataflow + " counts " +
                                  std::to_string(v.second) + " (docs/counting.md)");
    }
    r.clock_ps = f.number(j, "clock_ps", 1, ~std::uint64_t{0});
    const auto& tp = f.at(j, "time_ps");
    r.sim_time_ps = f.number(tp, "sim");
    r.clear_ps = f.number(tp, "clear");
    r.load_ps = f.number(tp, "load");
    r.preload_ps = f.number(tp, "preload");
    r.advance_ps = f.number(tp, "advance");
    r.drain_ps = f.number(tp, "drain");
    const auto& t = f.at(j, "traffic");
    r.traffic.a_read_bytes = f.number(t, "a_read_bytes");
    r.traffic.b_read_bytes = f.number(t, "b_read_bytes");
    r.traffic.c_write_bytes = f.number(t, "c_write_bytes");
    r.traffic.c_read_bytes = f.number(t, "c_read_bytes");
    r.traffic.partial_read_bytes = f.number(t, "partial_read_bytes");
    r.traffic.partial_write_bytes = f.number(t, "partial_write_bytes");
    r.traffic.other_bytes = f.number(t, "other_bytes");
    r.traffic.reads = f.number(t, "reads");
    r.traffic.writes = f.number(t, "writes");
    const auto& u = f.at(j, "memory_use");
    memory_report& m = r.memory_use;
    m.stall_cycles = f.number(u, "stall_cycles");
    m.prefetch_cycles = f.number(u, "prefetch_cycles");
    m.total_cycles = f.number(u, "total_cycles");
    const std::pair<const char*, stream_bytes*> streams[] = {{"a", &m.a}, {"b", &m.b}, {"c", &m.c}};
    for (const auto& [key, s] : streams) {
        const auto& sj = f.at(u, key);
        s->dram = f.number(sj, "dram");
        s->array = f.number(sj, "array");
    }
    m.average_bandwidth = f.real(u, "average_bandwidth");
    m.peak_bandwidth = f.real(u, "peak_bandwidth");
    m.zero_stall_bandwidth = f.real(u, "zero_stall_bandwidth");
    m.streamed_tiles = f.number(u, "streamed_tiles", 0, r.tiles);
    m.stream_k_chunk = f.number(u, "stream_k_chunk", 0, r.k);
    return r;
}

namespace {

std::size_t sweep_index(const layer_record& r) {
    return std::size_t(std::find(r.sweep.begin(), r.sweep.end(), r.array_name()) - r.sweep.begin());
}

std::size_t dataflow_index(const layer_record& r) {
    return std::size_t(std::find(r.dataflows.begin(), r.dataflows.end(), r.dataflow) - r.dataflows.begin());
}

// The line of --emit-jobs' output, from 1, that runs a record's job: the Slurm array index of its
// task. --emit-jobs prints the jobs in report order.
std::uint64_t job_line(const layer_record& r) {
    return (std::uint64_t(sweep_index(r)) * r.dataflows.size() + dataflow_index(r)) * r.layers_in_topology +
           r.layer_id + 1;
}

// A job's place in the reports, and the key of its (array, dataflow) totals.
std::tuple<std::size_t, std::size_t, std::uint64_t> report_place(const layer_record& r) {
    return {sweep_index(r), dataflow_index(r), r.layer_id};
}

std::string fixed(double v, int digits = 4) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
    return buf;
}

// An error of --expect's comparison: six significant digits, 0 for an exact match.
std::string error_text(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// Picoseconds as nanoseconds with three decimals, from the integer: no rounding anywhere.
std::string ns_text(std::uint64_t ps) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%llu.%03llu", static_cast<unsigned long long>(ps / 1000),
                  static_cast<unsigned long long>(ps % 1000));
    return buf;
}

// CSV text fields: layer names may hold anything but a comma or a quote keeps its meaning quoted.
std::string csv_text(const std::string& s) {
    if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
    std::string out = "\"";
    for (char c : s)
        out += c == '"' ? std::string("\"\"") : std::string(1, c);
    return out + "\"";
}

}  // namespace

void sort_records(std::vector<layer_record>& records) {
    std::stable_sort(records.begin(), records.end(), [](const layer_record& a, const layer_record& b) {
        return report_place(a) < report_place(b);
    });
}

void check_layers_agree(const std::vector<layer_record>& records, const std::vector<std::string>& sources) {
    // The first record of each layer, and its file.
    std::map<std::uint64_t, std::size_t> first;
    for (std::size_t i = 0; i < records.size(); ++i) {
        const layer_record& r = records[i];
        const auto [it, fresh] = first.emplace(r.layer_id, i);
        if (fresh) continue;
        const layer_record& o = records[it->second];
        const std::string here = i < sources.size() ? sources[i] : "a record";
        const std::string there = it->second < sources.size() ? sources[it->second] : "another";
        const std::string id = "layer " + std::to_string(r.layer_id) + " is ";
        auto shape = [](const layer_record& x) {
            return "M=" + std::to_string(x.m) + " K=" + std::to_string(x.k) + " P=" + std::to_string(x.p);
        };
        auto quoted = [](const std::string& name) { return "'" + io::printable(name.substr(0, 40)) + "'"; };
        std::string field, mine, theirs;
        if (r.layer != o.layer) {
            field = "layer";
            mine = quoted(r.layer);
            theirs = quoted(o.layer);
        } else if (r.kind != o.kind || r.conv != o.conv) {
            field = r.kind != o.kind ? "kind" : "conv";
            mine = "a " + r.kind + (r.conv.empty() ? "" : " of other sizes");
            theirs = "a " + o.kind;
        } else if (r.m != o.m || r.k != o.k || r.p != o.p) {
            field = r.m != o.m ? "m" : r.k != o.k ? "k" : "p";
            mine = shape(r);
            theirs = shape(o);
        } else {
            continue;
        }
        throw report_error(here + ": field '" + field + "': " + id + mine + " here but " + theirs + " in " +
                           there + " (one layer has one name and shape in every file of a run)");
    }
}

void check_complete(const std::vector<layer_record>& records, const std::string& source,
                    const std::vector<std::string>& sources) {
    if (records.empty()) throw report_error(source + ": no job records");
    const layer_record& first = records.front();
    auto same_run = [&](const layer_record& r) {
        return r.topology == first.topology && r.layers_in_topology == first.layers_in_topology &&
               r.sweep == first.sweep && r.dataflows == first.dataflows && r.dtype == first.dtype &&
               r.engine == first.engine && r.seed == first.seed && r.data == first.data &&
               r.k_tile == first.k_tile && r.inject == first.inject && r.memory == first.memory;
    };
    for (const auto& r : records)
        if (!same_run(r))
            throw report_error(source + ": the records come from different runs (" + first.topology + " " +
                               first.dtype + " " + first.engine + " and " + r.topology + " " + r.dtype + " " +
                               r.engine + ", or different seeds, data, array or dataflow lists)");
    check_layers_agree(records, sources);
    std::set<std::tuple<std::string, std::string, std::uint64_t>> seen;
    for (const auto& r : records) {
        if (!seen.insert({r.array_name(), r.dataflow, r.layer_id}).second)
            throw report_error(source + ": layer " + std::to_string(r.layer_id) + " on " + r.array_name() +
                               " in " + r.dataflow + " appears twice");
    }
    const std::uint64_t expected = first.sweep.size() * first.dataflows.size() * first.layers_in_topology;
    if (seen.size() == expected) return;
    // The missing jobs are the gaps between the records' lines of --emit-jobs' output (the Slurm
    // array indices), so the search is bounded by the records, not by what they claim (at most
    // 2^31 - 1 layers, 2^20 distinct arrays and 3 dataflows, so no line number wraps).
    std::vector<std::uint64_t> lines;
    for (const auto& r : records)
        if (sweep_index(r) < r.sweep.size() && dataflow_index(r) < r.dataflows.size() &&
            r.layer_id < r.layers_in_topology)
            lines.push_back(job_line(r));
    std::sort(lines.begin(), lines.end());
    lines.push_back(expected + 1);
    std::uint64_t next = 1, missing = 0, first_missing = 0;
    std::size_t ranges = 0;
    std::string list;
    for (const std::uint64_t line : lines) {
        if (line > next) {
            if (!first_missing) first_missing = next;
            missing += line - next;
            // Enough ranges to paste into sbatch --array; a sweep with more gaps is mostly missing.
            if (++ranges <= 100)
                list += (list.empty() ? "" : ",") + std::to_string(next) +
                        (line - 1 > next ? "-" + std::to_string(line - 1) : std::string());
            else if (ranges == 101)
                list += ",...";
        }
        next = line + 1;
    }
    if (!missing) return;
    const std::uint64_t place = first_missing - 1, layers = first.layers_in_topology;
    const std::string& array = first.sweep[place / layers / first.dataflows.size()];
    const std::string& dataflow = first.dataflows[place / layers % first.dataflows.size()];
    throw report_error(source + ": no record for layer " + std::to_string(place % layers) + " on " + array +
                       " in " + dataflow +
                       (missing > 1 ? " and " + std::to_string(missing - 1) + " more jobs" : std::string()) +
                       " (" + std::to_string(records.size()) + " of " + std::to_string(expected) +
                       " jobs present); run " + (missing > 1 ? "lines " : "line ") + list +
                       " of the --emit-jobs output again (with Slurm, sbatch --array=" + list + ")");
}

std::string compute_report_csv(const std::vector<layer_record>& records) {
    std::ostringstream os;
    // SCALE-Sim v2's columns first and ours after them where they always were; v3's whole-job total
    // comes next, then the dataflow and its preload edges (Total Cycles = preload + advance edges - 1
    // + stalls), so that a reader of v2's or of our earlier reports finds every column in its place.
    os << "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %, "
          "Advance Edges, MACs Padded, MACs Real, Sim Time ns, Layer, Array, M, K, P, Tiles, Engine, Pass, "
          "Total Cycles (incl. prefetch), Dataflow, Preload Edges, Expect, Expect Failures, Max Abs Error, "
          "Max Rel Error, Overflows,\n";
    for (const auto& r : records) {
        const compute_figures f = compute_figures_of(r);
        os << r.layer_id << ", " << f.total_cycles << ", " << f.stall_cycles << ", " << fixed(f.overall_util)
           << ", " << fixed(f.mapping_efficiency) << ", " << fixed(f.compute_util) << ", " << r.advance_edges
           << ", " << r.macs_padded << ", " << r.macs_real << ", " << ns_text(r.sim_time_ps) << ", "
           << csv_text(r.layer) << ", " << r.array_name() << ", " << r.m << ", " << r.k << ", " << r.p << ", "
           << r.tiles << ", " << r.engine << ", " << (r.pass ? "PASS" : "FAIL") << ", "
           << f.total_cycles_incl_prefetch << ", " << r.dataflow << ", " << r.preload_edges << ", "
           << r.expect.result << ", " << r.expect.failures << ", " << error_text(r.expect.max_abs_error)
           << ", " << error_text(r.expect.max_rel_error) << ", " << r.overflows << ",\n";
    }
    return os.str();
}

std::string bandwidth_report_csv(const std::vector<layer_record>& records) {
    std::ostringstream os;
    os << "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, "
          "Avg FILTER DRAM BW, Avg OFMAP DRAM BW, Avg DRAM Bytes/Cycle, Peak DRAM Bytes/Cycle, "
          "Zero-Stall DRAM Bytes/Cycle, Streamed Tiles, Stream K Chunk, Layer, Array, Dataflow,\n";
    for (const auto& r : records) {
        const bandwidth_figures b = bandwidth_figures_of(r);
        const memory_report& m = r.memory_use;
        os << r.layer_id << ", " << fixed(b.ifmap_sram) << ", " << fixed(b.filter_sram) << ", "
           << fixed(b.ofmap_sram) << ", " << fixed(b.ifmap_dram) << ", " << fixed(b.filter_dram) << ", "
           << fixed(b.ofmap_dram) << ", " << fixed(m.average_bandwidth) << ", " << fixed(m.peak_bandwidth)
           << ", " << fixed(m.zero_stall_bandwidth) << ", " << m.streamed_tiles << ", " << m.stream_k_chunk
           << ", " << csv_text(r.layer) << ", " << r.array_name() << ", " << r.dataflow << ",\n";
    }
    return os.str();
}

std::string traffic_report_csv(const std::vector<layer_record>& records) {
    std::ostringstream os;
    os << "LayerID, Layer, Array, A Read Bytes, B Read Bytes, C Write Bytes, Partial Read Bytes, "
          "Partial Write Bytes, Reads, Writes, Dataflow,\n";
    for (const auto& r : records) {
        const auto& t = r.traffic;
        os << r.layer_id << ", " << csv_text(r.layer) << ", " << r.array_name() << ", " << t.a_read_bytes
           << ", " << t.b_read_bytes << ", " << t.c_write_bytes << ", " << t.partial_read_bytes << ", "
           << t.partial_write_bytes << ", " << t.reads << ", " << t.writes << ", " << r.dataflow << ",\n";
    }
    return os.str();
}

std::string report_json(const std::vector<layer_record>& records) {
    nlohmann::json layers = nlohmann::json::array();
    struct total {
        std::uint64_t edges = 0, preload = 0, macs_real = 0, macs_padded = 0, sim_ps = 0, cycles = 0,
                      stalls = 0, layers = 0;
        bool pass = true;
    };
    // One per (array, dataflow) of the run, in report order.
    std::map<std::pair<std::size_t, std::size_t>, total> totals;
    bool pass = true;
    for (const auto& r : records) {
        nlohmann::json j = to_json(r);
        const compute_figures f = compute_figures_of(r);
        const bandwidth_figures b = bandwidth_figures_of(r);
        j["scale_sim"] = {{"total_cycles", f.total_cycles},
                          {"total_cycles_incl_prefetch", f.total_cycles_incl_prefetch},
                          {"stall_cycles", f.stall_cycles},
                          {"bandwidth_words_per_cycle",
                           {{"ifmap_sram", b.ifmap_sram},
                            {"filter_sram", b.filter_sram},
                            {"ofmap_sram", b.ofmap_sram},
                            {"ifmap_dram", b.ifmap_dram},
                            {"filter_dram", b.filter_dram},
                            {"ofmap_dram", b.ofmap_dram}}},
                          {"overall_util_percent", f.overall_util},
                          {"mapping_efficiency_percent", f.mapping_efficiency},
                          {"compute_util_percent", f.compute_util}};
        layers.push_back(std::move(j));
        total& t = totals[{sweep_index(r), dataflow_index(r)}];
        t.edges += r.advance_edges;
        t.preload += r.preload_edges;
        t.macs_real += r.macs_real;
        t.macs_padded += r.macs_padded;
        t.sim_ps += r.sim_time_ps;
        t.cycles += f.total_cycles;
        t.stalls += f.stall_cycles;
        t.layers += 1;
        t.pass = t.pass && r.pass;
        pass = pass && r.pass;
    }
    nlohmann::json arrays = nlohmann::json::array();
    for (const auto& [index, t] : totals) {
        const layer_record* any = nullptr;
        for (const auto& r : records)
            if (std::make_pair(sweep_index(r), dataflow_index(r)) == index) any = &r;
        const double pes = double(any->array_rows) * double(any->array_cols);
        // The array's edges are its preload and advance edges: both are its work.
        const std::uint64_t edges = t.edges + t.preload;
        arrays.push_back(
            {{"array", any->array_name()},
             {"array_rows", any->array_rows},
             {"array_cols", any->array_cols},
             {"dataflow", any->dataflow},
             {"layers", t.layers},
             {"advance_edges", t.edges},
             {"preload_edges", t.preload},
             {"total_cycles", t.cycles},
             {"stall_cycles", t.stalls},
             {"macs_real", t.macs_real},
             {"macs_padded", t.macs_padded},
             {"utilization_percent", edges ? double(t.macs_real) * 100.0 / (double(edges) * pes) : 0.0},
             {"sim_time_ps", t.sim_ps},
             {"pass", t.pass}});
    }
    const layer_record& f = records.front();
    nlohmann::json out = {{"tool", "systolic-run"},
                          {"topology", f.topology},
                          {"dtype", f.dtype},
                          {"engine", f.engine},
                          {"seed", f.seed},
                          {"data", f.data},
                          {"inject", f.inject},
                          {"sweep", f.sweep},
                          {"dataflows", f.dataflows},
                          {"memory", to_json(f).at("memory")},
                          {"arrays", arrays},
                          {"layers", layers},
                          {"pass", pass}};
    return out.dump(2) + "\n";
}

std::string job_file_text(const layer_record& r) {
    nlohmann::json j = {{"systolic_run_job", 1}, {"record", to_json(r)}};
    return j.dump(1) + "\n";
}

layer_record read_job_file(const std::string& path) {
    std::string text;
    try {
        text = io::read_text_file(path);
    } catch (const io::io_error& e) {
        throw report_error(e.what());
    }
    return parse_job_file(text, path);
}

layer_record parse_job_file(std::string_view text, const std::string& source) {
    if (const std::string bad = io::utf8_error(text, source); !bad.empty()) throw report_error(bad);
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("systolic_run_job") || !j.contains("record"))
        throw report_error(source + ": not a systolic-run job file");
    return record_from_json(j.at("record"), source);
}

}  // namespace systolic::run
