// systolic-tb: runs one matrix product on the systolic array model and checks it with the
// scoreboard. Exit status: 0 pass, 1 scoreboard or watchdog failure, 2 bad usage or bad input.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <systemc>

#include "npy.h"
#include "problem.h"
#include "report.h"
#include "systolic/log.h"
#include "systolic/number_format.h"
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
};

// Largest array and operand sizes we accept, so that a typo is an error and not an out-of-memory.
constexpr std::int64_t max_array = 1024;
constexpr std::uint64_t max_bytes = std::uint64_t{8} << 30;

void check_dimension(const char* name, std::int64_t v) {
    if (v <= 0) throw usage_error(std::string(name) + " must be positive, got " + std::to_string(v));
    if (v > 0x7fffffff) throw usage_error(std::string(name) + " is too large (" + std::to_string(v) + ")");
}

template <class Format>
problem<Format> make_problem(const options& o) {
    using T = typename Format::operand_type;
    const bool have_dims = o.m || o.k || o.p;
    if (o.a_path.empty() != o.b_path.empty()) throw usage_error("--a and --b must be given together");
    problem<Format> pr;
    if (!o.a_path.empty()) {
        const auto a = read_matrix(o.a_path, "<i4", Format::name);
        const auto b = read_matrix(o.b_path, "<i4", Format::name);
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
        pr.a = as_vector<T>(a);
        pr.b = as_vector<T>(b);
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
                         double(s.m) * s.p * sizeof(typename Format::accumulator_type);
    if (bytes > double(max_bytes))
        throw usage_error("the matrices need more than 8 GiB; choose smaller --m/--k/--p");
    return random_problem<Format>(s, o.seed);
}

template <class T>
std::string matrix_to_string(const std::vector<T>& v, std::uint64_t rows, std::uint64_t cols) {
    std::ostringstream os;
    os << "[";
    for (std::uint64_t r = 0; r < rows; ++r) {
        os << (r ? ",[" : "[");
        for (std::uint64_t c = 0; c < cols; ++c)
            os << (c ? "," : "") << +v[r * cols + c];
        os << "]";
    }
    os << "]";
    return os.str();
}

std::string ns_string(const sc_core::sc_time& t) {
    return t.to_string();
}

template <class Format>
void print_summary(std::ostream& os, const options& o, const run_outcome<Format>& out) {
    const auto& s = out.job.shape;
    const auto& r = out.result;
    const auto& sb = out.scoreboard;
    os << "systolic-tb: C = A*B with M=" << s.m << " K=" << s.k << " P=" << s.p << " on a " << o.array << "x"
       << o.array << " array, " << Format::name << " operands, " << Format::accumulator_name
       << " accumulators, " << o.order << " tile order\n";
    if (r.completed()) {
        if (s.m * s.p <= 256) {
            os << "C=" << matrix_to_string(out.c, s.m, s.p) << "\n";
        } else {
            os << "C is " << s.m << "x" << s.p << " (not printed; --c-out saves it)\n";
        }
    }
    os << "tiles: " << r.tiles.size() << ", origins";
    const std::size_t shown = std::min<std::size_t>(r.tiles.size(), 16);
    for (std::size_t i = 0; i < shown; ++i)
        os << " (" << r.tiles[i].where.r0 << "," << r.tiles[i].where.c0 << ")";
    if (shown < r.tiles.size()) os << " ... (" << r.tiles.size() - shown << " more)";
    os << "\n";
    os << "advance edges: " << out.expected.advance_edges_per_tile << " per tile, " << r.advance_edges
       << " in total\n";
    os << "MACs: " << r.macs_padded << " with padding, " << r.macs_real << " real";
    if (r.macs_padded) os << " (utilization " << 100.0 * double(r.macs_real) / double(r.macs_padded) << "%)";
    os << "\n";
    os << "outputs: " << r.real_outputs << " written, " << r.masked_outputs << " masked\n";
    os << "simulated time: " << ns_string(r.end - r.start) << " (clear " << ns_string(r.phases.clear)
       << ", load " << ns_string(r.phases.load) << ", advance " << ns_string(r.phases.advance) << ", drain "
       << ns_string(r.phases.drain) << ")\n";
    os << "scoreboard: " << sb.checked << " checked, " << sb.mismatches << " mismatches, " << sb.writes
       << " writes, " << sb.out_of_range_writes << " out of range, memory outside C "
       << (sb.untouched_ok ? "untouched" : "CHANGED") << "\n";
    for (const auto& e : sb.errors)
        os << "  error: " << e << "\n";
    os << (out.pass() ? "PASS" : "FAIL") << "\n";
}

template <class Format>
int run(const options& o) {
    const auto order = parse_tile_order(o.order);
    if (o.array <= 0 || o.array > max_array)
        throw usage_error("--array must be between 1 and " + std::to_string(max_array) + ", got " +
                          std::to_string(o.array));
    const problem<Format> pr = make_problem<Format>(o);

    // The model's own time: a quantum that lets the controller run thousands of edges per sync.
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    typename testbench<Format>::config cfg;
    cfg.n = std::size_t(o.array);
    testbench<Format> bench("tb", cfg);
    run_options ro;
    ro.order = *order;
    ro.order_seed = o.seed;
    ro.packed = o.packed;
    const auto out = bench.run(pr, ro);

    const bool json_to_stdout = o.json == "-";
    print_summary(json_to_stdout ? std::cerr : std::cout, o, out);

    report_input in{std::uint64_t(o.array), out.job.shape, Format::name, o.order, &out.result,
                    &out.scoreboard};
    const std::string report = make_report(in).dump(2) + "\n";
    if (json_to_stdout) {
        std::cout << report;
    } else if (!o.json.empty()) {
        write_file_atomically(o.json, report);
    }
    // C is saved whenever the job completed, right or wrong, so a failure can be inspected.
    if (!o.c_out.empty() && out.result.completed()) {
        write_npy(o.c_out, "<i8", out.job.shape.m, out.job.shape.p, out.c.data(),
                  out.c.size() * sizeof(typename Format::accumulator_type));
    }
    return out.pass() ? exit_pass : exit_fail;
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
    app.add_option("--a", o.a_path, "A as a 2-D int32 C-order .npy file")->check(CLI::ExistingFile);
    app.add_option("--b", o.b_path, "B as a 2-D int32 C-order .npy file")->check(CLI::ExistingFile);
    app.add_option("--c-out", o.c_out, "Write C (int64) to this .npy file");
    app.add_option("--seed", o.seed, "Seed for random data and for --order random");
    app.add_option("--order", o.order, "Tile order")->check(CLI::IsMember({"row", "col", "snake", "random"}));
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
        return run<int32_format>(o);
    } catch (const usage_error& e) {
        std::cerr << "systolic-tb: error: " << e.what() << "\n";
        return exit_usage;
    } catch (const npy_error& e) {
        std::cerr << "systolic-tb: error: " << e.what() << "\n";
        return exit_usage;
    } catch (const std::exception& e) {
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
