#include "systolic/verify/memory_plan.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

namespace systolic::verify {

namespace {

constexpr std::uint64_t guard = 64;

std::uint64_t round_up(std::uint64_t v, std::uint64_t a) {
    return (v + a - 1) / a * a;
}

}  // namespace

matmul_job plan_memory(const problem_shape& s, const job_options& opt, std::uint64_t base,
                       std::uint64_t operand_bytes, std::uint64_t accumulator_bytes) {
    const std::uint64_t osz = operand_bytes, asz = accumulator_bytes;
    const std::uint64_t csz = output_size(opt.run.quant, asz);
    const std::uint64_t g = opt.packed ? 0 : guard;
    auto stride = [&](std::uint64_t row_bytes) {
        return opt.packed ? row_bytes : round_up(row_bytes + 8, 16);
    };
    const std::uint64_t a_stride = stride(s.k * osz), b_stride = stride(s.p * osz),
                        c_stride = stride(s.p * csz);
    const std::uint64_t a_base = base + g;
    const std::uint64_t b_base = round_up(a_base + s.m * a_stride + g, 16);
    const std::uint64_t c_base = round_up(b_base + s.k * b_stride + g, 16);
    matmul_job job = make_job(s, osz, csz, a_base, b_base, c_base, a_stride, b_stride, c_stride);
    job.run = opt.run;
    if (job.uses_partial_buffer()) {
        const std::uint64_t p_stride = stride(s.p * asz);
        job.partial = make_layout(round_up(c_base + s.m * c_stride + g, 16), s.m, s.p, asz, p_stride);
    }
    if (job.run.quant.columns) {
        const matrix_layout& last = job.uses_partial_buffer() ? job.partial : job.c;
        job.run.quant.columns->base = round_up(last.base + s.m * last.row_stride + g, 16);
    }
    return job;
}

std::uint64_t memory_extent(const matmul_job& job, std::uint64_t base, bool packed) {
    const auto end = [&](const matrix_layout& l, std::uint64_t rows) { return l.base + rows * l.row_stride; };
    const auto& s = job.shape;
    std::uint64_t last = std::max({end(job.a, s.m), end(job.b, s.k), end(job.c, s.m)});
    if (job.uses_partial_buffer()) last = std::max(last, end(job.partial, s.m));
    if (job.run.quant.columns) last = std::max<std::uint64_t>(last, column_range(job).end);
    return last + (packed ? 0 : guard) - base;
}

void fill_memory(memory_access& mem, std::uint64_t extent, const matmul_job& job, const void* a,
                 const void* b, std::uint64_t operand_bytes, std::uint64_t fill_seed) {
    const auto& s = job.shape;
    mem.reserve(extent);
    // Eight pattern bytes per value, written a chunk at a time: big jobs fill tens of megabytes, so
    // the pattern is SplitMix64's sequence (an add and a mix per value, no state to carry).
    std::uint64_t state = fill_seed;
    const auto next = [&state] {
        std::uint64_t z = state += 0x9e3779b97f4a7c15u;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
        return z ^ (z >> 31);
    };
    constexpr std::uint64_t chunk = std::uint64_t{1} << 16;  // a multiple of 8: the same pattern
    std::vector<std::uint8_t> bytes(std::min(extent, chunk));
    for (std::uint64_t at = 0; at < extent; at += chunk) {
        const std::uint64_t n = std::min(chunk, extent - at);
        for (std::uint64_t i = 0; i < n; i += 8) {
            const std::uint64_t v = next();
            std::memcpy(bytes.data() + i, &v, std::min<std::uint64_t>(8, n - i));
        }
        mem.write(mem.base() + at, bytes.data(), n);
    }
    const auto* pa = static_cast<const std::uint8_t*>(a);
    const auto* pb = static_cast<const std::uint8_t*>(b);
    for (std::uint64_t r = 0; r < s.m; ++r)
        mem.write(job.a.address(r, 0), pa + r * s.k * operand_bytes, s.k * operand_bytes);
    for (std::uint64_t k = 0; k < s.k; ++k)
        mem.write(job.b.address(k, 0), pb + k * s.p * operand_bytes, s.p * operand_bytes);
}

std::string column_values_error(const matmul_job& job, const std::vector<double>& scales,
                                const std::vector<std::int32_t>& zero_points) {
    if (!job.run.quant.columns) return {};
    const std::uint64_t p = job.shape.p;
    if (scales.size() == p && (!job.run.quant.columns->zero_points || zero_points.size() == p)) return {};
    return "verify: per-column quantization needs P = " + std::to_string(p) + " scales" +
           (job.run.quant.columns->zero_points ? " and zero points" : "");
}

void write_columns(memory_access& mem, const matmul_job& job, const std::vector<double>& scales,
                   const std::vector<std::int32_t>& zero_points) {
    if (!job.run.quant.columns) return;
    if (auto err = column_values_error(job, scales, zero_points); !err.empty())
        throw std::invalid_argument(err);
    const column_vectors& v = *job.run.quant.columns;
    const std::uint64_t p = job.shape.p;
    // The layout of column_vectors: little-endian, which is how this host stores both types.
    static_assert(sizeof(double) == column_vectors::scale_bytes, "float64 scales");
    mem.write(v.scale_address(0), reinterpret_cast<const std::uint8_t*>(scales.data()),
              p * column_vectors::scale_bytes);
    if (v.zero_points)
        mem.write(v.zero_point_address(p, 0), reinterpret_cast<const std::uint8_t*>(zero_points.data()),
                  p * column_vectors::zero_point_bytes);
}

}  // namespace systolic::verify
