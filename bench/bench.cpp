// systolic-bench: how fast the SystemC model runs, in PE-updates per wall second (N^2 x every edge
// the array steps, preload and advance, / s; output stationary has no preload edges), side by side
// in one run:
//  - the cycle engine, with no edge observer and with an empty one (what observing costs);
//  - the functional engine, through the same controller, memory and TLM path (model_functional/);
//  - both engines with --buffers double (unlimited scratchpads and bandwidth: the memory system's
//    own cost, docs/memory.md), model_double/ and model_functional_double/;
//  - for int32, both engines in weight and input stationary too (docs/dataflows.md): model_ws/,
//    model_is/, model_functional_ws/ and model_functional_is/, on the same rigs (an integer C is
//    the same in every dataflow; a float one is summed in another order, so float formats run os
//    only), with each dataflow's PE-updates/s relative to os in the summary;
//  - both engines counting the energy account's actions (run_options::count_actions, --energy),
//    model_counting/ and model_functional_counting/, with each one's time over the same job's
//    without in the summary;
//  - the test reference GEMM of the same number format, on the same shape and data;
//  - with --verilator=SCRIPT, the same array as RTL under Verilator (../shared/anchors/verilator/
//    run.sh N), run for each int32 size, and the cycle engine's ratio to it in os, ws and is.
//
// Each rig is the real model - memory, systolic_array<Format> and tile_controller<Format> bound
// over TLM - with its operands written into memory once, at construction. The timed region is one
// job: controller.start(job) and sc_start until the simulation starves. The check of C, the memory
// fill and the reference product are outside it. SystemC elaborates once per process, so every rig
// (of every format) is built in sc_main before the first sc_start, and the benchmarks capture them.
//
// int32 is the headline format and runs every case; int8, fp32 and bf16 run the two larger
// one-tile cases, which keeps the whole run well under two minutes on two cores.
//
// Where systolic-soc is built, soc_bench.cpp adds its benchmarks (soc/...): the RISC-V hart beside
// Unicorn alone, and the firmware-driven GPT-2 layer beside systolic-tb (soc_bench.h).
//
// The functional engine's arithmetic (gemm_accumulate) on the 1024 x 1600 x 1600 layer, beside
// OpenBLAS sgemm and the reference GEMM, is registered by functional_bench.cpp: benchmarks named
// functional/..., e.g. OPENBLAS_CORETYPE=SkylakeX OPENBLAS_NUM_THREADS=1 systolic-bench
// --benchmark_filter=functional/.
//
// Extra flags, besides Google Benchmark's own: --k=<K> sets the reduction length (default 4096);
// --verilator=SCRIPT runs the RTL anchor.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <iostream>
#include <iterator>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

#include "fabric_bench.h"
#include "functional_bench.h"
#ifdef SYSTOLIC_HAVE_SOC
#include "soc_bench.h"
#endif
#include "systolic/counting.h"
#include "systolic/edge_observer.h"
#include "systolic/job.h"
#include "systolic/log.h"
#include "systolic/memory.h"
#include "systolic/number_format.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_controller.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

namespace {

using namespace systolic;

// A long reduction, so that a single-tile run is almost all array stepping: the K + 2(N-1) edges
// per tile (ws and is: K/N folds of N preload and M + 2(N-1) stream edges) dwarf the clear, load
// and drain.
constexpr std::uint64_t default_k = 4096;

// Wall time and work (PE-updates or MACs) summed over every timed run of one benchmark, for the
// summary table. The benchmark library reports the same runs; this keeps the table independent
// of which reporter is selected.
struct tally {
    double seconds = 0;      // wall
    double cpu_seconds = 0;  // this thread's CPU time over the same runs
    double work = 0;
    bool ran() const { return seconds > 0; }
    double rate() const { return work / seconds; }
    double cpu_rate() const { return work / cpu_seconds; }
};

// Wall and CPU clocks read together. SystemC runs its threads as coroutines on the calling OS
// thread, so the thread's CPU time covers the whole simulation.
struct stopwatch {
    std::chrono::steady_clock::time_point wall0 = std::chrono::steady_clock::now();
    double cpu0 = thread_cpu_seconds();

    static double thread_cpu_seconds() {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
    void add_to(tally& t, double work) const {
        t.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
        t.cpu_seconds += thread_cpu_seconds() - cpu0;
        t.work += work;
    }
};

// Ten times the simulated time a job needs (one clock per clear and per edge, preload and advance;
// one memory latency per load or drain transfer, both at their defaults; a chunk or fold loads at
// most a few transfers per row or column it spans, and a ws or is fold streams all M rows of A or
// P columns of B): reached only by a hang.
sc_core::sc_time time_limit(const expected_counts& e, std::size_t n, const problem_shape& s,
                            dataflow_kind df) {
    const sc_core::sc_time clock(1, sc_core::SC_NS), latency(10, sc_core::SC_NS);
    const std::uint64_t stream = is_stationary(df) ? stationary_of(s, array_shape{n, n}, 0, df).stream : 0;
    const std::uint64_t span = std::max<std::uint64_t>(n, stream);
    const double clocks = double(e.preload_edges + e.advance_edges + e.tiles * e.k_chunks);
    const double transfers = double(e.tiles) * double(e.k_chunks * 2 * span + s.k);
    return (clocks * clock + transfers * latency) * 10.0 + sc_core::sc_time(1, sc_core::SC_US);
}

// How a timed model run is made: which engine, observer and buffers (the kind), in which dataflow.
enum class run_kind {
    cycle,
    observed,
    functional,
    buffered,
    functional_buffered,
    counting,
    functional_counting
};
struct run_mode {
    run_kind kind = run_kind::cycle;
    dataflow_kind dataflow = dataflow_kind::os;
};

// Each kind's benchmark prefix ("model_functional", then "_ws" or "_is" and "/"), its name in the
// summary, and whether its benchmarks run ws and is too (the rig's dataflows, int32's) or os only.
struct run_kind_info {
    run_kind kind;
    const char* prefix;
    const char* summary;
    bool stationary;
};
constexpr run_kind_info run_kinds[] = {
    {run_kind::cycle, "model", "cycle engine", true},
    {run_kind::observed, "model_observed", "with an observer", false},
    {run_kind::functional, "model_functional", "functional engine", true},
    {run_kind::buffered, "model_double", "buffers double", false},
    {run_kind::functional_buffered, "model_functional_double", "functional double", false},
    // The energy account's counts on (run_options::count_actions): the summary sets them beside off.
    {run_kind::counting, "model_counting", "cycle engine counting", true},
    {run_kind::functional_counting, "model_functional_counting", "functional counting", true},
};
constexpr bool kinds_in_order() {
    for (std::size_t i = 0; i < std::size(run_kinds); ++i)
        if (std::size_t(run_kinds[i].kind) != i) return false;
    return true;
}
static_assert(kinds_in_order(), "run_kinds is indexed by run_kind");
constexpr dataflow_kind all_dataflows[] = {dataflow_kind::os, dataflow_kind::ws, dataflow_kind::is};
constexpr dataflow_kind os_only[] = {dataflow_kind::os};

// "model_ws/": a benchmark's name before the rig's label.
std::string bench_prefix(const run_kind_info& info, dataflow_kind df) {
    return std::string(info.prefix) + (df == dataflow_kind::os ? "" : std::string("_") + to_string(df)) + "/";
}

// What the benchmarks and the summary need from a rig, whatever its number format.
class rig_base : public sc_core::sc_module {
public:
    tally reference;  // the timed reference GEMM runs

    // The timed model runs of each kind and dataflow.
    tally& tally_of(run_mode m) { return m_tallies[std::size_t(m.kind)][std::size_t(m.dataflow)]; }
    const tally& tally_of(run_mode m) const {
        return m_tallies[std::size_t(m.kind)][std::size_t(m.dataflow)];
    }
    template <class F>
    void for_each_tally(F&& f) const {
        for (const auto& by_kind : m_tallies)
            for (const tally& t : by_kind)
                f(t);
        f(reference);
    }
    bool any_ran() const {
        bool ran = false;
        for_each_tally([&](const tally& t) { ran = ran || t.ran(); });
        return ran;
    }

    std::size_t n() const { return m_n; }
    const problem_shape& shape() const { return m_shape; }
    // The counting rules for this rig's job in dataflow df (count_job, preload edges included).
    const expected_counts& expected(dataflow_kind df = dataflow_kind::os) const {
        return m_expected[std::size_t(df)];
    }
    const std::string& format_name() const { return m_format; }
    // The dataflows this rig is checked and benchmarked in: os, and ws and is for int32.
    const std::vector<dataflow_kind>& dataflows() const { return m_dataflows; }

    // Empty when the last job stepped the edges the counting rules give for its dataflow, else
    // which count differs.
    std::string check_counts(dataflow_kind df) const {
        const job_result& r = result();
        const expected_counts& e = expected(df);
        auto differs = [&](const char* what, std::uint64_t got, std::uint64_t want) {
            return label(" ") + " " + to_string(df) + ": the job's " + what + " edges (" +
                   std::to_string(got) + ") differ from count_job() (" + std::to_string(want) + ")";
        };
        if (r.advance_edges != e.advance_edges) return differs("advance", r.advance_edges, e.advance_edges);
        if (r.preload_edges != e.preload_edges) return differs("preload", r.preload_edges, e.preload_edges);
        return {};
    }

    // "int32/N=64/M=256/P=256/K=4096" with the given separator, for names and messages.
    std::string label(const char* sep) const {
        return m_format + sep + "N=" + std::to_string(m_n) + sep + "M=" + std::to_string(m_shape.m) + sep +
               "P=" + std::to_string(m_shape.p) + sep + "K=" + std::to_string(m_shape.k);
    }

    // The timed region: one whole job, from start to the simulation running out of events.
    // False (with the reason in error()) unless the job completed.
    virtual bool run_job(run_mode mode = {}) = 0;
    virtual const job_result& result() const = 0;
    virtual std::string error() const = 0;
    // One reference GEMM of the rig's operands (the timed body of the reference benchmark).
    virtual void run_reference() = 0;
    // Compares C's bytes in memory with the reference product's; done outside any timed region.
    // Empty when equal, else where they first differ.
    virtual std::string check_against_reference() const = 0;
    // Fills C with a pattern no product has here (untimed), so that a run that leaves C alone
    // cannot pass on the previous run's results.
    virtual void poison_c() = 0;

protected:
    rig_base(const sc_core::sc_module_name& name, const char* format, std::size_t n,
             const problem_shape& shape, std::vector<dataflow_kind> dataflows)
        : sc_core::sc_module(name),
          m_n(n),
          m_shape(shape),
          m_format(format),
          m_dataflows(std::move(dataflows)) {
        for (dataflow_kind df : all_dataflows) {
            m_expected[std::size_t(df)] = count_job(shape, array_shape{n, n}, 0, df);
            m_limit[std::size_t(df)] = time_limit(m_expected[std::size_t(df)], n, shape, df);
        }
    }

    static constexpr std::size_t dataflow_count = std::size(all_dataflows);
    std::size_t m_n;
    problem_shape m_shape;
    std::string m_format;
    std::vector<dataflow_kind> m_dataflows;
    expected_counts m_expected[dataflow_count];
    sc_core::sc_time m_limit[dataflow_count];
    tally m_tallies[std::size(run_kinds)][dataflow_count];
};

// One model instance of one format with its operands in memory. A, B and C are packed row-major,
// back to back.
template <class Format>
class bench_rig final : public rig_base {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;

private:
    // Declared first: the modules below are built from them.
    verify::problem<Format> m_problem;
    matmul_job m_job;

public:
    memory mem;
    systolic_array<Format> array;
    tile_controller<Format> controller;

    bench_rig(const sc_core::sc_module_name& name, std::size_t n, const problem_shape& shape,
              std::uint64_t seed, std::vector<dataflow_kind> dataflows)
        : rig_base(name, Format::name, n, shape, std::move(dataflows)),
          m_problem(verify::random_problem<Format>(shape, seed)),
          m_job(plan(shape)),
          mem("memory", memory_config(m_job)),
          array("array", n),
          controller("controller", array) {
        controller.initiator_socket.bind(mem.target_socket);
        for (std::uint64_t r = 0; r < shape.m; ++r)
            mem.core().write(m_job.a.address(r, 0), &m_problem.a[r * shape.k],
                             shape.k * sizeof(operand_type));
        for (std::uint64_t k = 0; k < shape.k; ++k)
            mem.core().write(m_job.b.address(k, 0), &m_problem.b[k * shape.p],
                             shape.p * sizeof(operand_type));
    }

    bool run_job(run_mode mode) override {
        const run_kind kind = mode.kind;
        m_job.run.engine = kind == run_kind::functional || kind == run_kind::functional_buffered ||
                                   kind == run_kind::functional_counting
                               ? engine_kind::functional
                               : engine_kind::cycle;
        m_job.run.count_actions = kind == run_kind::counting || kind == run_kind::functional_counting;
        m_job.run.memory.buffers = kind == run_kind::buffered || kind == run_kind::functional_buffered
                                       ? buffer_mode::double_buffered
                                       : buffer_mode::none;
        m_job.run.dataflow = mode.dataflow;
        controller.set_observer(kind == run_kind::observed ? &m_observer : nullptr);
        controller.start(m_job);
        sc_core::sc_start(m_limit[std::size_t(mode.dataflow)], sc_core::SC_EXIT_ON_STARVATION);
        controller.set_observer(nullptr);
        return !controller.busy() && controller.result().completed();
    }

    const job_result& result() const override { return controller.result(); }

    std::string error() const override {
        if (controller.busy()) return label(" ") + ": the job did not finish within the simulated time limit";
        const auto& r = controller.result();
        return label(" ") + " " + to_string(r.dataflow) + ": job ended " + to_string(r.status) +
               (r.error.empty() ? "" : ": " + r.error);
    }

    void run_reference() override {
        auto c = verify::reference_gemm<Format>(m_shape, m_problem.a, m_problem.b, options());
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }

    std::string check_against_reference() const override {
        const auto& s = m_shape;
        const auto want = verify::encode_c<Format>(
            verify::reference_gemm<Format>(s, m_problem.a, m_problem.b, options()), m_job.run.quant);
        const std::uint64_t elem = output_size(m_job.run.quant, sizeof(accumulator_type));
        std::vector<std::uint8_t> row(s.p * elem);
        for (std::uint64_t r = 0; r < s.m; ++r) {
            mem.core().read(m_job.c.address(r, 0), row.data(), row.size());
            const std::uint8_t* expect = &want[r * s.p * elem];
            if (std::memcmp(row.data(), expect, row.size()) == 0) continue;
            std::uint64_t c = 0;
            while (std::memcmp(&row[c * elem], &expect[c * elem], elem) == 0)
                ++c;
            return label(" ") + ": C differs from the reference GEMM, first at row " + std::to_string(r) +
                   ", column " + std::to_string(c);
        }
        return {};
    }

    void poison_c() override {
        const std::uint64_t elem = output_size(m_job.run.quant, sizeof(accumulator_type));
        const std::vector<std::uint8_t> row(m_shape.p * elem, 0xa5);
        for (std::uint64_t r = 0; r < m_shape.m; ++r)
            mem.core().write(m_job.c.address(r, 0), row.data(), row.size());
    }

private:
    // An observer that only counts: the price of being called after every edge.
    struct counting_observer final : edge_observer<Format> {
        std::uint64_t edges = 0;
        void on_edge(const edge_event<Format>&) override { ++edges; }
    } m_observer;

    // The reference does what the job asks: the same K chunks, overflow mode and quantization
    // (all at their defaults here, so one unbroken, wrapping, k-ordered sum per output).
    verify::reference_options options() const {
        verify::reference_options opt;
        opt.k_tile = m_job.run.k_tile;
        opt.policy = m_job.run.policy;
        opt.overflow = m_job.run.overflow;
        opt.quant = m_job.run.quant;
        return opt;
    }

    static std::uint64_t align8(std::uint64_t v) { return (v + 7) / 8 * 8; }

    static matmul_job plan(const problem_shape& s) {
        const std::uint64_t a_base = 0;
        const std::uint64_t b_base = align8(a_base + s.m * s.k * sizeof(operand_type));
        const std::uint64_t c_base = align8(b_base + s.k * s.p * sizeof(operand_type));
        return make_job(s, sizeof(operand_type), sizeof(accumulator_type), a_base, b_base, c_base);
    }

    static memory::config memory_config(const matmul_job& job) {
        memory::config cfg;
        cfg.base = 0;
        cfg.size =
            job.c.base + job.shape.m * job.shape.p * output_size(job.run.quant, sizeof(accumulator_type));
        return cfg;
    }
};

// Set when a model benchmark failed (its job, or its counts), so that the process fails too.
bool g_model_failed = false;

// PE-updates: every PE at every edge the array steps, preload (ws, is) and advance.
void bench_model(benchmark::State& state, rig_base& rig, run_mode mode) {
    const double n2 = double(rig.n()) * double(rig.n());
    std::uint64_t edges = 0;
    for (auto _ : state) {
        const stopwatch sw;
        const bool ok = rig.run_job(mode);
        if (!ok) {
            g_model_failed = true;
            state.SkipWithError(rig.error().c_str());
            break;
        }
        edges = rig.result().preload_edges + rig.result().advance_edges;
        const std::string wrong = rig.check_counts(mode.dataflow);
        if (!wrong.empty()) {
            g_model_failed = true;
            state.SkipWithError(wrong.c_str());
            break;
        }
        sw.add_to(rig.tally_of(mode), n2 * double(edges));
    }
    state.counters["pe_updates_per_s"] =
        benchmark::Counter(n2 * double(edges) * double(state.iterations()), benchmark::Counter::kIsRate);
    state.counters["edges_per_job"] = benchmark::Counter(double(edges));
}

void bench_reference(benchmark::State& state, rig_base& rig) {
    const auto& s = rig.shape();
    const double macs = double(s.m) * double(s.k) * double(s.p);
    for (auto _ : state) {
        const stopwatch sw;
        rig.run_reference();
        sw.add_to(rig.reference, macs);
    }
    state.counters["macs_per_s"] =
        benchmark::Counter(macs * double(state.iterations()), benchmark::Counter::kIsRate);
}

// Takes --k=<K> out of argv (Google Benchmark rejects flags it does not know), and adds it to the
// library's --help text.
bool take_flags(int& argc, char** argv, std::uint64_t& k, std::string& verilator) {
    int out = 1;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--help") == 0) {
            std::printf(
                "systolic-bench [--k=<K>] [--verilator=SCRIPT] [Google Benchmark flags]\n"
                "  --k=<K>             reduction length of every case (default %llu)\n"
                "  --verilator=SCRIPT  also run the RTL anchor (e.g. ../shared/anchors/verilator/run.sh)\n"
                "                      for each int32 array size and print the cycle engine's ratio to it\n"
                "                      in os, ws and is\n"
                "  benchmarks are named model/<format>/N=.../M=.../P=.../K=... (cycle engine),\n"
                "  model_observed/..., model_functional/..., model_double/... and\n"
                "  model_functional_double/... (buffers double), model_ws/..., model_is/...,\n"
                "  model_functional_ws/... and model_functional_is/... (int32 only, weight and input\n"
                "  stationary), model_counting/... and model_functional_counting/... (counting the\n"
                "  energy account's actions), and reference_gemm/<format>/...;\n"
                "  functional/... is the functional engine's kernel on the GPT-2 layer beside OpenBLAS,\n"
                "  soc/... (when systolic-soc is built) the RISC-V hart beside Unicorn alone and the\n"
                "  firmware-driven GPT-2 layer beside systolic-tb, e.g. --benchmark_filter=/int8/\n\n",
                static_cast<unsigned long long>(default_k));
        }
        if (std::strncmp(argv[i], "--k=", 4) == 0) {
            char* end = nullptr;
            const unsigned long long v = std::strtoull(argv[i] + 4, &end, 10);
            if (end == argv[i] + 4 || *end != '\0' || v == 0 || v > (1u << 24)) {
                std::cerr << "systolic-bench: error: --k wants a positive integer up to 16777216, got '"
                          << argv[i] + 4 << "'\n";
                return false;
            }
            k = v;
        } else if (std::strncmp(argv[i], "--verilator=", 12) == 0) {
            verilator = argv[i] + 12;
        } else {
            argv[out++] = argv[i];
        }
    }
    argc = out;
    argv[argc] = nullptr;
    return true;
}

std::string mega(double rate) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", rate / 1e6);
    return buf;
}

// One line per rig: "int32 N=128: model X M PE-updates/s, reference GEMM Y M MAC/s, ratio Z",
// from wall time. When the machine was busy (this thread got well under a whole core while timed),
// the same runs follow per CPU-second, so that the load on the machine can be told apart from the
// model.
void print_summary(const std::vector<std::unique_ptr<rig_base>>& rigs, std::FILE* out) {
    auto line = [](const rig_base& rig, bool cpu) {
        char head[32];
        std::snprintf(head, sizeof head, "%-5s N=%zu", rig.format_name().c_str(), rig.n());
        std::string out = head;
        if (rig.shape().m != rig.n() || rig.shape().p != rig.n())
            out += " (M=P=" + std::to_string(rig.shape().m) + ", " + std::to_string(rig.expected().tiles) +
                   " tiles)";
        out += ":";
        const tally& cycle = rig.tally_of({});
        const double model = cpu ? cycle.cpu_rate() : cycle.rate();
        const double ref = cpu ? rig.reference.cpu_rate() : rig.reference.rate();
        auto rate = [cpu](const tally& t) { return mega(cpu ? t.cpu_rate() : t.rate()); };
        out += cycle.ran() ? " cycle engine " + mega(model) + " M PE-updates/s," : " cycle engine not run,";
        for (const auto& info : run_kinds) {
            for (dataflow_kind df : all_dataflows) {
                const tally& t = rig.tally_of({info.kind, df});
                if (&t == &cycle || !t.ran()) continue;
                out += std::string(" ") + info.summary;
                if (df != dataflow_kind::os) out += std::string(" ") + to_string(df);
                out += " " + rate(t) + ",";
            }
        }
        out += rig.reference.ran() ? " reference GEMM " + mega(ref) + " M MAC/s" : " reference GEMM not run";
        if (cycle.ran() && rig.reference.ran()) {
            char buf[32];
            std::snprintf(buf, sizeof buf, ", ratio %.2f", model / ref);
            out += buf;
        }
        return out;
    };
    // "int32 N=64: cycle engine ws/os 0.91, is/os 0.90; functional engine ws/os 1.01, is/os 1.00":
    // each stationary dataflow's PE-updates/s over the same kind's os, where both ran; empty if
    // none did.
    auto ratios = [](const rig_base& rig, bool cpu) {
        std::string out;
        for (const auto& info : run_kinds) {
            const tally& os = rig.tally_of({info.kind, dataflow_kind::os});
            std::string kind;
            for (dataflow_kind df : all_dataflows) {
                const tally& t = rig.tally_of({info.kind, df});
                if (df == dataflow_kind::os || !t.ran() || !os.ran()) continue;
                char buf[64];
                std::snprintf(buf, sizeof buf, "%s %s/os %.2f", kind.empty() ? "" : ",", to_string(df),
                              cpu ? t.cpu_rate() / os.cpu_rate() : t.rate() / os.rate());
                kind += buf;
            }
            if (!kind.empty()) out += (out.empty() ? " " : "; ") + std::string(info.summary) + kind;
        }
        if (out.empty()) return out;
        char head[64];
        std::snprintf(head, sizeof head, "%-5s N=%zu", rig.format_name().c_str(), rig.n());
        std::string where = head;
        if (rig.shape().m != rig.n() || rig.shape().p != rig.n())
            where += " (M=P=" + std::to_string(rig.shape().m) + ")";
        return where + ":" + out;
    };
    // "int32 N=64: counting on/off, cycle engine os 1.12, ws 1.10, is 1.15; functional engine os 1.20":
    // the time of a job that counts its actions over the same job's without, where both ran.
    auto counting = [](const rig_base& rig, bool cpu) {
        std::string out;
        for (auto [on, off] : {std::pair{run_kind::counting, run_kind::cycle},
                               std::pair{run_kind::functional_counting, run_kind::functional}}) {
            std::string kind;
            for (dataflow_kind df : all_dataflows) {
                const tally &t_on = rig.tally_of({on, df}), &t_off = rig.tally_of({off, df});
                if (!t_on.ran() || !t_off.ran()) continue;
                char buf[64];
                std::snprintf(buf, sizeof buf, "%s %s %.2f", kind.empty() ? "" : ",", to_string(df),
                              cpu ? t_off.cpu_rate() / t_on.cpu_rate() : t_off.rate() / t_on.rate());
                kind += buf;
            }
            if (!kind.empty())
                out += (out.empty() ? " " : "; ") +
                       std::string(off == run_kind::cycle ? "cycle engine" : "functional engine") + kind;
        }
        if (out.empty()) return out;
        char head[64];
        std::snprintf(head, sizeof head, "%-5s N=%zu", rig.format_name().c_str(), rig.n());
        return std::string(head) + ":" + out;
    };
    auto print = [&](bool cpu) {
        for (const auto& rig : rigs) {
            if (rig->any_ran()) std::fprintf(out, "%s\n", line(*rig, cpu).c_str());
        }
        bool head = false;
        for (const auto& rig : rigs) {
            const std::string r = ratios(*rig, cpu);
            if (r.empty()) continue;
            if (!head) std::fprintf(out, "dataflows, PE-updates/s (preload and advance edges) over os:\n");
            head = true;
            std::fprintf(out, "%s\n", r.c_str());
        }
        head = false;
        for (const auto& rig : rigs) {
            const std::string r = counting(*rig, cpu);
            if (r.empty()) continue;
            if (!head) std::fprintf(out, "counting actions (--energy), time with over time without:\n");
            head = true;
            std::fprintf(out, "%s\n", r.c_str());
        }
    };

    double wall = 0, cpu = 0;
    for (const auto& rig : rigs) {
        rig->for_each_tally([&](const tally& t) {
            wall += t.seconds;
            cpu += t.cpu_seconds;
        });
    }
    if (wall == 0) return;
    std::fprintf(out, "\nsummary, per wall second over every timed run above:\n");
    print(false);
    if (cpu < 0.9 * wall) {
        std::fprintf(out,
                     "the machine was busy: this thread ran %.0f%% of the timed wall time; per CPU-second:\n",
                     100.0 * cpu / wall);
        print(true);
    }
    std::fflush(out);
}

// The RTL anchor: for each int32 rig whose cycle engine ran, the same N x N array under Verilator
// (the script builds it once and prints "PE-updates/s=<rate>"), then the ratio of each dataflow
// the cycle engine ran (os, ws, is) to it. Run after the model's benchmarks, so the two never
// compete for a core.
void print_verilator(const std::vector<std::unique_ptr<rig_base>>& rigs, const std::string& script,
                     std::FILE* out) {
    std::fprintf(out, "\nRTL anchor (%s), same run:\n", script.c_str());
    for (const auto& rig : rigs) {
        bool cycle_ran = false;
        for (dataflow_kind df : all_dataflows)
            cycle_ran = cycle_ran || rig->tally_of({run_kind::cycle, df}).ran();
        if (rig->format_name() != int32_format::name || !cycle_ran || rig->shape().m != rig->n()) continue;
        const std::string cmd = "'" + script + "' " + std::to_string(rig->n()) + " 2>&1";
        std::FILE* p = ::popen(cmd.c_str(), "r");
        std::string text;
        char buf[256];
        while (p && std::fgets(buf, sizeof buf, p))
            text += buf;
        const int status = p ? ::pclose(p) : -1;
        const auto at = text.find("PE-updates/s=");
        if (status != 0 || at == std::string::npos) {
            std::fprintf(out, "verilator N=%zu: did not run (%s)\n", rig->n(), text.substr(0, 200).c_str());
            continue;
        }
        const double rtl = std::strtod(text.c_str() + at + 13, nullptr);
        for (dataflow_kind df : all_dataflows) {
            const tally& t = rig->tally_of({run_kind::cycle, df});
            if (!t.ran()) continue;
            const std::string engine =
                df == dataflow_kind::os ? "cycle engine" : std::string("cycle engine ") + to_string(df);
            std::fprintf(out, "int32 N=%zu: verilator %s M PE-updates/s, %s %s M (%.2fx per wall second)\n",
                         rig->n(), mega(rtl).c_str(), engine.c_str(), mega(t.rate()).c_str(), t.rate() / rtl);
        }
    }
    std::fflush(out);
}

struct rig_spec {
    std::size_t n;
    std::uint64_t mp;    // M = P
    std::uint64_t seed;  // the same case gets the same seed in every format
};

// int32, the headline: one output tile each (M = P = N), then one case with 4 x 4 tiles to show
// the tiling overhead. The other formats: the two larger one-tile cases only.
constexpr rig_spec headline_specs[] = {{16, 16, 1}, {64, 64, 2}, {128, 128, 3}, {64, 256, 4}};
constexpr rig_spec format_specs[] = {{64, 64, 2}, {128, 128, 3}};

// Each rig is checked and benchmarked in the given dataflows: all three for int32, whose C is the
// same in each; os only for the other formats.
template <class Format, std::size_t Count, std::size_t Dataflows>
void add_rigs(std::vector<std::unique_ptr<rig_base>>& rigs, const rig_spec (&specs)[Count], std::uint64_t k,
              const dataflow_kind (&dataflows)[Dataflows]) {
    for (const auto& spec : specs) {
        const std::string name = std::string("rig_") + Format::name + "_n" + std::to_string(spec.n) + "_mp" +
                                 std::to_string(spec.mp);
        rigs.push_back(std::make_unique<bench_rig<Format>>(
            name.c_str(), spec.n, problem_shape{spec.mp, k, spec.mp}, spec.seed,
            std::vector<dataflow_kind>(std::begin(dataflows), std::end(dataflows))));
    }
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    const auto t0 = std::chrono::steady_clock::now();
    std::uint64_t k = default_k;
    std::string verilator;
    if (!take_flags(argc, argv, k, verilator)) return 2;
    // With --benchmark_format=json or csv, stdout is for the library's report alone: the summary
    // goes to stderr.
    std::FILE* summary = stdout;
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0 &&
            std::strcmp(argv[i] + 19, "console") != 0)
            summary = stderr;
    }
    benchmark::Initialize(&argc, argv);
    if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
    set_log_level(spdlog::level::warn);

    // As systolic-tb: a quantum that lets the controller run thousands of edges between syncs.
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));

    std::vector<std::unique_ptr<rig_base>> rigs;
    add_rigs<int32_format>(rigs, headline_specs, k, all_dataflows);
    for_each_format([&](auto format) {
        using Format = decltype(format);
        if constexpr (!std::is_same_v<Format, int32_format>) add_rigs<Format>(rigs, format_specs, k, os_only);
    });
    build_fabric_rigs(k);
#ifdef SYSTOLIC_HAVE_SOC
    build_soc_rigs();
    // First: it leaves the harts suspended, so that the other rigs' runs end when their jobs do.
    if (!check_soc_rigs()) return 1;
#endif

    // One untimed run per rig, kind and dataflow: it elaborates, and it shows the model computes the
    // right product, byte for byte (fp32 and bf16 included: both sides add rounded products in k
    // order, in os; int32 in ws and is too, whose C is the same in any order), in the edges the
    // counting rules give.
    for (auto& rig : rigs) {
        for (auto kind : {run_kind::cycle, run_kind::functional, run_kind::buffered,
                          run_kind::functional_buffered, run_kind::counting, run_kind::functional_counting}) {
            for (dataflow_kind df : rig->dataflows()) {
                rig->poison_c();
                if (!rig->run_job({kind, df})) {
                    std::cerr << "systolic-bench: " << rig->error() << "\n";
                    return 1;
                }
                std::string wrong = rig->check_counts(df);
                if (wrong.empty()) wrong = rig->check_against_reference();
                if (!wrong.empty()) {
                    std::cerr << "systolic-bench: " << wrong << "\n";
                    return 1;
                }
            }
        }
    }

    if (!check_fabric_rigs()) return 1;

    // Each kind in os, then (the stationary ones, on rigs that run them) in ws and is: model/,
    // model_ws/, model_is/, model_observed/, model_functional/, model_functional_ws/, ...
    for (auto& rig : rigs) {
        rig_base* r = rig.get();
        for (const auto& info : run_kinds) {
            for (dataflow_kind df : r->dataflows()) {
                if (df != dataflow_kind::os && !info.stationary) continue;
                const run_mode mode{info.kind, df};
                benchmark::RegisterBenchmark((bench_prefix(info, df) + r->label("/")).c_str(),
                                             [r, mode](benchmark::State& st) { bench_model(st, *r, mode); })
                    ->Unit(benchmark::kMillisecond)
                    ->UseRealTime();
            }
        }
        benchmark::RegisterBenchmark(("reference_gemm/" + r->label("/")).c_str(),
                                     [r](benchmark::State& st) { bench_reference(st, *r); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }

    register_functional_benchmarks();
    register_fabric_benchmarks();
#ifdef SYSTOLIC_HAVE_SOC
    register_soc_benchmarks();
#endif

    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    print_summary(rigs, summary);
    print_fabric_summary(summary);
#ifdef SYSTOLIC_HAVE_SOC
    print_soc_summary(summary);
#endif
    if (!verilator.empty()) print_verilator(rigs, verilator, summary);
    // The rigs are left alive (still reachable, so a leak checker stays quiet) for the process to
    // end with: SystemC unregisters each destroyed module by a linear search of its registry, and
    // the ~90 000 PE modules would take seconds to tear down.
    static auto* const kept = new std::vector<std::unique_ptr<rig_base>>(std::move(rigs));
    (void)kept;
    std::fprintf(summary, "total run time %.1f s\n",
                 std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (g_model_failed) {
        std::cerr << "systolic-bench: a model benchmark failed (see its error above)\n";
        return 1;
    }
    return 0;
}

// Our own entry point, so that SystemC's banner is off before SystemC initialises.
int main(int argc, char* argv[]) {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
