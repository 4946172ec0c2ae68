// The functional engine's arithmetic: one chunk of one tile as a blocked, vectorised loop nest that
// gives the same accumulators, bit for bit, as stepping array_core, and the same overflow count.
//
// Contract, per output c[i][j]: the kc products a[i][k] * b[k][j] are added in k order with the
// format's mac rule (floats: product rounded to float, then added; integers: exact add with wrap
// or saturate at every step). Floats are never split into partial sums, so the order is the
// array's. Integers take any order or instruction only while a bound proves that no step can leave
// the accumulator's range (then every mode agrees and the count is zero); otherwise they run a
// per-step path that wraps or saturates and counts exactly as the array does.
#pragma once

#include <cstddef>
#include <cstdint>

#include "systolic/number_format.h"

namespace systolic {

// c (rows x cols, row stride ldc) accumulates a (rows x kc, stride lda) times b (kc x cols, stride
// ldb): each output's sum runs in k order with Format's mac rule, so the result is bit-identical to
// stepping the array (array_core). Integer formats apply `mode` (wrap or saturate) at every step.
// Returns the number of accumulation steps that overflowed among the rows x cols outputs, counted
// exactly as array_core counts them (one per step whose exact sum left the accumulator's range).
// Thread-safe: the packing buffers are per thread.
template <class Format>
std::uint64_t gemm_accumulate(std::size_t rows, std::size_t cols, std::size_t kc,
                              const typename Format::operand_type* a, std::size_t lda,
                              const typename Format::operand_type* b, std::size_t ldb,
                              typename Format::accumulator_type* c, std::size_t ldc, overflow_mode mode);

// Which code path gemm_accumulate takes on this machine for its fast (bound-proven or float) case:
// "avx512", "avx2" (micro-kernels; int32 beyond 2^53 as generic) or "generic" (the portable loop
// nest, with an AVX2 clone where GCC makes ifuncs). SYSTOLIC_ISA=avx2 or =generic in the
// environment, read once, forces the lesser paths.
const char* gemm_kernel_isa();

}  // namespace systolic
