#include "fabric_bench.h"

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstring>
#include <iostream>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/fabric.h"
#include "systolic/memory.h"
#include "systolic/tile_controller.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

namespace {

using namespace systolic;
using format = int32_format;

constexpr std::size_t fabric_n = 128;
constexpr fabric_shape fabric_2x2{2, 2, 1};

// Memory, a fabric and the controller that drives it, with the operands in memory.
class fabric_rig final : public sc_core::sc_module {
public:
    using operand_type = format::operand_type;
    using accumulator_type = format::accumulator_type;

    double seconds = 0, pe_updates = 0;  // over the timed runs

    fabric_rig(const sc_core::sc_module_name& name, unsigned threads, std::uint64_t k)
        : sc_core::sc_module(name),
          m_geo{fabric_2x2, fabric_n, 1},
          m_shape{m_geo.tile_rows(), k, m_geo.tile_cols()},
          m_problem(verify::random_problem<format>(m_shape, 17)),
          m_job(plan(m_shape)),
          mem("memory", memory_config(m_job)),
          fab("fabric", m_geo, threads),
          controller("controller", fab) {
        controller.initiator_socket.bind(mem.target_socket);
        for (std::uint64_t r = 0; r < m_shape.m; ++r)
            mem.core().write(m_job.a.address(r, 0), &m_problem.a[r * k], k * sizeof(operand_type));
        for (std::uint64_t kk = 0; kk < k; ++kk)
            mem.core().write(m_job.b.address(kk, 0), &m_problem.b[kk * m_shape.p],
                             m_shape.p * sizeof(operand_type));
        m_expected = count_fabric_job(m_shape, m_geo).counts;
    }

    std::string label() const {
        return "int32/" + to_string(m_geo.shape) + "/N=" + std::to_string(fabric_n) +
               "/threads=" + std::to_string(fab.state().threads());
    }
    unsigned threads() const { return fab.state().threads(); }
    // PE-updates per advance edge: every array steps every edge of a one-tile job.
    double pes() const { return double(m_geo.shape.arrays()) * double(fabric_n * fabric_n); }

    std::string run_job() {
        controller.start(m_job);
        sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_SEC), sc_core::SC_EXIT_ON_STARVATION);
        const auto& r = controller.result();
        if (controller.busy() || !r.completed()) return label() + ": the job did not complete: " + r.error;
        if (r.advance_edges != m_expected.advance_edges)
            return label() + ": advance edges differ from the rule";
        return {};
    }

    std::string check() const {
        const auto want = verify::encode_c<format>(
            verify::reference_gemm<format>(m_shape, m_problem.a, m_problem.b, {}), {});
        std::vector<std::uint8_t> row(m_shape.p * sizeof(accumulator_type));
        for (std::uint64_t r = 0; r < m_shape.m; ++r) {
            mem.core().read(m_job.c.address(r, 0), row.data(), row.size());
            if (std::memcmp(row.data(), &want[r * row.size()], row.size()) != 0)
                return label() + ": C differs from the reference GEMM at row " + std::to_string(r);
        }
        return {};
    }

    std::uint64_t edges() const { return controller.result().advance_edges; }

private:
    static matmul_job plan(const problem_shape& s) {
        const std::uint64_t b_base = s.m * s.k * sizeof(operand_type);
        const std::uint64_t c_base = b_base + s.k * s.p * sizeof(operand_type);
        return make_job(s, sizeof(operand_type), sizeof(accumulator_type), 0, b_base, c_base);
    }
    static memory::config memory_config(const matmul_job& job) {
        memory::config cfg;
        cfg.base = 0;
        cfg.size = job.c.base + job.shape.m * job.shape.p * sizeof(accumulator_type);
        return cfg;
    }

    fabric_geometry m_geo;
    problem_shape m_shape;
    verify::problem<format> m_problem;
    matmul_job m_job;
    expected_counts m_expected;

public:
    memory mem;
    fabric<format> fab;
    tile_controller<format> controller;
};

std::vector<std::unique_ptr<fabric_rig>>& rigs() {
    static auto* v = new std::vector<std::unique_ptr<fabric_rig>>;  // kept to the end, as bench.cpp's rigs
    return *v;
}

void bench_fabric(benchmark::State& state, fabric_rig& rig) {
    for (auto _ : state) {
        const auto t0 = std::chrono::steady_clock::now();
        const std::string err = rig.run_job();
        if (!err.empty()) {
            state.SkipWithError(err.c_str());
            break;
        }
        rig.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        rig.pe_updates += rig.pes() * double(rig.edges());
    }
    state.counters["pe_updates_per_s"] = benchmark::Counter(
        rig.pes() * double(rig.edges()) * double(state.iterations()), benchmark::Counter::kIsRate);
}

}  // namespace

void build_fabric_rigs(std::uint64_t k) {
    for (unsigned threads : {1u, 2u}) {
        const std::string name = "fabric_rig_t" + std::to_string(threads);
        rigs().push_back(std::make_unique<fabric_rig>(name.c_str(), threads, k));
    }
}

bool check_fabric_rigs() {
    for (auto& r : rigs()) {
        std::string err = r->run_job();
        if (err.empty()) err = r->check();
        if (!err.empty()) {
            std::cerr << "systolic-bench: " << err << "\n";
            return false;
        }
    }
    return true;
}

void register_fabric_benchmarks() {
    for (auto& r : rigs()) {
        fabric_rig* rig = r.get();
        benchmark::RegisterBenchmark(("fabric/" + rig->label()).c_str(),
                                     [rig](benchmark::State& st) { bench_fabric(st, *rig); })
            ->Unit(benchmark::kMillisecond)
            ->UseRealTime();
    }
}

void print_fabric_summary(std::FILE* out) {
    double one = 0;
    std::string line;
    for (const auto& r : rigs()) {
        if (r->seconds == 0) continue;
        const double rate = r->pe_updates / r->seconds;
        if (r->threads() == 1) one = rate;
        char buf[96];
        std::snprintf(buf, sizeof buf, "%s%u thread%s %.1f M PE-updates/s", line.empty() ? "" : ", ",
                      r->threads(), r->threads() == 1 ? "" : "s", rate / 1e6);
        line += buf;
        if (r->threads() > 1 && one > 0) {
            std::snprintf(buf, sizeof buf, " (%.2fx)", rate / one);
            line += buf;
        }
    }
    if (!line.empty())
        std::fprintf(out, "fabric 2x2x1 of %zux%zu int32, per wall second: %s\n", fabric_n, fabric_n,
                     line.c_str());
    std::fflush(out);
}
