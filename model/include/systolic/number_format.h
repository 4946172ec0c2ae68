// Number formats: the operand type that flows through the array, the accumulator type each PE
// keeps, and the one multiply-accumulate rule that the array and the reference GEMM share.
// The array, PE and controller are templates over a format, so adding a format never copies them.
//
// Integer formats accumulate exactly until a sum leaves the accumulator's range; then the
// overflow mode decides: wrap modulo 2^bits, or saturate at the range's end. Either way the MAC
// reports that it happened, so the model can count it. Floating-point formats round the product,
// then add it (no fused multiply-add; the build passes -ffp-contract=off), in k order.
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

namespace systolic {

enum class overflow_mode { wrap, saturate };
std::string_view to_string(overflow_mode mode);
std::optional<overflow_mode> parse_overflow_mode(std::string_view name);

// bfloat16: the top half of an IEEE-754 binary32. Conversion from float rounds to nearest, ties
// to even; NaNs stay NaNs (quiet), infinities stay infinities.
struct bf16 {
    std::uint16_t bits = 0;

    static bf16 from_float(float f) {
        std::uint32_t u;
        std::memcpy(&u, &f, sizeof u);
        if ((u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu) != 0) {
            return bf16{static_cast<std::uint16_t>((u >> 16) | 0x0040u)};  // quiet NaN, sign kept
        }
        const std::uint32_t rounding_bias = 0x7fffu + ((u >> 16) & 1u);
        return bf16{static_cast<std::uint16_t>((u + rounding_bias) >> 16)};
    }
    float to_float() const {
        const std::uint32_t u = std::uint32_t{bits} << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    }
    friend bool operator==(bf16 x, bf16 y) { return x.bits == y.bits; }
    friend bool operator!=(bf16 x, bf16 y) { return x.bits != y.bits; }
};

// An operand or accumulator value from a double: bf16 rounds to nearest even, the others convert.
template <class T>
T value_from(double v) {
    if constexpr (std::is_same_v<T, bf16>) {
        return bf16::from_float(static_cast<float>(v));
    } else {
        return static_cast<T>(v);
    }
}

// Integer accumulation with a detected overflow. The product of two operands always fits the
// accumulator (int8 x int8 in int32, int32 x int32 in int64); only the running sum can overflow.
template <class Operand, class Accumulator>
struct integer_arithmetic {
    using operand_type = Operand;
    using accumulator_type = Accumulator;
    static constexpr bool is_integer = true;

    // acc + x; sets overflowed when the exact sum does not fit. Branch-free, so it vectorises.
    template <overflow_mode Mode>
    static constexpr Accumulator add(Accumulator acc, Accumulator x, bool& overflowed) {
        using U = std::make_unsigned_t<Accumulator>;
        const auto sum = static_cast<Accumulator>(static_cast<U>(acc) + static_cast<U>(x));
        overflowed = ((acc ^ sum) & (x ^ sum)) < 0;  // both inputs differ in sign from the result
        if constexpr (Mode == overflow_mode::saturate) {
            const Accumulator limit =
                acc < 0 ? std::numeric_limits<Accumulator>::min() : std::numeric_limits<Accumulator>::max();
            return overflowed ? limit : sum;
        }
        return sum;
    }
    template <overflow_mode Mode>
    static constexpr Accumulator mac(Accumulator acc, Operand a, Operand b, bool& overflowed) {
        return add<Mode>(acc, static_cast<Accumulator>(static_cast<Accumulator>(a) * b), overflowed);
    }
};

// IEEE-754 binary32 accumulation: the product is rounded to float, then added. Never overflows
// in the integer sense (it goes to infinity), so overflowed is always false.
template <class Operand>
struct float_arithmetic {
    using operand_type = Operand;
    using accumulator_type = float;
    static constexpr bool is_integer = false;

    static constexpr float widen(float v) { return v; }
    static float widen(bf16 v) { return v.to_float(); }

    template <overflow_mode>
    static float add(float acc, float x, bool& overflowed) {
        overflowed = false;
        return acc + x;
    }
    template <overflow_mode>
    static float mac(float acc, Operand a, Operand b, bool& overflowed) {
        overflowed = false;
        const float product = widen(a) * widen(b);
        return acc + product;
    }
};

// The same rules with the overflow mode chosen at run time, for code off the per-edge path (the
// combination of partial sums, the reference GEMM). The array instantiates both modes instead.
template <class Format>
typename Format::accumulator_type add(overflow_mode mode, typename Format::accumulator_type acc,
                                      typename Format::accumulator_type x, bool& overflowed) {
    return mode == overflow_mode::wrap ? Format::template add<overflow_mode::wrap>(acc, x, overflowed)
                                       : Format::template add<overflow_mode::saturate>(acc, x, overflowed);
}
template <class Format>
typename Format::accumulator_type mac(overflow_mode mode, typename Format::accumulator_type acc,
                                      typename Format::operand_type a, typename Format::operand_type b,
                                      bool& overflowed) {
    return mode == overflow_mode::wrap ? Format::template mac<overflow_mode::wrap>(acc, a, b, overflowed)
                                       : Format::template mac<overflow_mode::saturate>(acc, a, b, overflowed);
}

// Each format names itself and the .npy dtypes it reads (operands) and writes (accumulators).
struct int8_format : integer_arithmetic<std::int8_t, std::int32_t> {
    static constexpr const char* name = "int8";
    static constexpr const char* accumulator_name = "int32";
    static constexpr const char* operand_descr = "|i1";
    static constexpr const char* accumulator_descr = "<i4";
};

struct int32_format : integer_arithmetic<std::int32_t, std::int64_t> {
    static constexpr const char* name = "int32";
    static constexpr const char* accumulator_name = "int64";
    static constexpr const char* operand_descr = "<i4";
    static constexpr const char* accumulator_descr = "<i8";
};

struct fp32_format : float_arithmetic<float> {
    static constexpr const char* name = "fp32";
    static constexpr const char* accumulator_name = "fp32";
    static constexpr const char* operand_descr = "<f4";
    static constexpr const char* accumulator_descr = "<f4";
};

// bf16 operands are read from float32 .npy files and rounded to bf16 when loaded.
struct bf16_format : float_arithmetic<bf16> {
    static constexpr const char* name = "bf16";
    static constexpr const char* accumulator_name = "fp32";
    static constexpr const char* operand_descr = "<f4";
    static constexpr const char* accumulator_descr = "<f4";
};

}  // namespace systolic
