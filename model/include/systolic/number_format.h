// Number formats: the operand type that flows through the array and the accumulator type each
// PE keeps, plus the one multiply-accumulate rule that the array and the reference GEMM share.
// The array, PE and controller are templates over a format, so adding a format never copies them.
#pragma once

#include <cstdint>

namespace systolic {

// int32 operands, 64-bit accumulation. Every int32 x int32 product fits in 64 bits, so the result
// is exact unless a sum leaves the int64 range; then it wraps modulo 2^64 (never undefined behaviour).
struct int32_format {
    using operand_type = std::int32_t;
    using accumulator_type = std::int64_t;
    static constexpr const char* name = "int32";
    static constexpr const char* accumulator_name = "int64";

    static constexpr accumulator_type mac(accumulator_type acc, operand_type a, operand_type b) {
        const auto product = static_cast<std::uint64_t>(static_cast<accumulator_type>(a) * b);
        return static_cast<accumulator_type>(static_cast<std::uint64_t>(acc) + product);
    }
};

}  // namespace systolic
