#include "run_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "cli_suggest.h"
#include "cli_values.h"
#include "io/input_file.h"
#include "option_rules.h"
#include "output_options.h"
#include "systolic/log.h"
#include "systolic/verify/fault.h"

namespace systolic::run {

using cli::usage_error;

namespace {

struct raw {
    std::string seed = "1", jobs = "1", max_memory;
    std::string dtype = to_string(dtype::int8), engine = to_string(engine_kind::cycle);
    std::string dataflow = to_string(dataflow_kind::os);
    std::string inject = to_string(verify::fault::none);
    cli::energy_option_text energy;
};

const cli::energy_options& energy_of(const run_cli& o) {
    return o.energy;
}

// Options that change nothing without another (README's "Options that need another" lists them).
const std::vector<cli::option_rule<run_cli>>& run_option_rules() {
    static const std::vector<cli::option_rule<run_cli>> own = {
        {"--job", "--job-out", "the one job's record goes to that file",
         [](const run_cli& o) { return bool(o.job_out); }},
        {"--job-out", "--job", "it is the file of the one job --job runs",
         [](const run_cli& o) { return bool(o.job); }},
        {"--emit-jobs", "--out", "the jobs write their files into --out DIR",
         [](const run_cli& o) { return bool(o.out); }},
        {"--merge", "--out", "the merged reports go to --out DIR",
         [](const run_cli& o) { return bool(o.out); }},
        {"--expect", "--data", "it compares the C of --data's operands, not of random ones",
         [](const run_cli& o) { return bool(o.data); }},
        {"--seed", "random operands (no --data)", "operands from --data are not drawn at random",
         [](const run_cli& o) { return !o.data; }},
    };
    static const std::vector<cli::option_rule<run_cli>> rules = [] {
        std::vector<cli::option_rule<run_cli>> all = own;
        for (const auto& r : cli::energy_option_rules<run_cli, energy_of>())
            all.push_back(r);
        return all;
    }();
    return rules;
}

}  // namespace

cli_outcome parse_run_command_line(int argc, const char* const* argv, run_cli& o) {
    cli_outcome res;
    CLI::App app{
        "systolic-run: runs every layer of a SCALE-Sim topology on the systolic array model, checks each "
        "with the "
        "scoreboard and writes SCALE-Sim-style reports"};
    raw r;
    app.add_option("--topology", o.topology, "SCALE-Sim topology file (GEMM or convolution)");
    app.add_option("--array", o.array,
                   "array size N (an NxN grid) or RxC (R rows of C PEs), or a comma list for a sweep "
                   "(default 32)");
    app.add_option("--sweep", o.sweep, "file of array sizes for a sweep");
    app.add_option("--config", o.config,
                   "SCALE-Sim configuration (.cfg): the array, the dataflow, double-buffered scratchpads and "
                   "the DRAM bandwidth (docs/scale-sim.md)");
    app.add_option("--dataflow", r.dataflow,
                   "what stays in the PEs: " + names_text(dataflow_kind_names) +
                       " (default os), or a comma list for a sweep (docs/dataflows.md)");
    app.add_option("--dtype", r.dtype, "int8 (default), int32, fp32 or bf16");
    app.add_option("--engine", r.engine, "cycle (default) or functional");
    app.add_option("--seed", r.seed, "seed of the random operands (default 1)");
    app.add_option("--data", o.data, "directory of <layer>.a.npy and <layer>.b.npy operands");
    app.add_option("--expect", o.expect,
                   "directory of <layer>.c.npy: each layer's C must equal it (integers) or lie within "
                   "the summation error bound (floats) (docs/networks.md)");
    app.add_option("--out", o.out, "directory for COMPUTE_REPORT.csv, TRAFFIC_REPORT.csv and report.json");
    app.add_option("--jobs", r.jobs, "local processes for a sweep (default 1)");
    app.add_flag("--emit-jobs", o.emit_jobs,
                 "print one command per (layer, array, dataflow) and run nothing");
    app.add_option("--merge", o.merge, "combine the job files of DIR into the reports in --out");
    app.add_option("--job", o.job,
                   "RxC:DF:ID: run only layer ID on the RxC array in dataflow DF (with --job-out)");
    app.add_option("--job-out", o.job_out, "the job file --job writes");
    app.add_option("--max-memory", r.max_memory, "refuse jobs estimated to need more (e.g. 4G)");
    cli::add_log_level_option(app, o.log_level);
    app.add_flag("--no-progress", o.no_progress, "no progress bar even on a terminal");
    app.add_option(
        "--inject", r.inject,
        "plant a known defect in every layer to watch the checks catch it: invalid-padding, no-mask, "
        "global-skew, skip-advance, extra-advance, skip-preload (ws, is), miscount-gated (with --energy)");
    cli::add_energy_options(app, o.energy, r.energy);
    app.footer(cli::option_rules_help(run_option_rules()));
    try {
        app.parse(argc, argv);
        // Each value first, then how the options combine, then what is missing: the first error
        // reported is the first the user can fix, not a required --out behind a mistyped value.
        o.seed = cli::parse_uint("--seed", r.seed);
        const std::int64_t jobs = cli::parse_int("--jobs", r.jobs, 1, 1024);
        o.jobs = std::uint64_t(jobs);
        if (app.count("--max-memory")) o.max_memory = cli::parse_size("--max-memory", r.max_memory);
        const auto dtype = parse_dtype(r.dtype);
        if (!dtype)
            throw usage_error("--dtype must be " + names_text(dtype_names) + ", got '" +
                              cli::one_line(r.dtype) + "'");
        o.dtype = *dtype;
        const auto engine = parse_engine_kind(r.engine);
        if (!engine)
            throw usage_error("--engine must be " + names_text(engine_kind_names) + ", got '" +
                              cli::one_line(r.engine) + "'");
        o.run.engine = *engine;
        o.dataflows = parse_dataflow_list(r.dataflow, "--dataflow");
        cli::convert_energy_options(r.energy, o.energy);
        o.run.count_actions = o.energy.counting();
        const auto f = verify::parse_fault(r.inject);
        if (!f) throw usage_error("--inject: unknown fault '" + cli::one_line(r.inject) + "'");
        o.inject = *f;
        if (*f == verify::fault::clear_between_k)
            throw usage_error("--inject clear-between-k needs K-splitting, which systolic-run does not do");
        if (verify::needs_cycle_engine(*f) && o.run.engine == engine_kind::functional)
            throw usage_error("--inject " + r.inject +
                              " changes how the array is stepped: it needs --engine cycle");
        if (*f == verify::fault::miscount_gated && !o.energy.table)
            throw usage_error(
                "--inject miscount-gated needs --energy: it miscounts the energy account's actions, which "
                "only a run that counts them has");
        if (o.merge) {
            if (!o.topology.empty() || o.emit_jobs || o.job || o.job_out || o.data || o.expect || o.config ||
                o.energy.table)
                throw usage_error(
                    "--merge reads job files only: no --topology, --config, --emit-jobs, --job, --job-out, "
                    "--data, --expect or --energy");
        }
        if (const auto broken = cli::broken_option_rule(
                run_option_rules(), o, [&](const char* name) { return app.count(name) > 0; }))
            throw usage_error(*broken);
        if (o.merge) return res;
        if (app.count("--array") && o.sweep) throw usage_error("--array and --sweep do not go together");
        if (o.config && (app.count("--array") || o.sweep))
            throw usage_error("--config gives the array (ArrayHeight x ArrayWidth): no --array or --sweep");
        if (o.config && app.count("--dataflow"))
            throw usage_error("--config gives the dataflow (Dataflow): no --dataflow");
        if (o.job && (o.emit_jobs || o.out))
            throw usage_error("--job runs one job into --job-out: no --out or --emit-jobs");
        if (o.topology.empty()) throw usage_error("--topology FILE is required (or --merge DIR)");
        if (!o.job && !o.out) throw usage_error("--out DIR is required (or --job with --job-out)");
    } catch (const CLI::CallForHelp&) {
        res.run = false;
        res.out = app.help();
    } catch (const CLI::ParseError& e) {
        res.run = false;
        res.exit_status = 2;
        res.err = "systolic-run: error: " + cli::one_line(cli::parse_error_text(app, e)) + "\n";
    } catch (const usage_error& e) {
        res.run = false;
        res.exit_status = 2;
        res.err = "systolic-run: error: " + cli::one_line(e.what()) + "\n";
    }
    return res;
}

std::vector<array_shape> parse_array_list(const std::string& text, const std::string& what) {
    std::vector<array_shape> out;
    std::string item;
    std::istringstream in(text);
    auto side = [&](const std::string& s, const std::string& whole) -> std::uint64_t {
        if (s.empty() || s.size() > 7 || s.find_first_not_of("0123456789") != std::string::npos)
            throw usage_error(what + ": '" + cli::one_line(whole) + "' is not an array size (N or RxC)");
        const std::uint64_t v = std::stoull(s);
        if (v < 1 || v > max_array)
            throw usage_error(what + ": array side " + s + " is out of range [1, " +
                              std::to_string(max_array) + "]");
        return v;
    };
    while (std::getline(in, item, ',')) {
        const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
        item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
        const auto x = item.find_first_of("xX");
        if (x == std::string::npos) {
            const std::uint64_t n = side(item, item);
            out.push_back({n, n});
            continue;
        }
        out.push_back({side(item.substr(0, x), item), side(item.substr(x + 1), item)});
    }
    if (out.empty() || (!text.empty() && text.back() == ','))
        throw usage_error(what + ": '" + cli::one_line(text) + "' is not a list of array sizes");
    for (std::size_t i = 0; i < out.size(); ++i)
        for (std::size_t j = 0; j < i; ++j)
            if (out[i] == out[j])
                throw usage_error(what + ": array " + array_name(out[i]) + " is given twice");
    return out;
}

std::vector<array_shape> read_sweep_file(const std::string& path) {
    std::istringstream in;
    try {
        in.str(io::read_text_file(path));
    } catch (const io::io_error& e) {
        throw usage_error("--sweep " + std::string(e.what()));
    }
    std::string line, all;
    std::uint64_t n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (const auto hash = line.find('#'); hash != std::string::npos) line.resize(hash);
        for (char& c : line)
            if (c == ' ' || c == '\t' || c == '\r') c = ',';
        std::string cleaned;
        std::istringstream parts(line);
        std::string part;
        while (std::getline(parts, part, ','))
            if (!part.empty()) {
                parse_array_list(part, path + ":" + std::to_string(n));
                all += (all.empty() ? "" : ",") + part;
            }
    }
    if (all.empty()) throw usage_error("--sweep " + path + ": no array sizes in the file");
    return parse_array_list(all, path);
}

std::vector<dataflow_kind> parse_dataflow_list(const std::string& text, const std::string& what) {
    std::vector<dataflow_kind> out;
    std::string item;
    std::istringstream in(text);
    while (std::getline(in, item, ',')) {
        const auto b = item.find_first_not_of(" \t"), e = item.find_last_not_of(" \t");
        item = b == std::string::npos ? "" : item.substr(b, e - b + 1);
        if (item.empty()) continue;  // an empty item makes the whole list bad, below
        const auto df = parse_dataflow_kind(item);
        if (!df)
            throw usage_error(what + " must be " + names_text(dataflow_kind_names) +
                              " (or a comma list of them), got '" + cli::one_line(item) + "'");
        if (std::find(out.begin(), out.end(), *df) != out.end())
            throw usage_error(what + ": dataflow " + item + " is given twice");
        out.push_back(*df);
    }
    if (out.empty() || text.back() == ',' || text.front() == ',' || text.find(",,") != std::string::npos)
        throw usage_error(what + ": '" + cli::one_line(text) + "' is not a list of dataflows (" +
                          names_text(dataflow_kind_names) + ")");
    return out;
}

std::string array_name(const array_shape& a) {
    return std::to_string(a.rows) + "x" + std::to_string(a.cols);
}

std::string job_id(const array_shape& a, dataflow_kind df, std::uint64_t layer_id) {
    return array_name(a) + ":" + to_string(df) + ":" + std::to_string(layer_id);
}

job_ref parse_job(const std::string& text) {
    auto bad = [&] {
        return usage_error("--job '" + cli::one_line(text) + "' is not RxC:DF:ID (or RxC:ID)");
    };
    const auto first = text.find(':'), last = text.rfind(':');
    if (first == std::string::npos) throw bad();
    job_ref j;
    const auto arrays = parse_array_list(text.substr(0, first), "--job");
    if (first != last) {
        const auto df = parse_dataflow_kind(text.substr(first + 1, last - first - 1));
        if (!df)
            throw usage_error("--job '" + cli::one_line(text) + "': the dataflow must be " +
                              names_text(dataflow_kind_names));
        j.dataflow = *df;
    }
    const std::string id = text.substr(last + 1);
    if (arrays.size() != 1 || id.empty() || id.size() > 9 ||
        id.find_first_not_of("0123456789") != std::string::npos)
        throw bad();
    j.array = arrays[0];
    j.layer = std::stoull(id);
    return j;
}

std::string shell_quote(const std::string& word) {
    if (!word.empty() &&
        word.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_./:=,+-@%") ==
            std::string::npos)
        return word;
    std::string out = "'";
    for (char c : word)
        out += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return out + "'";
}

std::string job_file_name(const array_shape& a, dataflow_kind df, std::uint64_t layer_id) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "job-%s-%s-%04llu.json", array_name(a).c_str(), to_string(df),
                  static_cast<unsigned long long>(layer_id));
    return buf;
}

}  // namespace systolic::run
