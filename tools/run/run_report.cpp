#include "run_report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "io/input_file.h"

namespace systolic::run {

bool fold_group::operator<(const fold_group& o) const {
    return std::tie(edges, used_pes, macs_real, count) < std::tie(o.edges, o.used_pes, o.macs_real, o.count);
}
bool fold_group::operator==(const fold_group& o) const {
    return std::tie(edges, used_pes, macs_real, count) == std::tie(o.edges, o.used_pes, o.macs_real, o.count);
}

std::string layer_record::array_name() const {
    return std::to_string(array_rows) + "x" + std::to_string(array_cols);
}

compute_figures compute_figures_of(const layer_record& r) {
    compute_figures f;
    const double pes = double(r.array_rows) * double(r.array_cols);
    f.total_cycles = r.advance_edges ? r.advance_edges - 1 : 0;
    f.stall_cycles = 0;
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

nlohmann::json to_json(const layer_record& r) {
    nlohmann::json folds = nlohmann::json::array();
    for (const auto& g : r.folds)
        folds.push_back(
            {{"count", g.count}, {"edges", g.edges}, {"used_pes", g.used_pes}, {"macs_real", g.macs_real}});
    const auto& t = r.traffic;
    return {{"topology", r.topology},
            {"layers_in_topology", r.layers_in_topology},
            {"sweep", r.sweep},
            {"layer_id", r.layer_id},
            {"layer", r.layer},
            {"kind", r.kind},
            {"conv", r.conv},
            {"array", r.array_name()},
            {"array_rows", r.array_rows},
            {"array_cols", r.array_cols},
            {"m", r.m},
            {"k", r.k},
            {"p", r.p},
            {"dtype", r.dtype},
            {"engine", r.engine},
            {"seed", r.seed},
            {"data", r.data},
            {"k_tile", r.k_tile},
            {"inject", r.inject},
            {"status", r.status},
            {"error", r.error},
            {"pass", r.pass},
            {"scoreboard",
             {{"checked", r.checked}, {"mismatches", r.mismatches}, {"errors", r.scoreboard_errors}}},
            {"tiles", r.tiles},
            {"advance_edges", r.advance_edges},
            {"macs_padded", r.macs_padded},
            {"macs_real", r.macs_real},
            {"real_outputs", r.real_outputs},
            {"masked_outputs", r.masked_outputs},
            {"folds", folds},
            {"clock_ps", r.clock_ps},
            {"time_ps",
             {{"sim", r.sim_time_ps},
              {"clear", r.clear_ps},
              {"load", r.load_ps},
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
              {"writes", t.writes}}}};
}

layer_record record_from_json(const nlohmann::json& j, const std::string& source) {
    layer_record r;
    try {
        r.topology = j.at("topology").get<std::string>();
        r.layers_in_topology = j.at("layers_in_topology").get<std::uint64_t>();
        r.sweep = j.at("sweep").get<std::vector<std::string>>();
        r.layer_id = j.at("layer_id").get<std::uint64_t>();
        r.layer = j.at("layer").get<std::string>();
        r.kind = j.at("kind").get<std::string>();
        r.conv = j.at("conv").get<std::vector<std::uint64_t>>();
        r.array_rows = j.at("array_rows").get<std::uint64_t>();
        r.array_cols = j.at("array_cols").get<std::uint64_t>();
        r.m = j.at("m").get<std::uint64_t>();
        r.k = j.at("k").get<std::uint64_t>();
        r.p = j.at("p").get<std::uint64_t>();
        r.dtype = j.at("dtype").get<std::string>();
        r.engine = j.at("engine").get<std::string>();
        r.seed = j.at("seed").get<std::uint64_t>();
        r.data = j.at("data").get<std::string>();
        r.k_tile = j.at("k_tile").get<std::uint64_t>();
        r.inject = j.at("inject").get<std::string>();
        r.status = j.at("status").get<std::string>();
        r.error = j.at("error").get<std::string>();
        r.pass = j.at("pass").get<bool>();
        const auto& sb = j.at("scoreboard");
        r.checked = sb.at("checked").get<std::uint64_t>();
        r.mismatches = sb.at("mismatches").get<std::uint64_t>();
        r.scoreboard_errors = sb.at("errors").get<std::vector<std::string>>();
        r.tiles = j.at("tiles").get<std::uint64_t>();
        r.advance_edges = j.at("advance_edges").get<std::uint64_t>();
        r.macs_padded = j.at("macs_padded").get<std::uint64_t>();
        r.macs_real = j.at("macs_real").get<std::uint64_t>();
        r.real_outputs = j.at("real_outputs").get<std::uint64_t>();
        r.masked_outputs = j.at("masked_outputs").get<std::uint64_t>();
        for (const auto& g : j.at("folds"))
            r.folds.push_back({g.at("count").get<std::uint64_t>(), g.at("edges").get<std::uint64_t>(),
                               g.at("used_pes").get<std::uint64_t>(),
                               g.at("macs_real").get<std::uint64_t>()});
        r.clock_ps = j.at("clock_ps").get<std::uint64_t>();
        const auto& tp = j.at("time_ps");
        r.sim_time_ps = tp.at("sim").get<std::uint64_t>();
        r.clear_ps = tp.at("clear").get<std::uint64_t>();
        r.load_ps = tp.at("load").get<std::uint64_t>();
        r.advance_ps = tp.at("advance").get<std::uint64_t>();
        r.drain_ps = tp.at("drain").get<std::uint64_t>();
        const auto& t = j.at("traffic");
        r.traffic.a_read_bytes = t.at("a_read_bytes").get<std::uint64_t>();
        r.traffic.b_read_bytes = t.at("b_read_bytes").get<std::uint64_t>();
        r.traffic.c_write_bytes = t.at("c_write_bytes").get<std::uint64_t>();
        r.traffic.c_read_bytes = t.at("c_read_bytes").get<std::uint64_t>();
        r.traffic.partial_read_bytes = t.at("partial_read_bytes").get<std::uint64_t>();
        r.traffic.partial_write_bytes = t.at("partial_write_bytes").get<std::uint64_t>();
        r.traffic.other_bytes = t.at("other_bytes").get<std::uint64_t>();
        r.traffic.reads = t.at("reads").get<std::uint64_t>();
        r.traffic.writes = t.at("writes").get<std::uint64_t>();
    } catch (const nlohmann::json::exception& e) {
        std::string what = e.what();
        std::replace(what.begin(), what.end(), '\n', ' ');
        throw report_error(source + ": not a systolic-run job record: " + what);
    }
    if (r.array_rows == 0 || r.array_cols == 0 || r.sweep.empty() ||
        std::find(r.sweep.begin(), r.sweep.end(), r.array_name()) == r.sweep.end() ||
        r.layer_id >= r.layers_in_topology)
        throw report_error(source + ": inconsistent job record (array " + r.array_name() + ", layer " +
                           std::to_string(r.layer_id) + ")");
    return r;
}

namespace {

std::size_t sweep_index(const layer_record& r) {
    return std::size_t(std::find(r.sweep.begin(), r.sweep.end(), r.array_name()) - r.sweep.begin());
}

std::string fixed(double v, int digits = 4) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", digits, v);
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
        return std::make_pair(sweep_index(a), a.layer_id) < std::make_pair(sweep_index(b), b.layer_id);
    });
}

void check_complete(const std::vector<layer_record>& records, const std::string& source) {
    if (records.empty()) throw report_error(source + ": no job records");
    const layer_record& first = records.front();
    auto same_run = [&](const layer_record& r) {
        return r.topology == first.topology && r.layers_in_topology == first.layers_in_topology &&
               r.sweep == first.sweep && r.dtype == first.dtype && r.engine == first.engine &&
               r.seed == first.seed && r.data == first.data && r.k_tile == first.k_tile &&
               r.inject == first.inject;
    };
    std::set<std::pair<std::string, std::uint64_t>> seen;
    for (const auto& r : records) {
        if (!same_run(r))
            throw report_error(source + ": the records come from different runs (" + first.topology + " " +
                               first.dtype + " " + first.engine + " and " + r.topology + " " + r.dtype + " " +
                               r.engine + ", or different seeds, data or array lists)");
        if (!seen.insert({r.array_name(), r.layer_id}).second)
            throw report_error(source + ": layer " + std::to_string(r.layer_id) + " on " + r.array_name() +
                               " appears twice");
    }
    for (const auto& a : first.sweep)
        for (std::uint64_t id = 0; id < first.layers_in_topology; ++id)
            if (!seen.count({a, id}))
                throw report_error(source + ": no record for layer " + std::to_string(id) + " on " + a +
                                   " (" + std::to_string(records.size()) + " of " +
                                   std::to_string(first.sweep.size() * first.layers_in_topology) +
                                   " jobs present)");
}

std::string compute_report_csv(const std::vector<layer_record>& records) {
    std::ostringstream os;
    os << "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %, "
          "Advance Edges, MACs Padded, MACs Real, Sim Time ns, Layer, Array, M, K, P, Tiles, Engine, Pass,\n";
    for (const auto& r : records) {
        const compute_figures f = compute_figures_of(r);
        os << r.layer_id << ", " << f.total_cycles << ", " << f.stall_cycles << ", " << fixed(f.overall_util)
           << ", " << fixed(f.mapping_efficiency) << ", " << fixed(f.compute_util) << ", " << r.advance_edges
           << ", " << r.macs_padded << ", " << r.macs_real << ", " << ns_text(r.sim_time_ps) << ", "
           << csv_text(r.layer) << ", " << r.array_name() << ", " << r.m << ", " << r.k << ", " << r.p << ", "
           << r.tiles << ", " << r.engine << ", " << (r.pass ? "PASS" : "FAIL") << ",\n";
    }
    return os.str();
}

std::string traffic_report_csv(const std::vector<layer_record>& records) {
    std::ostringstream os;
    os << "LayerID, Layer, Array, A Read Bytes, B Read Bytes, C Write Bytes, Partial Read Bytes, "
          "Partial Write Bytes, Reads, Writes,\n";
    for (const auto& r : records) {
        const auto& t = r.traffic;
        os << r.layer_id << ", " << csv_text(r.layer) << ", " << r.array_name() << ", " << t.a_read_bytes
           << ", " << t.b_read_bytes << ", " << t.c_write_bytes << ", " << t.partial_read_bytes << ", "
           << t.partial_write_bytes << ", " << t.reads << ", " << t.writes << ",\n";
    }
    return os.str();
}

std::string report_json(const std::vector<layer_record>& records) {
    nlohmann::json layers = nlohmann::json::array();
    struct total {
        std::uint64_t edges = 0, macs_real = 0, macs_padded = 0, sim_ps = 0, cycles = 0, layers = 0;
        bool pass = true;
    };
    std::map<std::size_t, total> totals;
    bool pass = true;
    for (const auto& r : records) {
        nlohmann::json j = to_json(r);
        const compute_figures f = compute_figures_of(r);
        j["scale_sim"] = {{"total_cycles", f.total_cycles},
                          {"stall_cycles", f.stall_cycles},
                          {"overall_util_percent", f.overall_util},
                          {"mapping_efficiency_percent", f.mapping_efficiency},
                          {"compute_util_percent", f.compute_util}};
        layers.push_back(std::move(j));
        total& t = totals[sweep_index(r)];
        t.edges += r.advance_edges;
        t.macs_real += r.macs_real;
        t.macs_padded += r.macs_padded;
        t.sim_ps += r.sim_time_ps;
        t.cycles += f.total_cycles;
        t.layers += 1;
        t.pass = t.pass && r.pass;
        pass = pass && r.pass;
    }
    nlohmann::json arrays = nlohmann::json::array();
    for (const auto& [index, t] : totals) {
        const layer_record* any = nullptr;
        for (const auto& r : records)
            if (sweep_index(r) == index) any = &r;
        const double pes = double(any->array_rows) * double(any->array_cols);
        arrays.push_back(
            {{"array", any->array_name()},
             {"array_rows", any->array_rows},
             {"array_cols", any->array_cols},
             {"layers", t.layers},
             {"advance_edges", t.edges},
             {"total_cycles", t.cycles},
             {"macs_real", t.macs_real},
             {"macs_padded", t.macs_padded},
             {"utilization_percent", t.edges ? double(t.macs_real) * 100.0 / (double(t.edges) * pes) : 0.0},
             {"sim_time_ps", t.sim_ps},
             {"pass", t.pass}});
    }
    const layer_record& f = records.front();
    nlohmann::json out = {
        {"tool", "systolic-run"}, {"topology", f.topology}, {"dtype", f.dtype},   {"engine", f.engine},
        {"seed", f.seed},         {"data", f.data},         {"inject", f.inject}, {"sweep", f.sweep},
        {"arrays", arrays},       {"layers", layers},       {"pass", pass}};
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
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object() || !j.contains("systolic_run_job") || !j.contains("record"))
        throw report_error(path + ": not a systolic-run job file");
    return record_from_json(j.at("record"), path);
}

}  // namespace systolic::run
