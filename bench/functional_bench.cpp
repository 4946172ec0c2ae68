// Benchmarks named functional/<what>/M=1024/K=1600/P=1600, each reporting macs_per_s (real
// MACs, M x K x P per iteration, per wall second) and macs_per_cpu_s (per CPU second of the
// benchmark's thread: the figure to compare when other work shares the machine):
//  - functional/gemm_accumulate/<format>: the layer as 128 x 128 output tiles, one
//    gemm_accumulate call of kc = 1600 per tile, as the functional engine runs a 128 x 128 array
//    with one K chunk. C is zeroed at the start of every iteration (about 1% of the time), so the
//    integer bound holds as it would in a job. The kernel's C is checked once against the reference
//    GEMM, bit for bit, before the timing. x_openblas and x_openblas_cpu are the ratios to the
//    whole-layer sgemm figures of the same run.
//  - functional/openblas_sgemm: cblas_sgemm on the whole layer in one call, one thread. Its label
//    is openblas_get_corename(): set OPENBLAS_CORETYPE (e.g. SkylakeX) for this CPU's kernel,
//    since Debian's OpenBLAS may detect a virtual CPU as Prescott and run a generic one.
//  - functional/openblas_sgemm_tiles: the same 128 x 128 tiles as the kernel, beta = 1.
//  - functional/reference_gemm/<format>: the testbench's reference on the same layer.
#include "functional_bench.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <string>
#include <vector>

#include "systolic/counting.h"
#include "systolic/gemm_kernel.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

#ifdef SYSTOLIC_HAVE_OPENBLAS
#include <cblas.h>
extern "C" {
// Declared by OpenBLAS's cblas.h too; repeated so that a cblas.h without them still compiles.
void openblas_set_num_threads(int num_threads);
char* openblas_get_corename(void);
}
#endif

namespace {

using namespace systolic;

constexpr problem_shape layer{1024, 1600, 1600};
constexpr std::size_t tile = 128;
constexpr double layer_macs = double(layer.m) * double(layer.k) * double(layer.p);

// Wall and this thread's CPU clocks, read together around a benchmark's loop. The machine is often
// shared: the CPU-time rate shows what the code does when it gets the core, the wall rate what it
// got. (OpenBLAS with one thread computes on the calling thread, so both clocks apply to it too.)
struct clocks {
    std::chrono::steady_clock::time_point wall = std::chrono::steady_clock::now();
    double cpu = thread_cpu_seconds();

    static double thread_cpu_seconds() {
        timespec ts{};
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
    }
};

struct rates {
    double wall = 0;  // MACs per wall second
    double cpu = 0;   // MACs per CPU second of this thread
};

// The sgemm rates of this run (whole layer, one call), once its benchmark has run: the kernels
// report their ratios to it, from the same clocks.
rates g_openblas;

// MACs per second over the benchmark's iterations since the clocks were read (the loop just ended).
rates rates_since(const clocks& t0, const benchmark::State& state) {
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0.wall).count();
    const double cpu = clocks::thread_cpu_seconds() - t0.cpu;
    const double macs = layer_macs * double(state.iterations());
    return {wall > 0 ? macs / wall : 0, cpu > 0 ? macs / cpu : 0};
}

void report(benchmark::State& state, const rates& r, bool ratio) {
    state.counters["macs_per_s"] = benchmark::Counter(r.wall);
    state.counters["macs_per_cpu_s"] = benchmark::Counter(r.cpu);
    if (ratio && g_openblas.wall > 0) {
        state.counters["x_openblas"] = r.wall / g_openblas.wall;
        state.counters["x_openblas_cpu"] = r.cpu / g_openblas.cpu;
    }
}

template <class Format>
const verify::problem<Format>& layer_problem() {
    static const verify::problem<Format> p = verify::random_problem<Format>(layer, 1600);
    return p;
}

// The layer as the functional engine runs it on a 128 x 128 array: every output tile in one call.
template <class Format>
std::uint64_t run_tiles(const verify::problem<Format>& pr, typename Format::accumulator_type* c) {
    std::uint64_t overflows = 0;
    for (std::uint64_t r0 = 0; r0 < layer.m; r0 += tile) {
        for (std::uint64_t c0 = 0; c0 < layer.p; c0 += tile) {
            const std::size_t rows = std::min<std::uint64_t>(tile, layer.m - r0);
            const std::size_t cols = std::min<std::uint64_t>(tile, layer.p - c0);
            overflows +=
                gemm_accumulate<Format>(rows, cols, layer.k, &pr.a[r0 * layer.k], layer.k, &pr.b[c0], layer.p,
                                        &c[r0 * layer.p + c0], layer.p, overflow_mode::wrap);
        }
    }
    return overflows;
}

template <class Format>
void bench_kernel(benchmark::State& state) {
    using acc_t = typename Format::accumulator_type;
    const auto& pr = layer_problem<Format>();
    std::vector<acc_t> c(layer.m * layer.p);
    {  // untimed: the kernel's C, bit for bit, against the reference
        run_tiles<Format>(pr, c.data());
        const auto want = verify::reference_gemm<Format>(layer, pr.a, pr.b);
        if (std::memcmp(want.data(), c.data(), c.size() * sizeof(acc_t)) != 0) {
            state.SkipWithError("gemm_accumulate differs from the reference GEMM");
            return;
        }
    }
    const clocks t0;
    for (auto _ : state) {
        std::memset(c.data(), 0, c.size() * sizeof(acc_t));
        benchmark::DoNotOptimize(run_tiles<Format>(pr, c.data()));
        benchmark::ClobberMemory();
    }
    report(state, rates_since(t0, state), true);
    state.SetLabel(std::string("isa ") + gemm_kernel_isa());
}

template <class Format>
void bench_reference(benchmark::State& state) {
    const auto& pr = layer_problem<Format>();
    const clocks t0;
    for (auto _ : state) {
        auto c = verify::reference_gemm<Format>(layer, pr.a, pr.b);
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    report(state, rates_since(t0, state), false);
}

#ifdef SYSTOLIC_HAVE_OPENBLAS
void bench_sgemm(benchmark::State& state, bool tiled) {
    openblas_set_num_threads(1);
    const auto& pr = layer_problem<fp32_format>();
    std::vector<float> c(layer.m * layer.p);
    const int m = int(layer.m), k = int(layer.k), p = int(layer.p);
    const clocks t0;
    for (auto _ : state) {
        if (!tiled) {
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, p, k, 1.0f, pr.a.data(), k, pr.b.data(),
                        p, 0.0f, c.data(), p);
        } else {
            std::memset(c.data(), 0, c.size() * sizeof(float));
            for (int r0 = 0; r0 < m; r0 += int(tile)) {
                for (int c0 = 0; c0 < p; c0 += int(tile)) {
                    const int rows = std::min(int(tile), m - r0), cols = std::min(int(tile), p - c0);
                    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, rows, cols, k, 1.0f,
                                &pr.a[std::size_t(r0) * k], k, &pr.b[std::size_t(c0)], p, 1.0f,
                                &c[std::size_t(r0) * p + c0], p);
                }
            }
        }
        benchmark::DoNotOptimize(c.data());
        benchmark::ClobberMemory();
    }
    const rates r = rates_since(t0, state);
    if (!tiled) g_openblas = r;
    report(state, r, tiled);
    state.SetLabel(std::string("corename ") + openblas_get_corename());
}
#endif

const std::string shape_suffix =
    "/M=" + std::to_string(layer.m) + "/K=" + std::to_string(layer.k) + "/P=" + std::to_string(layer.p);

template <class Format>
void register_format() {
    benchmark::RegisterBenchmark(
        ("functional/gemm_accumulate/" + std::string(Format::name) + shape_suffix).c_str(),
        bench_kernel<Format>)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.5);
}

template <class Format>
void register_reference() {
    benchmark::RegisterBenchmark(
        ("functional/reference_gemm/" + std::string(Format::name) + shape_suffix).c_str(),
        bench_reference<Format>)
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.5);
}

}  // namespace

void register_functional_benchmarks() {
#ifdef SYSTOLIC_HAVE_OPENBLAS
    benchmark::RegisterBenchmark(("functional/openblas_sgemm" + shape_suffix).c_str(),
                                 [](benchmark::State& st) { bench_sgemm(st, false); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.5);
    benchmark::RegisterBenchmark(("functional/openblas_sgemm_tiles" + shape_suffix).c_str(),
                                 [](benchmark::State& st) { bench_sgemm(st, true); })
        ->Unit(benchmark::kMillisecond)
        ->UseRealTime()
        ->MinTime(0.5);
#endif
    for_each_format([](auto format) { register_format<decltype(format)>(); });
    for_each_format([](auto format) { register_reference<decltype(format)>(); });
}
