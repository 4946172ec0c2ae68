#include "cli_options.h"

#include "cli_choice.h"
#include "cli_suggest.h"
#include "io/text.h"
#include "option_rules.h"
#include "output_options.h"
#include "systolic/fabric_geometry.h"
#include "systolic/log.h"

#include <CLI/CLI.hpp>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>

namespace systolic::tb {
namespace {

// The command lines' shared pieces (cli/).
using cli::add_choice;
using cli::broken_option_rule;
using cli::option_rule;
using cli::option_rules_help;
using cli::parse_error_text;

// The option values as typed, converted after CLI11 has matched them.
struct raw_options {
    std::string array = "2", m, k, p, seed = "1", k_tile, scale, zero_point, max_memory;
    std::string fabric = "1x1x1", link_latency = "1", threads = "1";
    std::string out_dtype = "acc";
    cli::memory_option_text memory;
    cli::energy_option_text energy;
    bool progress = false, no_progress = false;
};

// Arrays along each axis of a fabric: a typo is an error, not an out-of-memory.
constexpr std::size_t max_fabric = 64;

const memory_config& memory_of(const options& o) {
    return o.run.memory;
}

const cli::energy_options& energy_of(const options& o) {
    return o.energy;
}

// Options that change nothing without another (docs/options.md lists them).
// Rules that depend on the job's shape, such as a --k-tile shorter than K, are checked with it.
const std::vector<option_rule<options>>& tb_option_rules() {
    static const std::vector<option_rule<options>> before = {
        {"--vcd-pes", "--vcd", "it picks the PEs the waveform traces",
         [](const options& o) { return bool(o.outputs.vcd); }},
        {"--gtkw", "--vcd", "it is the GTKWave save file of that waveform",
         [](const options& o) { return bool(o.outputs.vcd); }},
        {"--threads", "--fabric with more than one array",
         "threads step a fabric's arrays; one array runs on one",
         [](const options& o) { return o.fabric(); }},
        {"--link-latency", "--fabric with more than one array",
         "it is the latency of the links between arrays", [](const options& o) { return o.fabric(); }},
        {"--k-policy", "--k-tile", "without a K split each tile is one chunk, which both policies run alike",
         [](const options& o) { return o.run.k_tile != 0; }},
        {"--quantize-partials", "--k-policy partials", "only that policy combines partial sums in memory",
         [](const options& o) { return o.run.policy == k_policy::partials; }},
        {"--quantize-partials", "--out-dtype int8", "it quantizes each partial as int8 output",
         [](const options& o) { return o.run.quant.enabled; }},
        {"--scale", "--out-dtype int8", "it scales the accumulators into int8 output",
         [](const options& o) { return o.run.quant.enabled; }},
        {"--zero-point", "--out-dtype int8", "it offsets the int8 output",
         [](const options& o) { return o.run.quant.enabled; }},
        {"--scale-file", "--out-dtype int8", "it scales the accumulators into int8 output",
         [](const options& o) { return o.run.quant.enabled; }},
        {"--zero-point-file", "--out-dtype int8", "it offsets the int8 output",
         [](const options& o) { return o.run.quant.enabled; }},
        {"--rounding", "--out-dtype int8", "it rounds the accumulators into int8 output",
         [](const options& o) { return o.run.quant.enabled; }},
        {"--overflow", "--dtype int8 or int32", "floating-point accumulators neither wrap nor saturate",
         [](const options& o) { return o.dtype == dtype::int8 || o.dtype == dtype::int32; }},
    };
    static const std::vector<option_rule<options>> after = {
        {"--seed", "random data (--m --k --p) or --order random",
         "it seeds the random A and B and the random order",
         [](const options& o) { return (o.m && o.a_path.empty()) || o.run.order == tile_order::random; }},
    };
    static const std::vector<option_rule<options>> rules = [] {
        std::vector<option_rule<options>> all = before;
        for (const auto& r : cli::memory_option_rules<options, memory_of>())
            all.push_back(r);
        for (const auto& r : cli::energy_option_rules<options, energy_of>())
            all.push_back(r);
        all.insert(all.end(), after.begin(), after.end());
        return all;
    }();
    return rules;
}

void convert(const CLI::App& app, const raw_options& raw, options& o) {
    constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
    auto given = [&](const char* name) { return app.count(name) > 0; };
    // Dimensions are range-checked with their own messages later; here they must be integers.
    parse_array_shape("--array", raw.array, o.array_rows, o.array_cols);
    if (given("--m")) o.m = parse_int("--m", raw.m, i64_min, i64_max);
    if (given("--k")) o.k = parse_int("--k", raw.k, i64_min, i64_max);
    if (given("--p")) o.p = parse_int("--p", raw.p, i64_min, i64_max);
    o.seed = parse_uint("--seed", raw.seed);
    o.run.order_seed = o.seed;
    if (given("--k-tile")) {
        const std::int64_t k_tile = parse_int("--k-tile", raw.k_tile, i64_min, i64_max);
        if (k_tile <= 0) throw usage_error("--k-tile must be positive, got " + std::to_string(k_tile));
        o.run.k_tile = std::uint64_t(k_tile);
    }
    quantization& q = o.run.quant;
    if (given("--scale")) q.scale = parse_real("--scale", raw.scale);
    const std::int64_t zero_point =
        given("--zero-point") ? parse_int("--zero-point", raw.zero_point, i64_min, i64_max) : 0;
    if (given("--max-memory")) o.max_memory = parse_size("--max-memory", raw.max_memory);
    cli::convert_memory_options(raw.memory, o.run.memory);
    cli::convert_energy_options(raw.energy, o.energy);
    o.run.count_actions = o.energy.counting();
    const auto fabric = parse_fabric_shape(raw.fabric);
    if (!fabric || fabric->rows > max_fabric || fabric->cols > max_fabric || fabric->depth > max_fabric)
        throw usage_error("--fabric wants RxC or RxCxD, arrays along rows, columns and depth, each 1 to " +
                          std::to_string(max_fabric) + ", got '" + one_line(raw.fabric) + "'");
    o.fabric_rows = std::int64_t(fabric->rows);
    o.fabric_cols = std::int64_t(fabric->cols);
    o.fabric_depth = std::int64_t(fabric->depth);
    o.link_latency = parse_int("--link-latency", raw.link_latency, 1, 1 << 20);
    o.threads = parse_int("--threads", raw.threads, 1, 256);
    if (o.c_out && o.c_out->empty()) throw usage_error("--c-out needs a file name, got ''");
    if (o.json && o.json->empty()) throw usage_error("--json needs a file name (or '-' for stdout), got ''");
    cli::check_output_options(o.outputs);
    if (const auto broken = broken_option_rule(tb_option_rules(), o, given)) throw usage_error(*broken);
    // One scale rule per job: the tensor's or the columns'.
    if (given("--scale-file") && given("--scale"))
        throw usage_error(
            "--scale-file and --scale exclude each other: one scale per column, or one for all");
    if (given("--zero-point-file") && given("--zero-point"))
        throw usage_error(
            "--zero-point-file and --zero-point exclude each other: one zero point per column, or one for "
            "all");
    if (q.per_partial && (given("--scale-file") || given("--zero-point-file")))
        throw usage_error(
            "--quantize-partials takes one scale and zero point: per-column files quantize the complete sum "
            "only");
    if (q.enabled) {
        if (!(q.scale > 0) || !std::isfinite(q.scale))
            throw usage_error("--scale must be a positive finite number");
        if (zero_point < -128 || zero_point > 127)
            throw usage_error("--zero-point must be in [-128, 127], got " + std::to_string(zero_point));
        q.zero_point = static_cast<std::int32_t>(zero_point);
        // The vectors' values come with the operands, their place from plan_memory.
        if (given("--scale-file") || given("--zero-point-file"))
            q.columns = column_vectors{0, given("--zero-point-file")};
    }
    // acc, int8, or the accumulators' own dtype by name (int32 for int8, ...).
    const char* accumulator_name =
        with_format(o.dtype, [](auto format) { return decltype(format)::accumulator_name; });
    if (raw.out_dtype != to_string(output_dtype::int8) && raw.out_dtype != to_string(output_dtype::acc) &&
        raw.out_dtype != accumulator_name)
        throw usage_error("--out-dtype must be int8 or acc (" + std::string(accumulator_name) + " for " +
                          to_string(o.dtype) + "), got " + raw.out_dtype);
    if (raw.progress && raw.no_progress)
        throw usage_error("--progress and --no-progress contradict each other");
    if (raw.progress) o.progress = true;
    if (raw.no_progress) o.progress = false;
}

}  // namespace

namespace {

// systolic-tb's one option table: the app that parses its command line, into `raw` and `o`.
void declare_options(CLI::App& app, raw_options& raw, options& o) {
    app.description(
        "Runs C = A*B on the tiled systolic-array model and checks every write with the scoreboard.\n"
        "With no options it runs the seeds' example (N=2, 3x3 matrices).");
    app.option_defaults()->always_capture_default();
    app.add_option("--array", raw.array, "Array size: N (an N x N grid of PEs) or RxC (R rows of C PEs)")
        ->type_name("N|RxC");
    app.add_option("--m", raw.m, "Rows of A and C (random data when no --a/--b)")->type_name("INT");
    app.add_option("--k", raw.k, "Columns of A, rows of B (the reduction length)")->type_name("INT");
    app.add_option("--p", raw.p, "Columns of B and C")->type_name("INT");
    add_choice(app, "--dtype", o.dtype, dtype_names,
               "Number format: int8 (int32 accumulators), int32 (int64), fp32, bf16 (fp32)");
    app.add_option("--a", o.a_path,
                   "A as a 2-D C-order .npy file (int8, int32, or float32 for fp32 and bf16)")
        ->check(CLI::ExistingFile);
    app.add_option("--b", o.b_path, "B as a 2-D C-order .npy file, same dtype as A")
        ->check(CLI::ExistingFile);
    app.add_option("--c-out", o.c_out, "Write C to this .npy file (accumulator dtype, or int8)");
    app.add_option("--seed", raw.seed, "Seed for random data and for --order random")->type_name("UINT");
    add_choice(app, "--order", o.run.order, tile_order_names, "Tile order");
    app.add_option("--k-tile", raw.k_tile, "Split each tile's reduction into chunks of KT terms")
        ->type_name("INT");
    add_choice(app, "--k-policy", o.run.policy, k_policy_names,
               "preserve: keep accumulators between chunks; partials: combine wide "
               "partial sums in memory");
    add_choice(app, "--overflow", o.run.overflow, overflow_mode_names, "Integer accumulator overflow");
    app.add_option_function<std::string>(
           "--out-dtype",
           [&](const std::string& typed) {
               raw.out_dtype = typed;
               o.run.quant.enabled = typed == to_string(output_dtype::int8);
           },
           "C's dtype: acc (the accumulators) or int8 (requantized)")
        ->type_name("TEXT")
        ->default_str(to_string(output_dtype::acc));
    app.add_option("--scale", raw.scale, "int8 output: q = saturate(round(acc * scale) + zero_point) [1]")
        ->type_name("FLOAT");
    app.add_option("--zero-point", raw.zero_point, "int8 output zero point [0]")->type_name("INT");
    app.add_option("--scale-file", o.scale_file,
                   "int8 output: one scale per column of C, a 1-D .npy file of P float64 or float32")
        ->check(CLI::ExistingFile);
    app.add_option("--zero-point-file", o.zero_point_file,
                   "int8 output: one zero point per column of C, a 1-D .npy file of P int32 or int64")
        ->check(CLI::ExistingFile);
    app.add_option_function<std::string>(
           "--rounding",
           [&](const std::string& typed) {
               if (const auto mode = parse_rounding_mode(typed)) o.run.quant.rounding = *mode;
           },
           std::string("int8 output rounding [") + to_string(rounding_mode::nearest_even) + "]")
        ->check(CLI::IsMember(names(rounding_mode_names)))
        ->type_name("TEXT");
    app.add_flag("--quantize-partials", o.run.quant.per_partial,
                 "Quantize each K chunk's partial before combining (the seeds' warning, for study)");
    add_choice(app, "--inject", o.inject, verify::fault_names,
               "Plant a known defect to see the testbench catch it");
    add_choice(app, "--engine", o.run.engine, engine_kind_names,
               "cycle: step the array one advance edge at a time; functional: compute each chunk "
               "with a blocked loop nest (same C, counters modelled)");
    add_choice(app, "--dataflow", o.run.dataflow, dataflow_kind_names,
               "What stays in the PEs: os keeps C, ws a block of B, is a block of A's transpose "
               "(docs/dataflows.md)");
    app.add_option("--json", o.json, "Write the JSON report to FILE ('-' for stdout)");
    cli::add_output_options(app, o.outputs, {true, true});
    app.add_option(
           "--vcd-pes", o.vcd_pes,
           "PEs traced in the VCD: all, none or R0:R1,C0:C1 (inclusive) [all up to 16x16, none above]")
        ->type_name("SEL");
    app.add_flag(
        "--progress", raw.progress,
        "Show a progress bar on stderr [on when stderr is a terminal and the job takes over a second]");
    app.add_flag("--no-progress", raw.no_progress, "Never show the progress bar");
    app.add_flag("--packed", o.packed, "Pack matrix rows back to back, with no guard bytes or row padding");
    app.add_option("--fabric", raw.fabric,
                   "A fabric of R x C (x D) arrays of --array N that pass A east, B south and partial sums "
                   "along K to their neighbours (docs/fabric.md) [1x1x1: one array]")
        ->type_name("RxC[xD]");
    app.add_option("--link-latency", raw.link_latency,
                   "Edges a token or partial sum takes between arrays [1]")
        ->type_name("L");
    app.add_option("--threads", raw.threads, "Threads that step a fabric's arrays, in groups of L edges [1]")
        ->type_name("T");
    cli::add_memory_options(app, o.run.memory, raw.memory);
    cli::add_energy_options(app, o.energy, raw.energy, {true});
    app.add_option("--max-memory", raw.max_memory,
                   "Refuse jobs estimated to need more than SIZE (e.g. 512M, 4G) [half of physical memory]")
        ->type_name("SIZE");
    app.footer(option_rules_help(tb_option_rules()));
}

}  // namespace

parse_result parse_command_line(int argc, const char* const* argv, options& o) {
    raw_options raw;
    CLI::App app;
    declare_options(app, raw, o);
    parse_result r;
    try {
        app.parse(argc, argv);
        convert(app, raw, o);
    } catch (const CLI::CallForHelp&) {
        r.run = false;
        r.out = app.help();
    } catch (const CLI::ParseError& e) {
        r.run = false;
        r.exit_status = 2;
        r.err = "systolic-tb: error: " + one_line(parse_error_text(app, e)) + "\n";
    } catch (const usage_error& e) {
        r.run = false;
        r.exit_status = 2;
        r.err = "systolic-tb: error: " + one_line(e.what()) + "\n";
    }
    return r;
}

std::vector<option_info> option_table() {
    raw_options raw;
    options o;
    CLI::App app;
    declare_options(app, raw, o);
    std::vector<option_info> table;
    for (const CLI::Option* opt : app.get_options()) {
        if (opt->get_lnames().empty()) continue;
        option_info i;
        i.flag = "--" + opt->get_lnames().front();
        i.help = opt->get_description();
        if (opt->get_type_size() != 0) {
            // The value's name as --help gives it, then what its validators say: ":{a,b}" for a
            // set of choices (CLI::IsMember), ":FILE" for a file that must exist (CLI::ExistingFile).
            std::string spec = opt->get_type_name();
            const std::size_t brace = spec.find(":{");
            if (brace != std::string::npos && spec.back() == '}') {
                const std::string list = spec.substr(brace + 2, spec.size() - brace - 3);
                for (std::size_t from = 0; from <= list.size();) {
                    const std::size_t comma = std::min(list.find(',', from), list.size());
                    i.choices.push_back(list.substr(from, comma - from));
                    from = comma + 1;
                }
                spec.erase(brace);
            } else if (spec.size() > 5 && spec.compare(spec.size() - 5, 5, ":FILE") == 0) {
                i.existing_file = true;
                spec.erase(spec.size() - 5);
            }
            i.type = spec;
            i.default_value = opt->get_default_str();
        }
        table.push_back(std::move(i));
    }
    return table;
}

}  // namespace systolic::tb
