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

bool energy_record::operator==(const energy_record& o) const {
    return std::tie(table, node_nm, priced, total_pj, pj_per_mac, component_pj, total_mm2, mac_random,
                    mac_gated, idle, preload, a_toggles, b_toggles, acc_toggles,
                    unpriced) == std::tie(o.table, o.node_nm, o.priced, o.total_pj, o.pj_per_mac,
                                          o.component_pj, o.total_mm2, o.mac_random, o.mac_gated, o.idle,
                                          o.preload, o.a_toggles, o.b_toggles, o.acc_toggles, o.unpriced);
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

void job_totals::add(const layer_record& r) {
    const compute_figures f = compute_figures_of(r);
    ++jobs;
    tiles += r.tiles;
    advance_edges += r.advance_edges;
    preload_edges += r.preload_edges;
    macs_real += r.macs_real;
    macs_padded += r.macs_padded;
    total_cycles += f.total_cycles;
    stall_cycles += f.stall_cycles;
    sim_time_ps += r.sim_time_ps;
    pes = r.array_rows * r.array_cols;
    pass = pass && r.pass;
    if (r.expect.result != expect_result::none) {
        expected = true;
        expect_checked += r.expect.checked;
        expect_failures += r.expect.failures;
        max_abs_error = std::max(max_abs_error, r.expect.max_abs_error);
        max_rel_error = std::max(max_rel_error, r.expect.max_rel_error);
    }
    if (r.energy) {
        energy = true;
        pj += r.energy->total_pj;
        mm2 = std::max(mm2, r.energy->total_mm2);
        priced = priced && r.energy->priced;
    }
}

double job_totals::utilization_percent() const {
    return edges() ? double(macs_real) * 100.0 / (double(edges()) * double(pes)) : 0.0;
}

double job_totals::overall_util_percent() const {
    return total_cycles ? double(macs_real) * 100.0 / (double(total_cycles) * double(pes)) : 0.0;
}

nlohmann::json job_totals::to_json() const {
    nlohmann::json j = {{"advance_edges", advance_edges},
                        {"preload_edges", preload_edges},
                        {"tiles", tiles},
                        {"total_cycles", total_cycles},
                        {"stall_cycles", stall_cycles},
                        {"macs_real", macs_real},
                        {"macs_padded", macs_padded},
                        {"utilization_percent", utilization_percent()},
                        {"overall_util_percent", overall_util_percent()},
                        {"sim_time_ps", sim_time_ps},
                        {"pass", pass}};
    if (expected)
        j["expect"] = {{"checked", expect_checked},
                       {"failures", expect_failures},
                       {"max_abs_error", max_abs_error},
                       {"max_rel_error", max_rel_error}};
    if (energy)
        j["energy"] = {{"total_pj", pj},
                       {"pj_per_mac", macs_real ? pj / double(macs_real) : 0.0},
                       {"total_mm2", mm2},
                       {"priced", priced}};
    return j;
}

std::vector<layer_totals> network_layers(const std::vector<const layer_record*>& series) {
    std::vector<layer_totals> out;
    std::map<std::string, std::size_t> index;
    for (const layer_record* r : series) {
        std::string name = layer_group(r->layer);
        auto [at, fresh] = index.emplace(std::move(name), out.size());
        if (fresh) out.push_back({at->first, {}, {}});
        layer_totals& l = out[at->second];
        l.gemms.push_back(r);
        l.totals.add(*r);
    }
    return out;
}

namespace {

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

// "os, ws": a run's dataflows, for messages.
std::string dataflow_names(const std::vector<dataflow_kind>& dataflows) {
    std::string out;
    for (const auto df : dataflows)
        out += (out.empty() ? "" : ", ") + std::string(to_string(df));
    return out;
}

// A field that must not be empty.
template <class T>
auto not_empty(const char* key, const T& value) {
    return io::then([key, &value](const auto& f) {
        if (value.empty()) f.fail(key, "is empty");
    });
}

// The record's keys, once: to_json writes them, record_from_json reads them back in this order
// with these rules (a rule may use the fields before it). R is layer_record, const for the writer.
// The keys shared with every other report's job (m, k, p, the counts, the scoreboard) are
// io::job_counter_fields'.
template <class V, class R>
void record_fields(V& v, R& r) {
    v("topology", r.topology, not_empty("topology", r.topology));
    v("layers_in_topology", r.layers_in_topology, io::range{1, max_dimension});
    v("sweep", r.sweep, not_empty("sweep", r.sweep), io::then([&](const auto& f) {
          std::set<std::string> arrays;
          for (const auto& a : r.sweep) {
              if (!is_array_name(a))
                  f.fail("sweep", "'" + io::printable(a.substr(0, 40)) +
                                      "' is not an array RxC, each side in [1, " + std::to_string(max_array) +
                                      "]");
              if (!arrays.insert(a).second) f.fail("sweep", a + " is given twice");
          }
      }));
    v("dataflows", r.dataflows, io::named{dataflow_kind_names}, not_empty("dataflows", r.dataflows),
      io::then([&](const auto& f) {
          std::set<dataflow_kind> dataflows;
          for (const auto d : r.dataflows)
              if (!dataflows.insert(d).second)
                  f.fail("dataflows", std::string(to_string(d)) + " is given twice");
      }));
    v("layer_id", r.layer_id, io::range{0, r.layers_in_topology - 1});
    v("layer", r.layer, not_empty("layer", r.layer));
    v("kind", r.kind, io::named{layer_kind_names});
    v("conv", r.conv, io::range{1, max_dimension});
    v("array_rows", r.array_rows, io::range{1, max_array});
    v("array_cols", r.array_cols, io::range{1, max_array}, io::then([&](const auto& f) {
          if (std::find(r.sweep.begin(), r.sweep.end(), r.array_name()) == r.sweep.end())
              f.fail("array_rows", "the array " + r.array_name() + " is not in the sweep");
      }));
    v.shown("array", [&] { return r.array_name(); });
    v("dataflow", r.dataflow, io::named{dataflow_kind_names}, io::then([&](const auto& f) {
          if (std::find(r.dataflows.begin(), r.dataflows.end(), r.dataflow) == r.dataflows.end())
              f.fail("dataflow", std::string("'") + to_string(r.dataflow) +
                                     "' is not one of the run's dataflows (" + dataflow_names(r.dataflows) +
                                     ")");
      }));
    io::job_counter_fields(v, r, max_dimension);
    v("dtype", r.dtype, io::named{dtype_names});
    v("engine", r.engine, io::named{engine_kind_names});
    v("seed", r.seed);
    v("data", r.data, io::named{data_source_names});
    v("k_tile", r.k_tile, io::range{0, max_dimension});
    v("inject", r.inject, io::named{verify::fault_names});
    v.object("memory", r.memory, [](auto& mv, auto& m) {
        mv("config", m.config);
        mv("buffers", m.buffers, io::named{buffer_mode_names});
        static const std::vector<std::string> interfaces = names(interface_bandwidth_names);
        mv("interface_bandwidth", m.interface_bandwidth, io::then([&](const auto& f) {
               // Empty without --config, else one of the names.
               if (m.interface_bandwidth.empty()) return;
               for (const auto& n : interfaces)
                   if (n == m.interface_bandwidth) return;
               f.fail("interface_bandwidth", "'" + io::printable(m.interface_bandwidth.substr(0, 40)) +
                                                 "' is not one of " +
                                                 names_text(interface_bandwidth_names, ", "));
           }));
        mv("a_sram", m.a_sram);
        mv("b_sram", m.b_sram);
        mv("c_sram", m.c_sram);
        mv("dram_bandwidth", m.dram_bandwidth, io::then([&](const auto& f) {
               if (m.config.empty() != m.interface_bandwidth.empty())
                   f.fail("interface_bandwidth",
                          "a run with --config has CALC or USER, one without has none");
           }));
    });
    v("operand_bytes", r.operand_bytes, io::range{1, 8});
    v("output_bytes", r.output_bytes, io::range{1, 8});
    v("status", r.status, io::named{job_status_names});
    v("error", r.error);
    v("pass", r.pass);
    v.object("expect", r.expect, [&](auto& ev, auto& e) {
        ev("result", e.result, io::named{expect_result_names});
        ev("checked", e.checked, io::range{0, r.m * r.p});
        ev("failures", e.failures, io::range{0, e.checked});
        ev("max_abs_error", e.max_abs_error);
        ev("max_rel_error", e.max_rel_error);
        ev("errors", e.errors);
    });
    v("preload_edges", r.preload_edges);
    v("overflows", r.overflows);
    v.list("folds", r.folds, [&](auto& gv, auto& g) {
        gv("count", g.count, io::range{1});
        gv("edges", g.edges);
        gv("used_pes", g.used_pes, io::range{0, r.array_rows * r.array_cols});
        gv("macs_real", g.macs_real);
    });
    v("clock_ps", r.clock_ps, io::range{1});
    v.object("time_ps", [&](auto& tv) {
        tv("sim", r.sim_time_ps);
        tv("clear", r.clear_ps);
        tv("load", r.load_ps);
        tv("preload", r.preload_ps);
        tv("advance", r.advance_ps);
        tv("drain", r.drain_ps);
    });
    v.object("traffic", r.traffic, [](auto& tv, auto& t) {
        tv("a_read_bytes", t.a_read_bytes);
        tv("b_read_bytes", t.b_read_bytes);
        tv("c_write_bytes", t.c_write_bytes);
        tv("c_read_bytes", t.c_read_bytes);
        tv("partial_read_bytes", t.partial_read_bytes);
        tv("partial_write_bytes", t.partial_write_bytes);
        tv("other_bytes", t.other_bytes);
        tv("reads", t.reads);
        tv("writes", t.writes);
    });
    v.object("memory_use", r.memory_use, [&](auto& uv, auto& m) {
        uv("stall_cycles", m.stall_cycles);
        uv("prefetch_cycles", m.prefetch_cycles);
        uv("total_cycles", m.total_cycles);
        const auto stream = [](auto& sv, auto& s) {
            sv("dram", s.dram);
            sv("array", s.array);
        };
        uv.object("a", m.a, stream);
        uv.object("b", m.b, stream);
        uv.object("c", m.c, stream);
        uv("average_bandwidth", m.average_bandwidth);
        uv("peak_bandwidth", m.peak_bandwidth);
        uv("zero_stall_bandwidth", m.zero_stall_bandwidth);
        uv("streamed_tiles", m.streamed_tiles, io::range{0, r.tiles});
        uv("stream_k_chunk", m.stream_k_chunk, io::range{0, r.k});
    });
    // Absent without --energy.
    v.object("energy", r.energy, [&](auto& ev, auto& e) {
        ev("table", e.table, not_empty("energy", e.table));
        ev("node_nm", e.node_nm);
        ev("priced", e.priced);
        ev("total_pj", e.total_pj);
        ev("pj_per_mac", e.pj_per_mac);
        ev.object("component_pj", [&](auto& cv) {
            for (std::size_t i = 0; i < std::size(energy::component_names); ++i)
                cv(energy::component_names[i].name, e.component_pj[i]);
        });
        ev("total_mm2", e.total_mm2);
        ev("mac_random", e.mac_random);
        ev("mac_gated", e.mac_gated);
        ev("idle", e.idle);
        ev("preload", e.preload);
        ev("a_toggles", e.a_toggles);
        ev("b_toggles", e.b_toggles);
        ev("acc_toggles", e.acc_toggles);
        ev("unpriced", e.unpriced);
    });
}

// What the reader checks across fields once they are all read: the convolution's lowering, the
// fault's dataflow, the verdict against the counts, and the counts against the counting rule.
void check_record(const layer_record& r, const io::json_reader<report_error>& f) {
    const dataflow_kind df = r.dataflow;
    if (r.kind == layer_kind::gemm && !r.conv.empty()) f.fail("conv", "a GEMM layer has none");
    if (r.kind == layer_kind::conv) {
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
    if (!verify::fault_applies(r.inject, df))
        f.fail("inject", std::string(to_string(r.inject)) + " does not exist in dataflow " + to_string(df));
    const io::scoreboard_counts& sb = r.scoreboard;
    if (r.pass && (r.status != job_status::completed || sb.checked == 0 || sb.mismatches != 0))
        f.fail("pass", std::string("true, but the job is ") + to_string(r.status) + " with " +
                           std::to_string(sb.checked) + " elements checked and " +
                           std::to_string(sb.mismatches) + " mismatches");
    const expect_record& ex = r.expect;
    if ((ex.result == expect_result::none) != (ex.checked == 0) ||
        (ex.result == expect_result::fail) != (ex.failures != 0))
        f.fail("expect", "result " + std::string(to_string(ex.result)) + " with " +
                             std::to_string(ex.checked) + " elements checked and " +
                             std::to_string(ex.failures) + " failures");
    if (r.pass && ex.result == expect_result::fail)
        f.fail("pass", "true, but C differs from --expect's file");
    if (!is_stationary(df) && r.preload_edges != 0)
        f.fail("preload_edges", std::to_string(r.preload_edges) + ", but output stationary preloads nothing");
    std::uint64_t folded = 0;
    for (const auto& g : r.folds)
        folded += g.count;
    // SCALE-Sim's folds: our tiles for os; for ws and is each tile's folds of the stationary block,
    // all of them unless the job stopped in a tile.
    const std::uint64_t folds_per_tile =
        is_stationary(df) ? count_job({r.m, r.k, r.p}, {r.array_rows, r.array_cols}, r.k_tile, df).k_chunks
                          : 1;
    const bool stopped = is_stationary(df) && r.status != job_status::completed;
    if (stopped ? folded > r.tiles * folds_per_tile : folded != r.tiles * folds_per_tile)
        f.fail("folds", "they count " + std::to_string(folded) + " folds, the record's " +
                            std::to_string(r.tiles) + " tiles have " +
                            std::to_string(r.tiles * folds_per_tile));
    // A job that completed without a planted fault counted what the model's counting rule says for
    // its shape (the scoreboard checks the same against the same function): a record whose counts
    // do not follow from its M, K, P, array, dataflow and k_tile was edited.
    if (r.status == job_status::completed && r.inject == verify::fault::none) {
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
                                  r.array_name() + " in " + to_string(df) + " counts " +
                                  std::to_string(v.second) + " (docs/counting.md)");
    }
}

}  // namespace

nlohmann::json to_json(const layer_record& r) {
    return io::write_fields(r, [](auto& v, auto& rec) { record_fields(v, rec); });
}

layer_record record_from_json(const nlohmann::json& j, const std::string& source) {
    layer_record r;
    io::read_fields<report_error>(j, source, r, [](auto& v, auto& rec) { record_fields(v, rec); });
    check_record(r, io::json_reader<report_error>(j, source));
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

// An energy or area: ten significant digits, enough that a row's components add up to its total
// within 1e-9 of it.
std::string real_text(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", v);
    return buf;
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
            mine = std::string("a ") + to_string(r.kind) + (r.conv.empty() ? "" : " of other sizes");
            theirs = std::string("a ") + to_string(o.kind);
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
               r.k_tile == first.k_tile && r.inject == first.inject && r.memory == first.memory &&
               bool(r.energy) == bool(first.energy) &&
               (!r.energy ||
                (r.energy->table == first.energy->table && r.energy->node_nm == first.energy->node_nm));
    };
    for (const auto& r : records)
        if (!same_run(r))
            throw report_error(source + ": the records come from different runs (" + first.topology + " " +
                               to_string(first.dtype) + " " + to_string(first.engine) + " and " + r.topology +
                               " " + to_string(r.dtype) + " " + to_string(r.engine) +
                               ", or different seeds, data, array or dataflow lists, or energy tables)");
    check_layers_agree(records, sources);
    std::set<std::tuple<std::string, dataflow_kind, std::uint64_t>> seen;
    for (const auto& r : records) {
        if (!seen.insert({r.array_name(), r.dataflow, r.layer_id}).second)
            throw report_error(source + ": layer " + std::to_string(r.layer_id) + " on " + r.array_name() +
                               " in " + to_string(r.dataflow) + " appears twice");
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
    const dataflow_kind dataflow = first.dataflows[place / layers % first.dataflows.size()];
    throw report_error(source + ": no record for layer " + std::to_string(place % layers) + " on " + array +
                       " in " + to_string(dataflow) +
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
           << r.tiles << ", " << to_string(r.engine) << ", " << (r.pass ? "PASS" : "FAIL") << ", "
           << f.total_cycles_incl_prefetch << ", " << to_string(r.dataflow) << ", " << r.preload_edges << ", "
           << to_string(r.expect.result) << ", " << r.expect.failures << ", "
           << error_text(r.expect.max_abs_error) << ", " << error_text(r.expect.max_rel_error) << ", "
           << r.overflows << ",\n";
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
           << ", " << csv_text(r.layer) << ", " << r.array_name() << ", " << to_string(r.dataflow) << ",\n";
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
           << t.partial_write_bytes << ", " << t.reads << ", " << t.writes << ", " << to_string(r.dataflow)
           << ",\n";
    }
    return os.str();
}

std::string energy_report_csv(const std::vector<layer_record>& records) {
    std::ostringstream os;
    os << "LayerID, Layer, Array, Dataflow, Total pJ, pJ per MAC, ";
    for (const auto& c : energy::component_names)
        os << c.name << " pJ, ";
    os << "Total mm2,\n";
    for (const auto& r : records) {
        if (!r.energy) continue;
        const energy_record& e = *r.energy;
        os << r.layer_id << ", " << csv_text(r.layer) << ", " << r.array_name() << ", "
           << to_string(r.dataflow) << ", " << real_text(e.total_pj) << ", " << real_text(e.pj_per_mac)
           << ", ";
        for (const double pj : e.component_pj)
            os << real_text(pj) << ", ";
        os << real_text(e.total_mm2) << ",\n";
    }
    return os.str();
}

std::string report_json(const std::vector<layer_record>& records) {
    nlohmann::json layers = nlohmann::json::array();
    // The records of each (array, dataflow) of the run, in report order.
    std::map<std::pair<std::size_t, std::size_t>, std::vector<const layer_record*>> series;
    bool pass = true;
    for (const auto& r : records) {
        nlohmann::json j = to_json(r);
        const compute_figures f = compute_figures_of(r);
        const bandwidth_figures b = bandwidth_figures_of(r);
        j["network_layer"] = layer_group(r.layer);
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
        series[{sweep_index(r), dataflow_index(r)}].push_back(&r);
        pass = pass && r.pass;
    }
    nlohmann::json arrays = nlohmann::json::array();
    for (const auto& [index, jobs] : series) {
        const layer_record& any = *jobs.front();
        job_totals network;
        nlohmann::json by_layer = nlohmann::json::array();
        for (const layer_totals& l : network_layers(jobs)) {
            nlohmann::json ids = nlohmann::json::array();
            for (const layer_record* g : l.gemms)
                ids.push_back(g->layer_id);
            nlohmann::json j = {{"layer", l.layer}, {"gemms", l.gemms.size()}, {"layer_ids", std::move(ids)}};
            j.update(l.totals.to_json());
            by_layer.push_back(std::move(j));
            for (const layer_record* g : l.gemms)
                network.add(*g);
        }
        nlohmann::json a = {{"array", any.array_name()},    {"array_rows", any.array_rows},
                            {"array_cols", any.array_cols}, {"dataflow", to_string(any.dataflow)},
                            {"layers", network.jobs},       {"network_layer_count", by_layer.size()}};
        a.update(network.to_json());
        a["network_layers"] = std::move(by_layer);
        arrays.push_back(std::move(a));
    }
    // The run's settings as its records write them (every record of a run has the same).
    const nlohmann::json f = to_json(records.front());
    nlohmann::json out = {{"tool", "systolic-run"},
                          {"topology", f.at("topology")},
                          {"dtype", f.at("dtype")},
                          {"engine", f.at("engine")},
                          {"seed", f.at("seed")},
                          {"data", f.at("data")},
                          {"inject", f.at("inject")},
                          {"sweep", f.at("sweep")},
                          {"dataflows", f.at("dataflows")},
                          {"memory", f.at("memory")},
                          {"arrays", arrays},
                          {"layers", layers},
                          {"pass", pass}};
    if (records.front().energy)
        out["energy"] = {{"table", records.front().energy->table},
                         {"node_nm", records.front().energy->node_nm}};
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
