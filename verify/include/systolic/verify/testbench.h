// The testbench: tile controller -> protocol checker -> bus monitor -> memory, with the systolic
// array beside the controller and the scoreboard fed by the monitor. One testbench serves any number
// of jobs with its array size N, so a process that can elaborate only once can still run many cases.
// The protocol checker sees every bulk transaction and DMI call of the controller (never the
// per-edge path, which does not touch the bus); a broken TLM-2.0 rule fails the job through the
// scoreboard, like a wrong value.
//
// Memory map per job: A, B, C (and the partial-sum buffer, when the job splits K with partial sums)
// in that order, each preceded and followed by guard bytes and with row strides padded past the row
// length, all filled with a seeded pseudo-random pattern. A write that misses C therefore changes
// bytes the scoreboard compares, even when the value is zero.
#pragma once

#include <cstdint>
#include <cstring>
#include <future>
#include <optional>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/counting.h"
#include "systolic/fabric.h"
#include "systolic/job.h"
#include "systolic/memory.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_controller.h"
#include "systolic/verify/bus_monitor.h"
#include "systolic/verify/fabric_outcome.h"
#include "systolic/verify/fault.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/protocol_checker.h"
#include "systolic/verify/reference_gemm.h"
#include "systolic/verify/scoreboard.h"

namespace systolic::verify {

struct run_options {
    tile_order order = tile_order::row_major;
    std::uint64_t order_seed = 0;  // for tile_order::random
    bool packed = false;           // rows back to back and no guard bands (the layout a user's buffer has)
    std::uint64_t fill_seed = 0x5eed;
    std::uint64_t k_tile = 0;  // 0: the whole K in one chunk
    k_policy policy = k_policy::preserve;
    overflow_mode overflow = overflow_mode::wrap;
    quantization quant;
    fault inject = fault::none;  // a known defect to plant, to see the scoreboard or watchdog catch it
    engine_kind engine = engine_kind::cycle;
};

template <class Format>
struct run_outcome {
    matmul_job job;
    expected_counts expected;
    job_result result;
    scoreboard_summary scoreboard;
    std::vector<std::uint8_t> c;  // C as read back from memory (M x P elements), whatever was written
    // int8 outputs that differ from quantizing each complete sum once (--quantize-partials).
    std::uint64_t differs_from_quantize_once = 0;
    std::optional<fabric_outcome> fabric;  // on a fabric of arrays: its links and passes for this job

    bool pass() const { return scoreboard.pass(); }
    // C's elements as T (the accumulator type, or std::int8_t for quantized output).
    template <class T>
    std::vector<T> c_as() const {
        std::vector<T> v(c.size() / sizeof(T));
        std::memcpy(v.data(), c.data(), v.size() * sizeof(T));
        return v;
    }
};

// The bytes C must hold after the job (M x P elements, row-major): the scoreboard's reference
// under the job's K chunks, policy, overflow mode and output (the reference applies the NaN rule).
template <class Format>
std::vector<std::uint8_t> expected_c_bytes(const problem<Format>& pr, const run_options& opt) {
    reference_options ref;
    ref.k_tile = opt.k_tile;
    ref.policy = opt.policy;
    ref.overflow = opt.overflow;
    ref.quant = opt.quant;
    return encode_c<Format>(reference_gemm<Format>(pr.shape, pr.a, pr.b, ref), opt.quant);
}

// The job fields that run options set: tile order, K-splitting, overflow, output, engine.
inline void apply_run_options(matmul_job& job, const run_options& opt) {
    job.order = opt.order;
    job.seed = opt.order_seed;
    job.k_tile = opt.k_tile;
    job.policy = opt.policy;
    job.overflow = opt.overflow;
    job.quant = opt.quant;
    job.engine = opt.engine;
}

template <class Format>
class testbench : public sc_core::sc_module {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;

    struct config {
        std::size_t rows = 2;  // the array: rows of PEs (the tile's height)
        std::size_t cols = 2;  // PEs per row (the tile's width)
        // More than one array: a fabric of R x C x D arrays of rows x cols (square) PEs, its links
        // `link_latency` edges long, stepped on `threads` threads (docs/fabric.md).
        fabric_shape fabric{};
        std::uint64_t link_latency = 1;
        unsigned threads = 1;
        typename tile_controller<Format>::config controller{};
        systolic::memory::config mem{};
    };

    memory mem;
    bus_monitor monitor;
    protocol_checker checker;

private:
    // One of the two, made before the controller that drives it.
    std::unique_ptr<systolic_array<Format>> m_array;
    std::unique_ptr<fabric<Format>> m_fabric;

public:
    tile_controller<Format> controller;

    testbench(const sc_core::sc_module_name& name, const config& cfg)
        : sc_core::sc_module(name),
          mem("memory", cfg.mem),
          monitor("monitor"),
          checker("checker"),
          controller("controller", make_host(cfg), cfg.controller) {
        controller.initiator_socket.bind(checker.target_socket);
        checker.initiator_socket.bind(monitor.target_socket);
        monitor.initiator_socket.bind(mem.target_socket);
        monitor.on_write = [this](const tlm::tlm_generic_payload& t) { m_scoreboard.observe_write(t); };
        // Kept until the job's end, so that a violation outside expect() ... finish() (the memory's
        // invalidation when it is resized) counts too.
        checker.on_violation([this](const std::string& line) { m_violations.push_back(line); });
    }

    // The PEs the controller drives: one array's, or a fabric's R*N x C*N.
    std::size_t rows() const { return host().rows(); }
    std::size_t cols() const { return host().cols(); }
    array_shape shape() const { return {rows(), cols()}; }

    // The single array (throws std::logic_error on a fabric), or the fabric (null without one).
    systolic_array<Format>& array() const {
        if (!m_array) throw std::logic_error("testbench: this testbench has a fabric, not one array");
        return *m_array;
    }
    fabric<Format>* fabric_module() const { return m_fabric.get(); }

    // The teardown's two steps (systolic_array.h), for an owner of several testbenches: see
    // testbench_set.
    void destroy_oldest_pes(std::size_t count) {
        if (m_fabric) m_fabric->destroy_oldest_pes(count);
        if (m_array) m_array->destroy_oldest_pes(count);
    }
    void destroy_pes_newest_first() {
        if (m_fabric) m_fabric->destroy_pes_newest_first();
        if (m_array) m_array->destroy_pes_newest_first();
    }

    // What a job of this shape must count here (count_job, or count_fabric_job on a fabric).
    systolic::expected_counts expected_counts(const problem_shape& s, std::uint64_t k_tile) const {
        return m_fabric ? count_fabric_job(s, m_fabric->geometry(), k_tile).counts
                        : count_job(s, shape(), k_tile);
    }

    // Runs one job to completion (or failure) and checks it. Call from sc_main or a test, not from
    // a process: it calls sc_start.
    run_outcome<Format> run(const problem<Format>& pr, const run_options& opt = {}) {
        run_outcome<Format> out;
        const auto& s = pr.shape;
        if (pr.a.size() != s.m * s.k || pr.b.size() != s.k * s.p)
            throw std::invalid_argument("testbench: operand sizes do not match the shape");
        out.job = plan_memory(s, opt);
        out.expected = expected_counts(s, opt.k_tile);

        m_violations.clear();
        checker.clear_violations();
        fill_memory(out.job, pr, opt);
        const std::vector<std::uint8_t> before(mem.core().data(), mem.core().data() + mem.core().size());
        // The reference runs on its own thread beside the simulation: it shares nothing with the
        // model, and the scoreboard compares the recorded writes with it at the end.
        auto expected =
            std::async(std::launch::async, [&pr, opt] { return expected_c_bytes(pr, opt); }).share();
        m_scoreboard.expect(
            out.job.c, expected, printer(opt.quant.enabled),
            out.job.uses_partial_buffer() ? std::optional<matrix_layout>(out.job.partial) : std::nullopt);

        const std::vector<fabric_link> links_before =
            m_fabric ? m_fabric->state().links() : std::vector<fabric_link>{};
        const std::uint64_t passes_before = m_fabric ? m_fabric->state().passes() : 0;
        m_faults.set(opt.inject);
        controller.set_fault_hooks(&m_faults);
        controller.start(out.job);
        sc_core::sc_start(time_limit(out.job), sc_core::SC_EXIT_ON_STARVATION);
        controller.set_fault_hooks(nullptr);
        out.result = controller.result();
        if (controller.busy()) {
            out.result.status = job_status::running;
            out.result.error = "the job did not finish within the simulated time limit";
        }
        for (const auto& line : m_violations)
            m_scoreboard.protocol_violation(line);
        if (m_fabric) out.fabric = fabric_outcome_of(out, links_before, passes_before);
        out.scoreboard = m_scoreboard.finish(out.result, out.expected, mem.core().data(), mem.core().base(),
                                             before, tile_edges(s.k, opt));

        const std::uint64_t esz = out.job.c.elem_size;
        out.c.resize(s.m * s.p * esz);
        for (std::uint64_t r = 0; r < s.m; ++r)
            mem.core().read(out.job.c.address(r, 0), &out.c[r * s.p * esz], s.p * esz);

        if (opt.quant.per_partial) {  // what quantizing each partial cost: C against quantize-once
            run_options once = opt;
            once.quant.per_partial = false;
            const auto once_bytes = expected_c_bytes(pr, once);
            for (std::size_t i = 0; i < once_bytes.size(); ++i)
                out.differs_from_quantize_once += once_bytes[i] != out.c[i];
        }
        return out;
    }

    // Where run() puts A, B, C (and the partial-sum buffer, if the job needs one) for this shape:
    // guard bands and padded strides unless packed. The same for the same shape and options.
    matmul_job plan_memory(const problem_shape& s, const run_options& opt) const {
        const std::uint64_t osz = sizeof(operand_type), asz = sizeof(accumulator_type);
        const std::uint64_t csz = output_size(opt.quant, asz);
        const std::uint64_t g = opt.packed ? 0 : guard;
        auto stride = [&](std::uint64_t row_bytes) {
            return opt.packed ? row_bytes : round_up(row_bytes + 8, 16);
        };
        const std::uint64_t a_stride = stride(s.k * osz), b_stride = stride(s.p * osz),
                            c_stride = stride(s.p * csz);
        const std::uint64_t a_base = mem.core().base() + g;
        const std::uint64_t b_base = round_up(a_base + s.m * a_stride + g, 16);
        const std::uint64_t c_base = round_up(b_base + s.k * b_stride + g, 16);
        matmul_job job = make_job(s, osz, csz, a_base, b_base, c_base, a_stride, b_stride, c_stride);
        apply_run_options(job, opt);
        if (job.uses_partial_buffer()) {
            const std::uint64_t p_stride = stride(s.p * asz);
            job.partial = make_layout(round_up(c_base + s.m * c_stride + g, 16), s.m, s.p, asz, p_stride);
        }
        return job;
    }

private:
    static constexpr std::uint64_t guard = 64;

    // This job's share of the fabric's counts (they run on from job to job).
    fabric_outcome fabric_outcome_of(const run_outcome<Format>& out,
                                     const std::vector<fabric_link>& links_before,
                                     std::uint64_t passes_before) const {
        const fabric_engine<Format>& st = m_fabric->state();
        const fabric_geometry& g = st.geometry();
        fabric_outcome f;
        f.rows = g.shape.rows;
        f.cols = g.shape.cols;
        f.depth = g.shape.depth;
        f.n = g.n;
        f.link_latency = g.link_latency;
        f.threads = st.threads();
        f.passes = st.passes() - passes_before;
        for (std::size_t i = 0; i < st.links().size(); ++i) {
            const fabric_link& l = st.links()[i];
            f.links.push_back({to_string(l.kind), st.position(l.from), st.position(l.to),
                               l.words - links_before[i].words,
                               l.padding_words - links_before[i].padding_words});
        }
        f.single_array = single_array_traffic(out.job, g.n, sizeof(operand_type), out.result.traffic);
        return f;
    }

    engine_host<Format>& host() const {
        return m_fabric ? static_cast<engine_host<Format>&>(*m_fabric) : *m_array;
    }

    engine_host<Format>& make_host(const config& cfg) {
        if (cfg.fabric.single()) {
            m_array = std::make_unique<systolic_array<Format>>("array", cfg.rows, cfg.cols);
            return *m_array;
        }
        if (cfg.rows != cfg.cols) throw std::invalid_argument("a fabric of arrays needs square arrays");
        m_fabric = std::make_unique<fabric<Format>>(
            "fabric", fabric_geometry{cfg.fabric, cfg.rows, cfg.link_latency}, cfg.threads);
        return *m_fabric;
    }

    // On a fabric, each tile's advance edges by the fabric's rule (its active arrays).
    scoreboard::tile_edge_rule tile_edges(std::uint64_t k, const run_options& opt) const {
        if (!m_fabric) return {};
        const fabric_geometry g = m_fabric->geometry();
        return [g, k, k_tile = opt.k_tile](const tile& t) { return g.tile_edges(t.rows, t.cols, k, k_tile); };
    }

    static std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

    // Shows one element of C in scoreboard messages.
    static scoreboard::value_printer printer(bool int8_output) {
        if (int8_output)
            return [](const std::uint8_t* p) { return std::to_string(static_cast<std::int8_t>(*p)); };
        return [](const std::uint8_t* p) {
            accumulator_type v;
            std::memcpy(&v, p, sizeof v);
            std::ostringstream os;
            os.precision(9);  // enough to tell any two floats apart
            os << +v;
            if (v != v) {  // NaNs differ only in their bits: show them
                std::uint32_t u;
                std::memcpy(&u, &v, sizeof u);
                os << " (0x" << std::hex << u << ")";
            }
            return os.str();
        };
    }

    void fill_memory(const matmul_job& job, const problem<Format>& pr, const run_options& opt) {
        const auto& s = pr.shape;
        const matrix_layout& last = job.uses_partial_buffer() ? job.partial : job.c;
        mem.resize(last.base + s.m * last.row_stride + (opt.packed ? 0 : guard) - mem.core().base());
        // Eight pattern bytes per draw: big jobs fill tens of megabytes.
        std::mt19937_64 rng(opt.fill_seed);
        std::uint8_t* bytes = mem.core().data();
        const std::uint64_t size = mem.core().size();
        for (std::uint64_t i = 0; i < size; i += 8) {
            const std::uint64_t v = rng();
            std::memcpy(bytes + i, &v, std::min<std::uint64_t>(8, size - i));
        }
        for (std::uint64_t r = 0; r < s.m; ++r)
            mem.core().write(job.a.address(r, 0), &pr.a[r * s.k], s.k * sizeof(operand_type));
        for (std::uint64_t k = 0; k < s.k; ++k)
            mem.core().write(job.b.address(k, 0), &pr.b[k * s.p], s.p * sizeof(operand_type));
    }

    // Generous: ten times what every clock and every memory access of the job would take.
    sc_core::sc_time time_limit(const matmul_job& job) const {
        const auto counts = expected_counts(job.shape, job.k_tile);
        const double accesses =
            double(counts.tiles) * double(counts.k_chunks * 3 * std::max(rows(), cols()) + job.shape.k) + 1;
        const auto& mc = mem.cfg();
        const sc_core::sc_time slowest = std::max(mc.read_latency, mc.write_latency);
        return (double(counts.advance_edges + 2 * counts.tiles * counts.k_chunks) *
                    controller.cfg().clock_period +
                accesses * slowest) *
                   10.0 +
               sc_core::sc_time(1, sc_core::SC_US);
    }

    scoreboard m_scoreboard;
    fault_policy<Format> m_faults;
    std::vector<std::string> m_violations;  // from the protocol checker, during the current run()
};

// Testbenches that live together in one process (SystemC elaborates once, so they are all built
// before the first job), torn down in the one order that keeps SystemC's teardown linear: the oldest
// PEs of the oldest testbench first, which opens holes near the front of the module registry, then
// every testbench's PEs newest first (systolic_array.h). Each testbench tearing itself down would
// search past every older testbench's modules for each of its own PEs.
template <class Format>
class testbench_set {
public:
    testbench_set() = default;
    testbench_set(const testbench_set&) = delete;
    testbench_set& operator=(const testbench_set&) = delete;
    ~testbench_set() {
        if (!m_benches.empty()) m_benches.front()->destroy_oldest_pes(64);
        while (!m_benches.empty()) {
            m_benches.back()->destroy_pes_newest_first();
            m_benches.pop_back();
        }
    }

    testbench<Format>& add(const std::string& name, const typename testbench<Format>::config& cfg) {
        m_benches.push_back(std::make_unique<testbench<Format>>(name.c_str(), cfg));
        return *m_benches.back();
    }
    std::size_t size() const { return m_benches.size(); }
    testbench<Format>& front() const { return *m_benches.front(); }

private:
    std::vector<std::unique_ptr<testbench<Format>>> m_benches;  // oldest first
};

}  // namespace systolic::verify
