#include "systolic/gemm_kernel.h"

namespace systolic {

template <class Format>
std::uint64_t gemm_accumulate(std::size_t rows, std::size_t cols, std::size_t kc,
                              const typename Format::operand_type* a, std::size_t lda,
                              const typename Format::operand_type* b, std::size_t ldb,
                              typename Format::accumulator_type* c, std::size_t ldc, overflow_mode mode) {
    std::uint64_t overflows = 0;
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t k = 0; k < kc; ++k) {
            for (std::size_t j = 0; j < cols; ++j) {
                bool ovf = false;
                c[i * ldc + j] = mac<Format>(mode, c[i * ldc + j], a[i * lda + k], b[k * ldb + j], ovf);
                overflows += ovf;
            }
        }
    }
    return overflows;
}

#define SYSTOLIC_GEMM_INSTANCE(F)                                                                        \
    template std::uint64_t gemm_accumulate<F>(std::size_t, std::size_t, std::size_t, const F::operand_type*, \
                                              std::size_t, const F::operand_type*, std::size_t,          \
                                              F::accumulator_type*, std::size_t, overflow_mode);
SYSTOLIC_GEMM_INSTANCE(int8_format)
SYSTOLIC_GEMM_INSTANCE(int32_format)
SYSTOLIC_GEMM_INSTANCE(fp32_format)
SYSTOLIC_GEMM_INSTANCE(bf16_format)

}  // namespace systolic
