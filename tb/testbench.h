// The testbench: tile controller -> bus monitor -> memory, with the systolic array beside the
// controller and the scoreboard fed by the monitor. One testbench serves any number of jobs with
// its array size N, so a process that can elaborate only once can still run many cases.
//
// Memory map per job: A, B and C in that order, each preceded and followed by guard bytes and with
// row strides padded past the row length, all filled with a seeded pseudo-random pattern. A write
// that misses C therefore changes bytes the scoreboard compares, even when the value is zero.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <stdexcept>
#include <systemc>
#include <vector>

#include "bus_monitor.h"
#include "problem.h"
#include "reference_gemm.h"
#include "scoreboard.h"
#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/memory.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_controller.h"

namespace systolic::tb {

struct run_options {
    tile_order order = tile_order::row_major;
    std::uint64_t order_seed = 0;  // for tile_order::random
    bool packed = false;           // rows back to back and no guard bands (the layout a user's buffer has)
    std::uint64_t fill_seed = 0x5eed;
};

template <class Format>
struct run_outcome {
    using accumulator_type = typename Format::accumulator_type;
    matmul_job job;
    expected_counts expected;
    job_result result;
    scoreboard_summary scoreboard;
    std::vector<accumulator_type> c;  // C as read back from memory (M x P), whatever was written

    bool pass() const { return scoreboard.pass(); }
};

template <class Format>
class testbench : public sc_core::sc_module {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;

    struct config {
        std::size_t n = 2;
        typename tile_controller<Format>::config controller{};
        systolic::memory::config mem{};
    };

    memory mem;
    bus_monitor monitor;
    systolic_array<Format> array;
    tile_controller<Format> controller;

    testbench(const sc_core::sc_module_name& name, const config& cfg)
        : sc_core::sc_module(name),
          mem("memory", cfg.mem),
          monitor("monitor"),
          array("array", cfg.n),
          controller("controller", array, cfg.controller) {
        controller.initiator_socket.bind(monitor.target_socket);
        monitor.initiator_socket.bind(mem.target_socket);
        monitor.on_write = [this](const tlm::tlm_generic_payload& t) { m_scoreboard.observe_write(t); };
    }

    std::size_t size() const { return array.size(); }

    // Runs one job to completion (or failure) and checks it. Call from sc_main or a test, not from
    // a process: it calls sc_start.
    run_outcome<Format> run(const problem<Format>& pr, const run_options& opt = {}) {
        run_outcome<Format> out;
        const auto& s = pr.shape;
        if (pr.a.size() != s.m * s.k || pr.b.size() != s.k * s.p)
            throw std::invalid_argument("testbench: operand sizes do not match the shape");
        out.job = plan_memory(s, opt.packed);  // the same for the same shape and packing
        out.job.order = opt.order;
        out.job.seed = opt.order_seed;
        out.expected = count_job(s, size());

        fill_memory(out.job, pr, opt);
        const std::vector<std::uint8_t> before(mem.core().data(), mem.core().data() + mem.core().size());
        m_scoreboard.expect(out.job.c, reference_gemm<Format>(s, pr.a, pr.b));

        controller.start(out.job);
        sc_core::sc_start(time_limit(out.job), sc_core::SC_EXIT_ON_STARVATION);
        out.result = controller.result();
        if (controller.busy()) {
            out.result.status = job_status::running;
            out.result.error = "the job did not finish within the simulated time limit";
        }
        out.scoreboard =
            m_scoreboard.finish(out.result, out.expected, mem.core().data(), mem.core().base(), before);

        out.c.resize(s.m * s.p);
        for (std::uint64_t r = 0; r < s.m; ++r)
            for (std::uint64_t col = 0; col < s.p; ++col)
                mem.core().read(out.job.c.address(r, col), &out.c[r * s.p + col], sizeof(accumulator_type));
        return out;
    }

    // Where run() puts A, B and C for this shape: guard bands and padded strides unless packed.
    matmul_job plan_memory(const problem_shape& s, bool packed) const {
        const std::uint64_t osz = sizeof(operand_type), asz = sizeof(accumulator_type);
        const std::uint64_t g = packed ? 0 : guard;
        auto stride = [&](std::uint64_t row_bytes) {
            return packed ? row_bytes : round_up(row_bytes + 8, 16);
        };
        const std::uint64_t a_stride = stride(s.k * osz), b_stride = stride(s.p * osz),
                            c_stride = stride(s.p * asz);
        const std::uint64_t a_base = mem.core().base() + g;
        const std::uint64_t b_base = round_up(a_base + s.m * a_stride + g, 16);
        const std::uint64_t c_base = round_up(b_base + s.k * b_stride + g, 16);
        return make_job(s, osz, asz, a_base, b_base, c_base, a_stride, b_stride, c_stride);
    }

private:
    static constexpr std::uint64_t guard = 64;

    static std::uint64_t round_up(std::uint64_t v, std::uint64_t a) { return (v + a - 1) / a * a; }

    void fill_memory(const matmul_job& job, const problem<Format>& pr, const run_options& opt) {
        const auto& s = pr.shape;
        mem.resize(job.c.base + s.m * job.c.row_stride + (opt.packed ? 0 : guard) - mem.core().base());
        std::mt19937_64 rng(opt.fill_seed);
        std::uint8_t* bytes = mem.core().data();
        for (std::uint64_t i = 0; i < mem.core().size(); ++i)
            bytes[i] = static_cast<std::uint8_t>(rng() >> 56);
        for (std::uint64_t r = 0; r < s.m; ++r)
            mem.core().write(job.a.address(r, 0), &pr.a[r * s.k], s.k * sizeof(operand_type));
        for (std::uint64_t k = 0; k < s.k; ++k)
            mem.core().write(job.b.address(k, 0), &pr.b[k * s.p], s.p * sizeof(operand_type));
    }

    // Generous: ten times what every clock and every memory access of the job would take.
    sc_core::sc_time time_limit(const matmul_job& job) const {
        const auto counts = count_job(job.shape, size());
        const double accesses = double(counts.tiles) * double(size() + job.shape.k + size()) + 1;
        const auto& mc = mem.cfg();
        const sc_core::sc_time slowest = std::max(mc.read_latency, mc.write_latency);
        return (double(counts.advance_edges + 2 * counts.tiles) * controller.cfg().clock_period +
                accesses * slowest) *
                   10.0 +
               sc_core::sc_time(1, sc_core::SC_US);
    }

    scoreboard<Format> m_scoreboard;
};

}  // namespace systolic::tb
