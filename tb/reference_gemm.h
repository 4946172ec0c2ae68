// The scoreboard's reference: a plain triple loop, independent of the array and its tiling.
// It accumulates in k order with the format's own multiply-accumulate rule, so that formats whose
// rounding depends on order compare bit for bit.
#pragma once

#include <cstdint>
#include <vector>

#include "systolic/counting.h"

namespace systolic::tb {

// C (M x P) = A (M x K, row-major) * B (K x P, row-major).
template <class Format>
std::vector<typename Format::accumulator_type> reference_gemm(
    const problem_shape& s, const std::vector<typename Format::operand_type>& a,
    const std::vector<typename Format::operand_type>& b) {
    std::vector<typename Format::accumulator_type> c(s.m * s.p);
    for (std::uint64_t r = 0; r < s.m; ++r) {
        for (std::uint64_t col = 0; col < s.p; ++col) {
            typename Format::accumulator_type acc{};
            for (std::uint64_t k = 0; k < s.k; ++k)
                acc = Format::mac(acc, a[r * s.k + k], b[k * s.p + col]);
            c[r * s.p + col] = acc;
        }
    }
    return c;
}

}  // namespace systolic::tb
