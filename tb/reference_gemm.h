// The scoreboard's reference: plain loops, independent of the array, its skew and its tiling.
// It reproduces the model's arithmetic exactly, not approximately: the format's own
// multiply-accumulate in k order, the same overflow mode, the same K chunks and the same way of
// combining partial sums, so that fp32 and bf16 compare bit for bit.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"

namespace systolic::tb {

struct reference_options {
    std::uint64_t k_tile = 0;  // 0: one chunk of K
    k_policy policy = k_policy::preserve;
    overflow_mode overflow = overflow_mode::wrap;
    quantization quant;  // only per_partial matters here: partials rounded before combining
};

// The wide result, M x P accumulators: C = A (M x K) * B (K x P), both row-major.
template <class Format>
std::vector<typename Format::accumulator_type> reference_gemm(
    const problem_shape& s, const std::vector<typename Format::operand_type>& a,
    const std::vector<typename Format::operand_type>& b, const reference_options& opt = {}) {
    using acc_t = typename Format::accumulator_type;
    // Preserved accumulators see one unbroken k-ordered sum; partial sums restart every chunk.
    const bool split = opt.policy == k_policy::partials && k_chunks(s.k, opt.k_tile) > 1;
    const std::uint64_t chunk = split ? effective_k_tile(s.k, opt.k_tile) : s.k;

    std::vector<acc_t> c(s.m * s.p);
    bool ovf;  // the reference does not count overflows
    for (std::uint64_t r = 0; r < s.m; ++r) {
        for (std::uint64_t col = 0; col < s.p; ++col) {
            acc_t total{};
            for (std::uint64_t k0 = 0; k0 < s.k; k0 += chunk) {
                acc_t partial{};
                for (std::uint64_t k = k0; k < s.k && k < k0 + chunk; ++k)
                    partial = mac<Format>(opt.overflow, partial, a[r * s.k + k], b[k * s.p + col], ovf);
                if (split && opt.quant.per_partial) partial = rounded_partial(partial, opt.quant);
                total = k0 == 0 ? partial : add<Format>(opt.overflow, total, partial, ovf);
            }
            c[r * s.p + col] = total;
        }
    }
    return c;
}

// C's bytes from the wide result: the accumulators themselves, or int8 codes. With per-partial
// quantization the partials were already scaled and rounded, so only the zero point and the
// saturation remain.
template <class Format>
std::vector<std::uint8_t> encode_c(const std::vector<typename Format::accumulator_type>& wide,
                                   const quantization& quant) {
    using acc_t = typename Format::accumulator_type;
    if (!quant.enabled) {
        std::vector<std::uint8_t> bytes(wide.size() * sizeof(acc_t));
        std::memcpy(bytes.data(), wide.data(), bytes.size());
        return bytes;
    }
    std::vector<std::uint8_t> bytes(wide.size());
    for (std::size_t i = 0; i < wide.size(); ++i) {
        const std::int8_t q = quant.per_partial ? saturate_int8(double(wide[i]), quant.zero_point)
                                                : requantize(double(wide[i]), quant);
        bytes[i] = static_cast<std::uint8_t>(q);
    }
    return bytes;
}

}  // namespace systolic::tb
