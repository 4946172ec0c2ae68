// The functional engine's kernel: a block of C accumulates A times B with every output's sum in
// k order and the format's mac rule, so the result is bit-identical to stepping the array.
#pragma once

#include <cstddef>
#include <cstdint>

#include "systolic/number_format.h"

namespace systolic {

// c (rows x cols, row stride ldc) accumulates a (rows x kc, stride lda) times b (kc x cols, stride ldb):
// each output's sum runs in k order with Format's mac rule, so the result is bit-identical to
// stepping the array (array_core). Integer formats apply `mode` (wrap or saturate) at every step.
// Returns the number of accumulation steps that overflowed among the rows x cols outputs, counted
// exactly as array_core counts them (one per step whose exact sum left the accumulator's range).
template <class Format>
std::uint64_t gemm_accumulate(std::size_t rows, std::size_t cols, std::size_t kc,
                              const typename Format::operand_type* a, std::size_t lda,
                              const typename Format::operand_type* b, std::size_t ldb,
                              typename Format::accumulator_type* c, std::size_t ldc, overflow_mode mode);

}  // namespace systolic
