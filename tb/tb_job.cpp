// One systolic-tb job from its options (tb_job.h).
#include "tb_job.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <limits>
#include <optional>
#include <sstream>
#include <string>
#include <systemc>

#include <unistd.h>

#include "allocating.h"
#include "cli_options.h"
#include "column_files.h"
#include "io/npy.h"
#include "io/output_set.h"
#include "io/process.h"
#include "memory_estimate.h"
#include "observer_outputs.h"
#include "progress_bar.h"
#include "report.h"
#include "systolic/energy/accelergy.h"
#include "systolic/energy/price.h"
#include "systolic/format_instances.h"
#include "systolic/log.h"
#include "systolic/memory_system.h"
#include "systolic/number_format.h"
#include "systolic/observe/observer_fanout.h"
#include "systolic/observe/pe_selection.h"
#include "systolic/observe/trace_observer.h"
#include "systolic/observe/vcd_observer.h"
#include "systolic/quantize.h"
#include "systolic/verify/memory_plan.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/testbench.h"
#include "time_text.h"

namespace systolic::tb {

using namespace systolic::observe;
using namespace systolic::verify;
using cli::format_time;

namespace {

// Largest array we accept, so that a typo is an error and not an out-of-memory.
constexpr std::int64_t max_array = 1024;

void check_dimension(const char* name, std::int64_t v) {
    if (v <= 0) throw usage_error(std::string(name) + " must be positive, got " + std::to_string(v));
    if (v > 0x7fffffff) throw usage_error(std::string(name) + " is too large (" + std::to_string(v) + ")");
}

// Operands from a .npy file of the format's input dtype; bf16 reads float32 and rounds.
template <class Format>
std::vector<typename Format::operand_type> read_operands(const std::string& path, io::npy_array& arr) {
    using T = typename Format::operand_type;
    const bool is_float = !Format::is_integer;
    arr = io::read_matrix(path, Format::operand_descr, is_float ? "float32" : Format::name);
    std::vector<T> out;
    if constexpr (std::is_same_v<T, bf16>) {
        const std::vector<float> values = io::as_vector<float>(arr);
        out.reserve(values.size());
        for (float f : values)
            out.push_back(bf16::from_float(f));
    } else {
        out = io::as_vector<T>(arr);
    }
    std::vector<std::uint8_t>().swap(arr.data);  // the raw bytes are not needed any more; the shape is
    return out;
}

// A's columns must equal B's rows.
void check_chain(const options& o, const io::npy_array& a, const io::npy_array& b) {
    if (a.shape[1] != b.shape[0]) {
        std::ostringstream os;
        os << o.a_path << " is " << a.shape[0] << "x" << a.shape[1] << " but " << o.b_path << " is "
           << b.shape[0] << "x" << b.shape[1] << ": A's columns must equal B's rows";
        throw usage_error(os.str());
    }
}

// The job's shape from the options or the input files' headers, before any data is read.
template <class Format>
std::optional<problem_shape> planned_shape(const options& o) {
    if (!o.a_path.empty() && !o.b_path.empty()) {
        const char* what = Format::is_integer ? Format::name : "float32";
        const auto a = io::read_matrix_header(o.a_path, Format::operand_descr, what);
        const auto b = io::read_matrix_header(o.b_path, Format::operand_descr, what);
        check_chain(o, a, b);
        return problem_shape{a.shape[0], a.shape[1], b.shape[1]};
    }
    if (o.a_path.empty() && o.b_path.empty() && !o.m && !o.k && !o.p) return seed_example<Format>().shape;
    if (o.m && o.k && o.p && *o.m > 0 && *o.k > 0 && *o.p > 0)
        return problem_shape{std::uint64_t(*o.m), std::uint64_t(*o.k), std::uint64_t(*o.p)};
    return std::nullopt;  // options that problem_from_options refuses
}

// The memory the job will need, refused when over --max-memory (default: a share of physical memory).
template <class Format>
memory_estimate check_memory(const options& o, const problem_shape& s) {
    memory_job mj;
    mj.m = s.m;
    mj.k = s.k;
    mj.p = s.p;
    mj.rows = std::uint64_t(o.array_rows);
    mj.cols = std::uint64_t(o.array_cols);
    mj.fabric_rows = std::uint64_t(o.fabric_rows);
    mj.fabric_cols = std::uint64_t(o.fabric_cols);
    mj.fabric_depth = std::uint64_t(o.fabric_depth);
    mj.operand_bytes = sizeof(typename Format::operand_type);
    mj.file_bytes = o.a_path.empty() ? 0 : (Format::is_integer ? mj.operand_bytes : 4);
    mj.accumulator_bytes = sizeof(typename Format::accumulator_type);
    mj.output_bytes = output_size(o.run.quant, mj.accumulator_bytes);
    mj.k_tile = o.run.k_tile;
    mj.partial_buffer = o.run.policy == k_policy::partials && mj.k_tile > 0 && mj.k_tile < s.k;
    mj.per_partial = o.run.quant.per_partial;
    mj.packed = o.packed;
    mj.json_report = bool(o.json);
    describe_engine<Format>(mj, std::uint64_t(o.link_latency));
    if (o.outputs.vcd)
        mj.vcd_signals =
            6 * parse_pe_selection(o.vcd_pes, std::size_t(o.array_rows), std::size_t(o.array_cols)).count();
    const memory_estimate est = estimate_memory(mj);
    memory_budget budget;
    budget.estimate = est.total;
    budget.limit = o.max_memory ? *o.max_memory : default_memory_limit();
    budget.limit_given = bool(o.max_memory);
    std::string parts;
    for (std::size_t i = 0; i < est.parts.size() && i < 2; ++i)
        parts += (i ? ", " : "") + est.parts[i].first + " " + format_bytes(est.parts[i].second);
    if (const std::string refusal = memory_refusal("the job", " (" + parts + ")", budget); !refusal.empty())
        throw usage_error(refusal);
    set_memory_budget(budget);
    return est;
}

template <class Format>
problem<Format> problem_from_options(const options& o) {
    const bool have_dims = o.m || o.k || o.p;
    if (o.a_path.empty() != o.b_path.empty()) throw usage_error("--a and --b must be given together");
    problem<Format> pr;
    if (!o.a_path.empty()) {
        io::npy_array a, b;
        pr.a = allocating("reading --a " + o.a_path, [&] { return read_operands<Format>(o.a_path, a); });
        pr.b = allocating("reading --b " + o.b_path, [&] { return read_operands<Format>(o.b_path, b); });
        check_chain(o, a, b);
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
    return allocating("generating random A and B (" + std::to_string(s.m) + "x" + std::to_string(s.k) +
                          " and " + std::to_string(s.k) + "x" + std::to_string(s.p) + ")",
                      [&] { return random_problem<Format>(s, o.seed); });
}

// --scale-file and --zero-point-file into the problem's per-column vectors (column_files.h).
template <class Format>
void read_column_files(const options& o, problem<Format>& pr) {
    const std::uint64_t p = pr.shape.p;
    if (!o.scale_file.empty()) pr.column_scales = read_column_scales(o.scale_file, p);
    if (!o.zero_point_file.empty()) {
        pr.column_zero_points = read_column_zero_points(o.zero_point_file, p);
        // Zero points per column and one scale for all: the tensor's scale for every column.
        if (o.scale_file.empty()) pr.column_scales.assign(p, o.run.quant.scale);
    }
}

// The rules for the run options that need the job's shape (parsing and check_options check the rest).
void check_run_options(const options& o, const problem_shape& shape) {
    const run_options& run = o.run;
    if (run.quant.per_partial && !(run.policy == k_policy::partials && k_chunks(shape.k, run.k_tile) > 1))
        throw usage_error("--quantize-partials needs --k-policy partials and a --k-tile shorter than K");
    if (o.inject == fault::clear_between_k &&
        (k_chunks(shape.k, run.k_tile) < 2 || run.policy != k_policy::preserve))
        throw usage_error("--inject clear-between-k needs --k-policy preserve and a --k-tile shorter than K");
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

// Whether the job has scratchpads or a bandwidth limit, so that the summary shows the memory system.
bool has_memory_system(const memory_config& m) {
    return m.buffers != buffer_mode::none || m.dram_bandwidth != 0;
}

// --energy's table, read and tried on the job's format and node before anything runs: a file that
// is no table, a format it does not price or a node outside the scaling's fit is one line (exit 2).
std::optional<energy::energy_table> energy_table_of(const options& o) {
    if (!o.energy.table) return std::nullopt;
    energy::energy_table table = energy::load_table(*o.energy.table);
    energy::check_table(table, o.energy.tech_node, o.dtype);
    return table;
}

// C is printed in full up to a size a terminal holds on a line or two.
constexpr std::uint64_t max_printed_c = 64;

template <class Format>
void print_summary(std::ostream& os, const options& o, const job_check<Format>& out,
                   const energy::energy_report* energy) {
    const auto& job = out.job;
    const auto& s = job.shape;
    const auto& r = out.result;
    const auto& sb = out.scoreboard;
    os << "systolic-tb: C = A*B with M=" << s.m << " K=" << s.k << " P=" << s.p << " on a ";
    if (o.fabric()) os << o.fabric_rows << "x" << o.fabric_cols << "x" << o.fabric_depth << " fabric of ";
    os << o.array_rows << "x" << o.array_cols << (o.fabric() ? " arrays, " : " array, ") << Format::name
       << " operands, " << Format::accumulator_name << " accumulators, " << to_string(o.run.order)
       << " tile order\n";
    if (o.inject != fault::none) os << "injected fault: " << to_string(o.inject) << "\n";
    if (r.completed()) {
        if (s.m * s.p > max_printed_c) {
            os << "C: " << s.m << "x" << s.p << ", not printed (over " << max_printed_c << " elements); "
               << (o.c_out ? "--c-out " + *o.c_out + " holds it" : "write it with --c-out FILE") << "\n";
        } else if (job.run.quant.enabled) {
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
    if (is_stationary(job.run.dataflow)) {
        os << "dataflow " << to_string(job.run.dataflow) << ": " << out.expected.k_chunks << " fold"
           << (out.expected.k_chunks == 1 ? "" : "s") << " of up to "
           << stationary_of(s, {std::uint64_t(o.array_rows), std::uint64_t(o.array_cols)}, job.run.k_tile,
                            job.run.dataflow)
                  .fold_terms
           << " terms per tile\n";
    } else if (out.expected.k_chunks > 1) {
        os << "K split: " << out.expected.k_chunks << " chunks of up to "
           << effective_k_tile(s.k, job.run.k_tile) << ", policy " << to_string(job.run.policy) << "\n";
    }
    // Counted, not taken from the counting rule: the scoreboard compares the two.
    const char* how = r.engine == engine_kind::cycle ? "" : " (modelled by the functional engine)";
    if (const auto per_tile = uniform_edges_per_tile(r)) {
        os << "advance edges: " << *per_tile << " per tile, " << r.advance_edges << " in total" << how
           << "\n";
    } else if (!r.tiles.empty()) {
        const auto [lo, hi] = std::minmax_element(
            r.tiles.begin(), r.tiles.end(),
            [](const auto& x, const auto& y) { return x.advance_edges < y.advance_edges; });
        os << "advance edges: the tiles differ, " << lo->advance_edges << " to " << hi->advance_edges
           << " per tile, " << r.advance_edges << " in total" << how << "\n";
    }
    if (is_stationary(r.dataflow)) os << "preload edges: " << r.preload_edges << " in total" << how << "\n";
    os << "MACs: " << r.macs_padded << " with padding, " << r.macs_real << " real";
    // A failed job did not finish its work: no utilization figure for it.
    if (r.completed() && r.macs_padded)
        os << " (utilization " << 100.0 * double(r.macs_real) / double(r.macs_padded) << "%)";
    os << "\n";
    os << "outputs: " << r.real_outputs << " written, " << r.masked_outputs << " masked\n";
    if (const auto& f = out.fabric) {
        os << "fabric: " << f->passes << " pass" << (f->passes == 1 ? "" : "es") << ", link latency "
           << f->link_latency << ", " << f->threads << " thread" << (f->threads == 1 ? "" : "s")
           << "; halo words A " << f->halo_words("a") << ", B " << f->halo_words("b") << ", C "
           << f->halo_words("c") << "\n";
        // The reuse: what the same job reads on one N x N array.
        os << "memory: A read " << r.traffic.a_read << " bytes, B read " << r.traffic.b_read << " (one "
           << f->n << "x" << f->n << " array: " << f->single_array.a_read << " and " << f->single_array.b_read
           << "), C written " << r.traffic.c_written << "\n";
    }
    if (Format::is_integer) {
        os << "overflow (" << to_string(job.run.overflow) << "): " << r.overflows + r.partial_overflows
           << "\n";
    }
    if (job.run.quant.enabled) {
        if (job.run.quant.columns)
            os << "int8 output: scale per column, zero point "
               << (job.run.quant.columns->zero_points ? "per column"
                                                      : std::to_string(job.run.quant.zero_point));
        else
            os << "int8 output: scale " << job.run.quant.scale << ", zero point " << job.run.quant.zero_point;
        os << ", rounding " << to_string(job.run.quant.rounding)
           << (job.run.quant.per_partial ? ", partials quantized" : "") << ", " << r.saturated_outputs
           << " saturated";
        if (job.run.quant.per_partial)
            os << ", " << out.differs_from_quantize_once << " differ from quantizing once";
        os << "\n";
    }
    // Without scratchpads or a bandwidth limit nothing overlaps or waits: the lines stay as they were.
    const bool memory_shown = has_memory_system(job.run.memory);
    os << "simulated time: " << format_time(r.end - r.start) << " (clear " << format_time(r.phases.clear)
       << ", load " << format_time(r.phases.load);
    if (is_stationary(r.dataflow)) os << ", preload " << format_time(r.phases.preload);
    os << ", advance " << format_time(r.phases.advance) << ", drain " << format_time(r.phases.drain);
    if (memory_shown) os << ", stall " << format_time(r.phases.stall);
    os << ")\n";
    if (memory_shown) os << memory_summary(job.run.memory, r.memory);
    if (energy) os << energy::summary(*energy);
    os << "scoreboard: " << sb.checked << " checked, " << sb.mismatches << " mismatches, " << sb.writes
       << " writes, " << sb.out_of_range_writes << " out of range, memory outside C "
       << (sb.untouched_ok ? "untouched" : "CHANGED") << "\n";
    for (const auto& e : sb.errors)
        os << "  error: " << e << "\n";
    os << (out.pass() ? "PASS" : "FAIL") << "\n";
}

// The outputs the options ask for, checked before anything runs.
std::vector<io::named_path> planned_outputs(const options& o) {
    std::vector<io::named_path> outputs;
    if (o.c_out) outputs.push_back({"--c-out", *o.c_out});
    if (o.json && *o.json != "-") outputs.push_back({"--json", *o.json});
    if (o.energy.action_counts) outputs.push_back({"--action-counts", *o.energy.action_counts});
    return outputs;
}

// Writes every output, or none: files go to temporaries first, then stdout, and only when all of
// that worked are the files renamed into place (io_error otherwise, every temporary removed).
template <class Format>
void write_outputs(const options& o, const job_check<Format>& out, const std::string& summary,
                   const std::string& report, const std::string& action_counts, io::output_set& files,
                   bool to_stdout) {
    const bool json_to_stdout = o.json && *o.json == "-";
    std::string c_header;
    // C is saved whenever the job completed, right or wrong, so a failure can be inspected.
    if (o.c_out && out.result.completed()) {
        const char* descr = out.job.run.quant.enabled ? "|i1" : Format::accumulator_descr;
        c_header = io::npy_header(*o.c_out, descr, out.job.shape.m, out.job.shape.p);
        files.set(*o.c_out,
                  {c_header, std::string_view(reinterpret_cast<const char*>(out.c.data()), out.c.size())});
    }
    if (o.json && !json_to_stdout) files.set(*o.json, {report});
    // The counts of a job that completed, as for C.
    if (o.energy.action_counts && out.result.completed()) files.set(*o.energy.action_counts, {action_counts});
    files.prepare();
    if (to_stdout) {
        if (json_to_stdout) std::cerr << summary;
        io::write_stdout(json_to_stdout ? report : summary);
    }
    files.commit();
}

// Ends the job at the plan step after job_reply::stop is set, by the controller's own abort (at step
// granularity, so it costs nothing per edge).
template <class Format>
class stop_observer final : public edge_observer<Format> {
public:
    stop_observer(const std::atomic<int>& flag, tile_controller<Format>& controller)
        : m_flag(flag), m_controller(controller) {}
    bool wants_edges() const override { return false; }
    void on_edge(const edge_event<Format>&) override {}
    void on_step_begin(const step_event<Format>&) override { poll(); }
    void on_step_end(const step_event<Format>&) override { poll(); }

private:
    void poll() {
        if (m_flag.load(std::memory_order_relaxed) != 0) m_controller.abort();
    }
    const std::atomic<int>& m_flag;
    tile_controller<Format>& m_controller;
};

// Before anything is written: a stopped job throws, and the output_set removes the temporaries.
void throw_if_stopped(const job_reply* reply) {
    if (reply && reply->stop)
        if (const int sig = reply->stop->load()) throw job_stopped(sig);
}

}  // namespace

void check_options(const options& o) {
    if (o.array_rows <= 0 || o.array_rows > max_array || o.array_cols <= 0 || o.array_cols > max_array)
        throw usage_error("--array must be between 1 and " + std::to_string(max_array) + ", got " +
                          array_shape_text(o.array_rows, o.array_cols));
    if (o.run.engine == engine_kind::functional && needs_cycle_engine(o.inject))
        throw usage_error(std::string("--inject ") + to_string(o.inject) +
                          " changes how the array is stepped: it needs --engine cycle");
    if (!fault_applies(o.inject, o.run.dataflow))
        throw usage_error(std::string("--inject ") + to_string(o.inject) + " does not exist in --dataflow " +
                          to_string(o.run.dataflow));
    if (o.outputs.vcd && o.run.engine == engine_kind::functional)
        throw usage_error(
            "--vcd needs --engine cycle: the functional engine computes a chunk without "
            "stepping the array, so there are no edges to dump");
    if (is_stationary(o.run.dataflow)) {
        const char* df = to_string(o.run.dataflow);
        if (o.fabric())
            throw usage_error(std::string("--dataflow ") + df +
                              " needs one array (no --fabric): the fabric's links carry os operands");
        if (o.run.policy == k_policy::partials)
            throw usage_error(std::string("--dataflow ") + df +
                              " combines its folds in the accumulators: --k-policy partials is for os");
    }
    if (o.fabric() && o.run.engine == engine_kind::functional)
        throw usage_error(
            "--fabric needs --engine cycle: the functional engine does not step arrays, so "
            "it could not count what crosses the links");
    if (o.fabric() && o.array_rows != o.array_cols)
        throw usage_error(
            "--fabric needs square arrays (--array N): a K block is N terms long, got --array " +
            array_shape_text(o.array_rows, o.array_cols));
    parse_pe_selection(o.vcd_pes, std::size_t(o.array_rows), std::size_t(o.array_cols));

    if (o.inject == fault::miscount_gated && !o.energy.counting())
        throw usage_error(
            "--inject miscount-gated needs --energy or --action-counts: it miscounts the energy account's "
            "actions, which only a job that counts them has");
    if (o.fabric() && has_memory_system(o.run.memory))
        throw usage_error(
            "--buffers double and --dram-bandwidth need one array (no --fabric): a fabric's arrays "
            "pass operands to each other, the memory system feeds one array (docs/memory.md)");
}

template <class Format>
typename testbench<Format>::config bench_config(const options& o) {
    typename testbench<Format>::config cfg;
    cfg.rows = std::size_t(o.array_rows);
    cfg.cols = std::size_t(o.array_cols);
    cfg.fabric = {std::size_t(o.fabric_rows), std::size_t(o.fabric_cols), std::size_t(o.fabric_depth)};
    cfg.link_latency = std::uint64_t(o.link_latency);
    cfg.threads = unsigned(o.threads);
    return cfg;
}

void check_job_plan(const options& o) {
    check_options(o);
    if (!(o.m && o.k && o.p)) return;
    check_dimension("--m", *o.m);
    check_dimension("--k", *o.k);
    check_dimension("--p", *o.p);
    const problem_shape s{std::uint64_t(*o.m), std::uint64_t(*o.k), std::uint64_t(*o.p)};
    with_format(o.dtype, [&](auto format) { check_memory<decltype(format)>(o, s); });
}

template <class Format>
int run_job(const options& o, const bench_source<Format>& bench_of, const problem<Format>* operands,
            job_reply* reply) {
    check_options(o);
    // Every output is checked, and its temporary created, before anything runs.
    io::output_set files;
    if (!o.a_path.empty()) files.add_input({"--a", o.a_path});
    if (!o.b_path.empty()) files.add_input({"--b", o.b_path});
    if (!o.scale_file.empty()) files.add_input({"--scale-file", o.scale_file});
    if (!o.zero_point_file.empty()) files.add_input({"--zero-point-file", o.zero_point_file});
    for (const io::named_path& out : planned_outputs(o))
        files.add(out);
    cli::observer_outputs waves(o.outputs, "systolic-tb");
    waves.plan(files);
    memory_estimate estimate;
    if (operands) {
        const problem_shape& s = operands->shape;
        check_dimension("--m", std::int64_t(s.m));
        check_dimension("--k", std::int64_t(s.k));
        check_dimension("--p", std::int64_t(s.p));
        if (o.m != std::int64_t(s.m) || o.k != std::int64_t(s.k) || o.p != std::int64_t(s.p) ||
            !o.a_path.empty() || !o.b_path.empty())
            throw usage_error("the operands are " + std::to_string(s.m) + "x" + std::to_string(s.k) +
                              " and " + std::to_string(s.k) + "x" + std::to_string(s.p) +
                              ": give that --m, --k and --p, and no --a or --b");
        estimate = check_memory<Format>(o, s);
    } else if (const auto shape = planned_shape<Format>(o)) {
        estimate = check_memory<Format>(o, *shape);
    }

    const pe_selection traced =
        parse_pe_selection(o.vcd_pes, std::size_t(o.array_rows), std::size_t(o.array_cols));
    const std::optional<energy::energy_table> table = energy_table_of(o);

    // The per-column vectors join the operands: a caller's are copied to take them.
    const bool column_files = !o.scale_file.empty() || !o.zero_point_file.empty();
    problem<Format> own;
    if (!operands) own = problem_from_options<Format>(o);
    if (operands && column_files) own = *operands;
    if (column_files) read_column_files(o, own);
    const problem<Format>& pr = operands && !column_files ? *operands : own;
    check_run_options(o, pr.shape);
    job_options ro;
    ro.run = o.run;
    ro.packed = o.packed;
    ro.inject = o.inject;
    // Scratchpads too small for one tile of this job: one line, before the array is built.
    if (const std::string err = systolic::check_memory(
            ro.run.memory,
            plan_memory(pr.shape, ro, 0, sizeof(typename Format::operand_type),
                        sizeof(typename Format::accumulator_type)),
            std::size_t(o.array_rows), std::size_t(o.array_cols), sizeof(typename Format::operand_type),
            sizeof(typename Format::accumulator_type));
        !err.empty())
        throw usage_error(err);

    // The model's own time: a quantum that lets the controller run thousands of edges per sync.
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    const auto cfg = bench_config<Format>(o);
    testbench<Format>* bench =
        allocating("building the " + std::to_string(o.array_rows) + "x" + std::to_string(o.array_cols) +
                       " array" + (o.fabric() ? "s of the " + to_string(cfg.fabric) + " fabric" : ""),
                   [&] { return &bench_of(cfg); });
    // Waveform, timeline and progress bar: observers of the controller, set only when asked for.
    // The VCD and the trace stream into temporaries that are renamed into place with the other outputs.
    observer_fanout<Format> observers;
    std::unique_ptr<vcd_observer<Format>> vcd_obs;
    std::unique_ptr<trace_observer<Format>> trace_obs;
    std::unique_ptr<cli::progress_observer<Format>> bar_obs;
    const std::string controller_name = bench->controller.name();
    waves.open(files);
    if (vcd_writer* vcd = waves.vcd()) {
        const auto clock = bench->controller.cfg().clock_period;
        vcd_obs = bench->fabric_module()
                      ? std::make_unique<vcd_observer<Format>>(*vcd, *bench->fabric_module(), controller_name,
                                                               traced, clock)
                      : std::make_unique<vcd_observer<Format>>(*vcd, bench->array(), controller_name, traced,
                                                               clock, pe_registers_for(o.run.dataflow));
        vcd->end_definitions();
        observers.add(vcd_obs.get());
    }
    if (trace_file* trace = waves.trace()) {
        trace_obs = std::make_unique<trace_observer<Format>>(*trace, controller_name);
        observers.add(trace_obs.get());
    }
    if (o.progress.value_or(::isatty(STDERR_FILENO) == 1)) {
        const auto counts = bench->expected_counts(pr.shape, ro.run.k_tile, ro.run.dataflow);
        bar_obs = std::make_unique<cli::progress_observer<Format>>(
            o.progress ? cli::progress_bar::mode::forced : cli::progress_bar::mode::automatic, counts.tiles,
            counts.advance_edges);
        observers.add(bar_obs.get());
    }
    std::unique_ptr<stop_observer<Format>> stop_obs;
    if (reply && reply->stop) {
        stop_obs = std::make_unique<stop_observer<Format>>(*reply->stop, bench->controller);
        observers.add(stop_obs.get());
    }
    if (!observers.empty()) bench->controller.set_observer(&observers);
    auto out = allocating("running the job", [&] { return bench->run(pr, ro); });
    bench->controller.set_observer(nullptr);
    throw_if_stopped(reply);
    // The observers closed the job when it ended; one that did not end stops where the simulation did.
    const bool ended = out.result.status != job_status::running;
    if (bar_obs) bar_obs->finish();
    if (vcd_obs && !ended) vcd_obs->finish(sc_core::sc_time_stamp());
    if (trace_obs && !ended) trace_obs->finish(sc_core::sc_time_stamp());
    // The save file names the VCD as given: GTKWave opens it from the working directory.
    waves.finish(files, vcd_obs && o.outputs.gtkw ? vcd_obs->save_file(*o.outputs.vcd) : std::string());

    std::optional<energy::energy_report> energy;
    if (table && out.result.completed())
        energy =
            energy::price(out.result.actions, *table, o.energy.tech_node,
                          energy::scratchpads_of(
                              out.job.run.memory, out.job.shape, sizeof(typename Format::operand_type),
                              output_size(out.job.run.quant, sizeof(typename Format::accumulator_type))));
    std::ostringstream summary;
    print_summary(summary, o, out, energy ? &*energy : nullptr);

    report_input in;
    in.rows = std::uint64_t(o.array_rows);
    in.cols = std::uint64_t(o.array_cols);
    in.job = &out.job;
    in.dtype = Format::name;
    in.accumulator_dtype = Format::accumulator_name;
    in.inject = to_string(o.inject);
    in.result = &out.result;
    in.scoreboard = &out.scoreboard;
    in.differs_from_quantize_once = out.differs_from_quantize_once;
    if (out.fabric) in.fabric = &*out.fabric;
    // Only when asked for: on a large fabric the report holds one object per link.
    const std::string report = allocating("writing the report", [&] {
        if (!o.json && !reply) return std::string();
        auto j = make_report(in);
        j["memory_estimate_bytes"] = estimate.total;
        if (energy) j.update(energy::to_json(*energy));
        return j.dump(2) + "\n";
    });
    throw_if_stopped(reply);
    const std::string action_counts =
        o.energy.action_counts ? energy::action_counts_yaml(out.result.actions) : std::string();
    allocating("writing the outputs",
               [&] { write_outputs(o, out, summary.str(), report, action_counts, files, reply == nullptr); });
    if (reply) {
        reply->m = out.job.shape.m;
        reply->p = out.job.shape.p;
        reply->c_descr = out.job.run.quant.enabled ? "|i1" : Format::accumulator_descr;
        if (out.result.completed()) reply->c = std::move(out.c);
        reply->summary = summary.str();
        reply->report = report;
        reply->pass = out.pass();
    }
    return out.pass() ? exit_pass : exit_fail;
}

#define SYSTOLIC_TB_JOB(F)                                         \
    template testbench<F>::config bench_config<F>(const options&); \
    template int run_job<F>(const options&, const bench_source<F>&, const problem<F>*, job_reply*);
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_TB_JOB)
#undef SYSTOLIC_TB_JOB

}  // namespace systolic::tb
