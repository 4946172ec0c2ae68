// The bit arithmetic of the energy account's counters (action_counter.h and the cores' tallies):
// a register's bits at its own width, the bits that toggle between two values, whether an operand
// gates a MAC, and a choice of counting kernel made once per call from the machine's instructions.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "systolic/vector_isa.h"

namespace systolic {

// A register value's bits at its own width (an int8's 8, a bf16's 16), zero-extended to 32 bits,
// or 64 for a 64-bit register (int32's accumulator).
template <class T>
using register_word = std::conditional_t<sizeof(T) == 8, std::uint64_t, std::uint32_t>;
template <class T>
inline __attribute__((always_inline)) register_word<T> register_bits(T v) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>);
    using raw = std::conditional_t<
        sizeof(T) == 1, std::uint8_t,
        std::conditional_t<sizeof(T) == 2, std::uint16_t,
                           std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
    static_assert(sizeof(raw) == sizeof(T));
    raw u;
    std::memcpy(&u, &v, sizeof u);
    return u;
}

// The set bits of x. Native: the popcount instruction, which GCC vectorises only with AVX-512
// VPOPCNTDQ; otherwise the shift-and-add count, which vectorises on any target (a scalar
// __builtin_popcount on a baseline x86-64 build is a call into libgcc).
template <bool Native = false>
inline __attribute__((always_inline)) std::uint32_t bit_count(std::uint32_t x) {
    if constexpr (Native) {
        return static_cast<std::uint32_t>(__builtin_popcount(x));
    } else {
        x = x - ((x >> 1) & 0x55555555u);
        x = (x & 0x33333333u) + ((x >> 2) & 0x33333333u);
        x = (x + (x >> 4)) & 0x0f0f0f0fu;
        return (x * 0x01010101u) >> 24;
    }
}
template <bool Native = false>
inline __attribute__((always_inline)) std::uint32_t bit_count(std::uint64_t x) {
    if constexpr (Native) {
        return static_cast<std::uint32_t>(__builtin_popcountll(x));
    } else {
        x = x - ((x >> 1) & 0x5555555555555555u);
        x = (x & 0x3333333333333333u) + ((x >> 2) & 0x3333333333333333u);
        x = (x + (x >> 4)) & 0x0f0f0f0f0f0f0f0fu;
        return static_cast<std::uint32_t>((x * 0x0101010101010101u) >> 56);
    }
}

// The Hamming distance between two values of a register.
template <bool Native = false, class T>
inline __attribute__((always_inline)) std::uint32_t toggles_between(T x, T y) {
    return bit_count<Native>(register_bits(x) ^ register_bits(y));
}

// Whether a MAC's operand gates it: an integer 0, or a floating-point zero of either sign (a zero
// detector looks at the exponent and mantissa; the sign does not make the product nonzero).
template <class T>
inline __attribute__((always_inline)) bool operand_is_zero(T v) {
    if constexpr (std::is_integral_v<T>) {
        return v == 0;
    } else {
        const register_word<T> sign = register_word<T>{1} << (8 * sizeof(T) - 1);
        return (register_bits(v) & ~sign) == 0;
    }
}

// Runs kernel(native) once, compiled for the best of the machine's paths (vector_isa.h): AVX-512
// with native bit counts (native is std::true_type), AVX2 or the baseline (std::false_type). The
// kernel is a lambda marked always_inline, so that it is compiled into each path's target.
namespace bit_count_detail {
template <class K>
SYSTOLIC_TARGET_AVX512_POPCOUNT void on_avx512(K& kernel) {
    kernel(std::true_type{});
}
template <class K>
SYSTOLIC_TARGET_AVX2 void on_avx2(K& kernel) {
    kernel(std::false_type{});
}
}  // namespace bit_count_detail

template <class K>
void with_counting_path(K kernel) {
    const vector_isa& isa = machine_isa();
    if (SYSTOLIC_X86_TARGETS && isa.popcount)
        bit_count_detail::on_avx512(kernel);
    else if (SYSTOLIC_X86_TARGETS && isa.avx2)
        bit_count_detail::on_avx2(kernel);
    else
        kernel(std::false_type{});
}

}  // namespace systolic
