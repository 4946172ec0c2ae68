// systolic-tb: runs one matrix product on the systolic array model and checks it with the
// scoreboard. Exit status: 0 pass, 1 scoreboard or watchdog failure, 2 bad usage or bad input.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <systemc>

#include "npy.h"
#include "problem.h"
#include "report.h"
#include "systolic/log.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "testbench.h"

namespace {

using namespace systolic;
using namespace systolic::tb;

constexpr int exit_pass = 0;
constexpr int exit_fail = 1;
constexpr int exit_usage = 2;

// Bad usage or bad input: one line on stderr, exit status 2.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct options {
    std::int64_t array = 2;
    std::optional<std::int64_t> m, k, p;
    std::string a_path, b_path, c_out, json;
    std::uint64_t seed = 1;
    std::string order = "row";
    std::string log_level = "warn";
    bool packed = false;
    std::string dtype = "int32";
    std::optional<std::int64_t> k_tile;
    std::string k_policy = "preserve";
    std::string overflow = "wrap";
    std::string out_dtype = "acc";
    std::optional<double> scale;
    std::optional<std::int64_t> zero_point;
    std::optional<std::string> rounding;
    bool quantize_partials = false;
    std::string inject = "none";
    std::string engine = "cycle";
};

// Largest array and operand sizes we accept, so that a typo is an error and not an out-of-memory.
constexpr std::int64_t max_array = 1024;
constexpr std::uint64_t max_bytes = std::uint64_t{8} << 30;

void check_dimension(const char* name, std::int64_t v) {
    if (v <= 0) throw usage_error(std::string(name) + " must be positive, got " + std::to_string(v));
    if (v > 0x7fffffff) throw usage_error(std::string(name) + " is too large (" + std::to_string(v) + ")");
}

// Operands from a .npy file of the format's input dtype; bf16 reads float32 and rounds.
template <class Format>
std::vector<typename Format::operand_type> read_operands(const std::string& path, npy_array& arr) {
    using T = typename Format::operand_type;
    const bool is_float = !Format::is_integer;
    arr = read_matrix(path, Format::operand_descr, is_float ? "float32" : Format::name);
    if constexpr (std::is_same_v<T, bf16>) {
        std::vector<T> out;
        for (float f : as_vector<float>(arr))
            out.push_back(bf16::from_float(f));
        return out;
    } else {
        return as_vector<T>(arr);
    }
}

template <class Format>
problem<Format> problem_from_options(const options& o) {
    using T = typename Format::operand_type;
    const bool have_dims = o.m || o.k || o.p;
    if (o.a_path.empty() != o.b_path.empty()) throw usage_error("--a and --b must be given together");
    problem<Format> pr;
    if (!o.a_path.empty()) {
        npy_array a, b;
        pr.a = read_operands<Format>(o.a_path, a);
        pr.b = read_operands<Format>(o.b_path, b);
        if (a.shape[1] != b.shape[0]) {
            std::ostringstream os;
            os << o.a_path << " is " << a.shape[0] << "x" << a.shape[1] << " but " << o.b_path << " is "
               << b.shape[0] << "x" << b.shape[1] << ": A's columns must equal B's rows";
            throw usage_error(os.str());
        }
        pr.shape = {a.shape[0], a.shape[1], b.shape[1]};
        auto must_match = [](const char* opt, const std::optional<std::int64_t>& given,
                             std::uint64_t actual) {
            if (given && std::uint64_t(*given) != actual)
                throw usage_error(std::string(opt) + " " + std::to_string(*given) +
                                  " disagrees with the input files (" + std::to_string(actual) + ")");
        };
        must_match("--m", o.m, pr.shape.m);
        must_match("--k", o.k, pr.shape.k);
        must_match("--p", o.p, pr.shape.p);
        return pr;
    }
    if (!have_dims) return seed_example<Format>();
    if (!(o.m && o.k && o.p))
        throw usage_error("random data needs all of --m, --k and --p (or give --a and --b)");
    check_dimension("--m", *o.m);
    check_dimension("--k", *o.k);
    check_dimension("--p", *o.p);
    const problem_shape s{std::uint64_t(*o.m), std::uint64_t(*o.k), std::uint64_t(*o.p)};
    const double bytes = (double(s.m) * s.k + double(s.k) * s.p) * sizeof(T) +
                         double(s.m) * s.p * sizeof(typename Format::accumulator_type) * 2;
    if (bytes > double(max_bytes))
        throw usage_error("the matrices need more than 8 GiB; choose smaller --m/--k/--p");
    return random_problem<Format>(s, o.seed);
}

// The run options from the command line, with every combination checked before anything runs.
template <class Format>
run_options make_run_options(const options& o, const problem_shape& shape) {
    run_options ro;
    ro.order = *parse_tile_order(o.order);
    ro.order_seed = o.seed;
    ro.packed = o.packed;
    ro.policy = *parse_k_policy(o.k_policy);
    ro.overflow = *parse_overflow_mode(o.overflow);
    ro.inject = *parse_fault(o.inject);
    ro.engine = *parse_engine_kind(o.engine);
    if (ro.engine == engine_kind::functional && needs_cycle_engine(ro.inject))
        throw usage_error("--inject " + o.inject + " changes how the array is stepped: it needs --engine cycle");
    if (o.k_tile) {
        if (*o.k_tile <= 0) throw usage_error("--k-tile must be positive, got " + std::to_string(*o.k_tile));
        ro.k_tile = std::uint64_t(*o.k_tile);
    }
    if (o.overflow == "saturate" && !Format::is_integer)
        throw usage_error(std::string("--overflow applies to integer formats, not ") + Format::name);

    const bool int8_out = o.out_dtype == "int8";
    if (!int8_out && o.out_dtype != "acc" && o.out_dtype != Format::accumulator_name)
        throw usage_error("--out-dtype must be int8 or acc (" + std::string(Format::accumulator_name) +
                          " for " + Format::name + "), got " + o.out_dtype);
    if (!int8_out && (o.scale || o.zero_point || o.rounding || o.quantize_partials))
        throw usage_error("--scale, --zero-point, --rounding and --quantize-partials need --out-dtype int8");
    if (int8_out) {
        ro.quant.enabled = true;
        ro.quant.scale = o.scale.value_or(1.0);
        if (!(ro.quant.scale > 0) || !std::isfinite(ro.quant.scale))
            throw usage_error("--scale must be a positive finite number");
        const std::int64_t zp = o.zero_point.value_or(0);
        if (zp < -128 || zp > 127)
            throw usage_error("--zero-point must be in [-128, 127], got " + std::to_string(zp));
        ro.quant.zero_point = static_cast<std::int32_t>(zp);
        ro.quant.rounding = *parse_rounding_mode(o.rounding.value_or("nearest-even"));
        ro.quant.per_partial = o.quantize_partials;
        if (o.quantize_partials && !(ro.policy == k_policy::partials && k_chunks(shape.k, ro.k_tile) > 1))
            throw usage_error("--quantize-partials needs --k-policy partials and a --k-tile shorter than K");
    }
    if (ro.inject == fault::clear_between_k &&
        (k_chunks(shape.k, ro.k_tile) < 2 || ro.policy != k_policy::preserve))
        throw usage_error("--inject clear-between-k needs --k-policy preserve and a --k-tile shorter than K");
    return ro;
}

// Enough digits to tell any two values of the type apart (floats print as they round-trip).
template <class T>
std::string value_text(T v) {
    std::ostringstream os;
    if constexpr (std::is_floating_point_v<T>) os.precision(std::numeric_limits<T>::max_digits10);
    os << +v;
    return os.str();
}

template <class T>
std::string matrix_to_string(const std::vector<T>& v, std::uint64_t rows, std::uint64_t cols) {
    std::ostringstream os;
    os << "[";
    for (std::uint64_t r = 0; r < rows; ++r) {
        os << (r ? ",[" : "[");
        for (std::uint64_t c = 0; c < cols; ++c)
            os << (c ? "," : "") << value_text(v[r * cols + c]);
        os << "]";
    }
    os << "]";
    return os.str();
}

template <class Format>
void print_summary(std::ostream& os, const options& o, const run_outcome<Format>& out) {
    const auto& job = out.job;
    const auto& s = job.shape;
    const auto& r = out.result;
    const auto& sb = out.scoreboard;
    os << "systolic-tb: C = A*B with M=" << s.m << " K=" << s.k << " P=" << s.p << " on a " << o.array << "x"
       << o.array << " array, " << Format::name << " operands, " << Format::accumulator_name
       << " accumulators, " << o.order << " tile order\n";
    if (o.inject != "none") os << "injected fault: " << o.inject << "\n";
    if (r.completed()) {
        if (s.m * s.p > 256) {
            os << "C is " << s.m << "x" << s.p << " (not printed; --c-out saves it)\n";
        } else if (job.quant.enabled) {
            os << "C=" << matrix_to_string(out.template c_as<std::int8_t>(), s.m, s.p) << "\n";
        } else {
            os << "C=" << matrix_to_string(out.template c_as<typename Format::accumulator_type>(), s.m, s.p)
               << "\n";
        }
    }
    os << "tiles: " << r.tiles.size() << ", origins";
    const std::size_t shown = std::min<std::size_t>(r.tiles.size(), 16);
    for (std::size_t i = 0; i < shown; ++i)
        os << " (" << r.tiles[i].where.r0 << "," << r.tiles[i].where.c0 << ")";
    if (shown < r.tiles.size()) os << " ... (" << r.tiles.size() - shown << " more)";
    os << "\n";
    if (out.expected.k_chunks > 1) {
        os << "K split: " << out.expected.k_chunks << " chunks of up to " << effective_k_tile(s.k, job.k_tile)
           << ", policy " << to_string(job.policy) << "\n";
    }
    // Counted, not taken from the counting rule: the scoreboard compares the two.
    const char* how = r.engine == engine_kind::cycle ? "" : " (modelled by the functional engine)";
    if (const auto per_tile = uniform_edges_per_tile(r)) {
        os << "advance edges: " << *per_tile << " per tile, " << r.advance_edges << " in total" << how << "\n";
    } else if (!r.tiles.empty()) {
        const auto [lo, hi] = std::minmax_element(r.tiles.begin(), r.tiles.end(), [](const auto& x, const auto& y) {
            return x.advance_edges < y.advance_edges;
        });
        os << "advance edges: the tiles differ, " << lo->advance_edges << " to " << hi->advance_edges
           << " per tile, " << r.advance_edges << " in total" << how << "\n";
    }
    os << "MACs: " << r.macs_padded << " with padding, " << r.macs_real << " real";
    // A failed job did not finish its work: no utilization figure for it.
    if (r.completed() && r.macs_padded)
        os << " (utilization " << 100.0 * double(r.macs_real) / double(r.macs_padded) << "%)";
    os << "\n";
    os << "outputs: " << r.real_outputs << " written, " << r.masked_outputs << " masked\n";
    if (Format::is_integer) {
        os << "overflow (" << to_string(job.overflow) << "): " << r.overflows + r.partial_overflows << "\n";
    }
    if (job.quant.enabled) {
        os << "int8 output: scale " << job.quant.scale << ", zero point " << job.quant.zero_point
           << ", rounding " << to_string(job.quant.rounding)
           << (job.quant.per_partial ? ", partials quantized" : "") << ", " << r.saturated_outputs
           << " saturated";
        if (job.quant.per_partial)
            os << ", " << out.differs_from_quantize_once << " differ from quantizing once";
        os << "\n";
    }
    os << "simulated time: " << (r.end - r.start).to_string() << " (clear " << r.phases.clear.to_string()
       << ", load " << r.phases.load.to_string() << ", advance " << r.phases.advance.to_string() << ", drain "
       << r.phases.drain.to_string() << ")\n";
    os << "scoreboard: " << sb.checked << " checked, " << sb.mismatches << " mismatches, " << sb.writes
       << " writes, " << sb.out_of_range_writes << " out of range, memory outside C "
       << (sb.untouched_ok ? "untouched" : "CHANGED") << "\n";
    for (const auto& e : sb.errors)
        os << "  error: " << e << "\n";
    os << (out.pass() ? "PASS" : "FAIL") << "\n";
}

template <class Format>
int run(const options& o) {
    if (o.array <= 0 || o.array > max_array)
        throw usage_error("--array must be between 1 and " + std::to_string(max_array) + ", got " +
                          std::to_string(o.array));
    const problem<Format> pr = problem_from_options<Format>(o);
    const run_options ro = make_run_options<Format>(o, pr.shape);

    // The model's own time: a quantum that lets the controller run thousands of edges per sync.
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    typename testbench<Format>::config cfg;
    cfg.n = std::size_t(o.array);
    testbench<Format> bench("tb", cfg);
    const auto out = bench.run(pr, ro);

    const bool json_to_stdout = o.json == "-";
    print_summary(json_to_stdout ? std::cerr : std::cout, o, out);

    report_input in;
    in.n = std::uint64_t(o.array);
    in.job = &out.job;
    in.dtype = Format::name;
    in.accumulator_dtype = Format::accumulator_name;
    in.inject = o.inject;
    in.result = &out.result;
    in.scoreboard = &out.scoreboard;
    in.differs_from_quantize_once = out.differs_from_quantize_once;
    const std::string report = make_report(in).dump(2) + "\n";
    if (json_to_stdout) {
        std::cout << report;
    } else if (!o.json.empty()) {
        write_file_atomically(o.json, report);
    }
    // C is saved whenever the job completed, right or wrong, so a failure can be inspected.
    if (!o.c_out.empty() && out.result.completed()) {
        const char* descr = out.job.quant.enabled ? "|i1" : Format::accumulator_descr;
        write_npy(o.c_out, descr, out.job.shape.m, out.job.shape.p, out.c.data(), out.c.size());
    }
    return out.pass() ? exit_pass : exit_fail;
}

int dispatch(const options& o) {
    if (o.dtype == "int8") return run<int8_format>(o);
    if (o.dtype == "fp32") return run<fp32_format>(o);
    if (o.dtype == "bf16") return run<bf16_format>(o);
    return run<int32_format>(o);
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    options o;
    CLI::App app{
        "Runs C = A*B on the tiled systolic-array model and checks every write with the scoreboard.\n"
        "With no options it runs the seeds' example (N=2, 3x3 matrices)."};
    app.option_defaults()->always_capture_default();
    app.add_option("--array", o.array, "Array size N (an N x N grid of PEs)");
    app.add_option("--m", o.m, "Rows of A and C (random data when no --a/--b)");
    app.add_option("--k", o.k, "Columns of A, rows of B (the reduction length)");
    app.add_option("--p", o.p, "Columns of B and C");
    app.add_option("--dtype", o.dtype,
                   "Number format: int8 (int32 accumulators), int32 (int64), fp32, bf16 (fp32)")
        ->check(CLI::IsMember({"int8", "int32", "fp32", "bf16"}));
    app.add_option("--a", o.a_path,
                   "A as a 2-D C-order .npy file (int8, int32, or float32 for fp32 and bf16)")
        ->check(CLI::ExistingFile);
    app.add_option("--b", o.b_path, "B as a 2-D C-order .npy file, same dtype as A")
        ->check(CLI::ExistingFile);
    app.add_option("--c-out", o.c_out, "Write C to this .npy file (accumulator dtype, or int8)");
    app.add_option("--seed", o.seed, "Seed for random data and for --order random");
    app.add_option("--order", o.order, "Tile order")->check(CLI::IsMember({"row", "col", "snake", "random"}));
    app.add_option("--k-tile", o.k_tile, "Split each tile's reduction into chunks of KT terms");
    app.add_option("--k-policy", o.k_policy,
                   "preserve: keep accumulators between chunks; partials: combine wide "
                   "partial sums in memory")
        ->check(CLI::IsMember({"preserve", "partials"}));
    app.add_option("--overflow", o.overflow, "Integer accumulator overflow")
        ->check(CLI::IsMember({"wrap", "saturate"}));
    app.add_option("--out-dtype", o.out_dtype, "C's dtype: acc (the accumulators) or int8 (requantized)");
    app.add_option("--scale", o.scale, "int8 output: q = saturate(round(acc * scale) + zero_point) [1]");
    app.add_option("--zero-point", o.zero_point, "int8 output zero point [0]");
    app.add_option("--rounding", o.rounding, "int8 output rounding [nearest-even]")
        ->check(CLI::IsMember({"nearest-even", "nearest-away", "toward-zero"}));
    app.add_flag("--quantize-partials", o.quantize_partials,
                 "Quantize each K chunk's partial before combining (the seeds' warning, for study)");
    app.add_option("--inject", o.inject, "Plant a known defect to see the testbench catch it")
        ->check(CLI::IsMember(
            {"none", "clear-between-k", "invalid-padding", "no-mask", "global-skew", "skip-advance", "extra-advance"}));
    app.add_option("--engine", o.engine,
                   "cycle: step the array one advance edge at a time; functional: compute each chunk "
                   "with a blocked loop nest (same C, counters modelled)")
        ->check(CLI::IsMember({"cycle", "functional"}));
    app.add_option("--json", o.json, "Write the JSON report to FILE ('-' for stdout)");
    app.add_option("--log-level", o.log_level, "Model log level")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "critical", "off"}));
    app.add_flag("--packed", o.packed, "Pack matrix rows back to back, with no guard bytes or row padding");

    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "systolic-tb: error: " << e.what() << " (see --help)\n";
        return exit_usage;
    }

    try {
        set_log_level(*parse_log_level(o.log_level));
        return dispatch(o);
    } catch (const std::exception& e) {  // usage_error, npy_error, an unwritable output file
        std::cerr << "systolic-tb: error: " << e.what() << "\n";
        return exit_usage;
    }
}

// Our own entry point, so that SystemC's banner is off before SystemC initialises: stdout carries
// only results (and the JSON report with --json -).
int main(int argc, char* argv[]) {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
