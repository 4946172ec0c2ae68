// The reference GEMM for the four formats, compiled here once (reference_gemm.h declares them extern).
#include "systolic/verify/reference_gemm.h"

namespace systolic::verify {

#define SYSTOLIC_REFERENCE_INSTANTIATE(F)                                                               \
    template class reference_parts<F>;                                                                  \
    template counted_gemm<F> reference_gemm_counted<F>(                                                 \
        const problem_shape&, const std::vector<F::operand_type>&, const std::vector<F::operand_type>&, \
        const reference_options&);                                                                      \
    template std::vector<F::accumulator_type> reference_gemm<F>(                                        \
        const problem_shape&, const std::vector<F::operand_type>&, const std::vector<F::operand_type>&, \
        const reference_options&);                                                                      \
    template std::vector<std::uint8_t> encode_c<F>(const std::vector<F::accumulator_type>&,             \
                                                   const quantization&, const std::vector<double>&,     \
                                                   const std::vector<std::int32_t>&);
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_REFERENCE_INSTANTIATE)
#undef SYSTOLIC_REFERENCE_INSTANTIATE

}  // namespace systolic::verify
