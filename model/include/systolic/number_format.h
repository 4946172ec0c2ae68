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
#include <iterator>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "systolic/names.h"

namespace systolic {

enum class overflow_mode { wrap, saturate };
inline constexpr enum_name<overflow_mode> overflow_mode_names[] = {
    {overflow_mode::wrap, "wrap", "integer accumulators wrap modulo 2^bits"},
    {overflow_mode::saturate, "saturate", "integer accumulators saturate at the range's end"},
};
static_assert(names_in_order(overflow_mode_names));
constexpr const char* to_string(overflow_mode mode) {
    return name_of(overflow_mode_names, mode);
}
constexpr std::optional<overflow_mode> parse_overflow_mode(std::string_view name) {
    return parse_name(overflow_mode_names, name);
}

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

// The four formats are a closed set: one list of types, one enum in the same order, one dispatch
// from a run-time dtype to the template code. Code that needs "the format named X" calls
// with_format, never compares names.
template <class... Formats>
struct type_list {
    static constexpr std::size_t size = sizeof...(Formats);
};
using formats = type_list<int8_format, int32_format, fp32_format, bf16_format>;

enum class dtype { int8, int32, fp32, bf16 };
inline constexpr enum_name<dtype> dtype_names[] = {
    {dtype::int8, int8_format::name, "int8 operands, int32 accumulators"},
    {dtype::int32, int32_format::name, "int32 operands, int64 accumulators"},
    {dtype::fp32, fp32_format::name, "fp32 operands and accumulators"},
    {dtype::bf16, bf16_format::name, "bf16 operands, fp32 accumulators"},
};
static_assert(names_in_order(dtype_names));
constexpr const char* to_string(dtype d) {
    return name_of(dtype_names, d);
}
constexpr std::optional<dtype> parse_dtype(std::string_view name) {
    return parse_name(dtype_names, name);
}

namespace detail {
template <std::size_t I, class List>
struct type_at;
template <std::size_t I, class First, class... Rest>
struct type_at<I, type_list<First, Rest...>> : type_at<I - 1, type_list<Rest...>> {};
template <class First, class... Rest>
struct type_at<0, type_list<First, Rest...>> {
    using type = First;
};
template <class Format, std::size_t I, class List>
struct index_of;
template <class Format, std::size_t I, class First, class... Rest>
struct index_of<Format, I, type_list<First, Rest...>> : index_of<Format, I + 1, type_list<Rest...>> {};
template <class Format, std::size_t I, class... Rest>
struct index_of<Format, I, type_list<Format, Rest...>> {
    static constexpr std::size_t value = I;
};
}  // namespace detail

template <dtype D>
using format_of = typename detail::type_at<std::size_t(D), formats>::type;
template <class Format>
inline constexpr dtype dtype_of = dtype(detail::index_of<Format, 0, formats>::value);

// The type list and the enum name the formats in the same order.
template <std::size_t... I>
constexpr bool formats_in_dtype_order(std::index_sequence<I...>) {
    return formats::size == std::size(dtype_names) &&
           (detail::same_name(detail::type_at<I, formats>::type::name, dtype_names[I].name) && ...);
}
static_assert(formats_in_dtype_order(std::make_index_sequence<formats::size>{}));

namespace detail {
template <class F, class... Formats>
void for_each_in(type_list<Formats...>, F& f) {
    (f(Formats{}), ...);
}
}  // namespace detail

// f(Format{}) for every format, in the list's order.
template <class F>
void for_each_format(F&& f) {
    detail::for_each_in(formats{}, f);
}

// f(Format{}) for the format d names; its result is f's (the same type for every format).
// E.g. with_format(d, [&](auto format) { return run<decltype(format)>(o); }).
template <class F, std::size_t I = 0>
decltype(auto) with_format(dtype d, F&& f) {
    using Format = typename detail::type_at<I, formats>::type;
    if constexpr (I + 1 < formats::size) {
        if (d != dtype(I)) return with_format<F, I + 1>(d, std::forward<F>(f));
    } else if (d != dtype(I)) {
        throw std::invalid_argument("with_format: no number format " + std::to_string(int(d)));
    }
    return std::forward<F>(f)(Format{});
}

}  // namespace systolic
