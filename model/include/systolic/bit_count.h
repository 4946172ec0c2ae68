// The bit arithmetic of the energy account's counters (action_counter.h and the cores' tallies):
// a register's bits at its own width, the bits that toggle between two values, whether an operand
// gates a MAC, and a choice of counting kernel made once per call from the machine's instructions.
#pragma once

#include <cstddef>
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

// The set bits of x (32 or 64 bits). Native: the popcount instruction, which GCC vectorises only
// with AVX-512 VPOPCNTDQ; otherwise the shift-and-add count, which vectorises on any target (a
// scalar __builtin_popcount on a baseline x86-64 build is a call into libgcc).
template <bool Native = false, class U>
inline __attribute__((always_inline)) std::uint32_t bit_count(U x) {
    static_assert(std::is_same_v<U, std::uint32_t> || std::is_same_v<U, std::uint64_t>);
    if constexpr (Native) {
        return static_cast<std::uint32_t>(sizeof(U) == 8 ? __builtin_popcountll(x) : __builtin_popcount(x));
    } else {
        constexpr U ones = ~U{0};  // 0x55..., 0x33..., 0x0f... and 0x01... are its fractions
        x = x - ((x >> 1) & (ones / 3));
        x = (x & (ones / 5)) + ((x >> 2) & (ones / 5));
        x = (x + (x >> 4)) & (ones / 17);
        return static_cast<std::uint32_t>((x * (ones / 255)) >> (8 * sizeof(U) - 8));
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

// The toggles between the n values at x and those at y, register by register, as the toggles
// between their bytes (a register's bits are its bytes'), eight at a time: one 64-bit count per
// eight int8 registers, not one 32-bit count each.
template <bool Native, class T>
inline __attribute__((always_inline)) std::uint64_t toggles_of(const T* x, const T* y, std::size_t n) {
    const auto* u = reinterpret_cast<const unsigned char*>(x);
    const auto* v = reinterpret_cast<const unsigned char*>(y);
    const std::size_t bytes = n * sizeof(T);
    std::uint64_t t = 0;
    std::size_t i = 0;
    for (; i + 8 <= bytes; i += 8) {
        std::uint64_t p, q;
        std::memcpy(&p, u + i, 8);
        std::memcpy(&q, v + i, 8);
        t += bit_count<Native>(p ^ q);
    }
    for (; i < bytes; ++i)
        t += bit_count<Native>(std::uint32_t(u[i] ^ v[i]));
    return t;
}

// In each T-wide lane of a 64-bit word, the lane's top bit set if the lane's value is nonzero
// (operand_is_zero: a float's sign aside), every other bit clear: adding the lane's other bits'
// all-ones carries into the top bit unless they are zero, and an integer's sign bit counts too.
template <class T>
inline __attribute__((always_inline)) std::uint64_t nonzero_marks(std::uint64_t w) {
    static_assert(sizeof(T) <= 8 && 8 % sizeof(T) == 0);
    constexpr unsigned width = 8 * sizeof(T);
    constexpr std::uint64_t top = [] {
        std::uint64_t m = 0;
        for (unsigned lane = 0; lane < 64 / width; ++lane)
            m |= std::uint64_t{1} << (lane * width + width - 1);
        return m;
    }();
    constexpr std::uint64_t rest = top - (top >> (width - 1));  // the other bits of each lane
    return (((w & ~top) + rest) | (std::is_integral_v<T> ? w : 0)) & top;
}

// One pass of a counting edge over two token windows of n registers, x moving along itself by
// `x_step` registers per edge and y by `y_step` (array_core: A a slot, B a row): the PEs whose two
// tokens are nonzero, and each window's toggles against its value one edge before, eight bytes at
// a time (a register's toggles are its bytes'). Without CountY, y stands still (the weights while
// they stream) and its toggles are not counted.
struct token_counts {
    std::uint64_t nonzero_pairs = 0, x_toggles = 0, y_toggles = 0;
};
template <bool Native, bool CountY = true, class T>
inline __attribute__((always_inline)) token_counts count_tokens(const T* x, std::size_t x_step, const T* y,
                                                                std::size_t y_step, std::size_t n) {
    const auto* u = reinterpret_cast<const unsigned char*>(x);
    const auto* v = reinterpret_cast<const unsigned char*>(y);
    const auto* u_before = reinterpret_cast<const unsigned char*>(x + x_step);
    const auto* v_before = reinterpret_cast<const unsigned char*>(y + y_step);
    const std::size_t words = n * sizeof(T) / 8;
    std::uint64_t pairs = 0, xt = 0, yt = 0;
    for (std::size_t i = 0; i < words; ++i) {
        std::uint64_t p, q, p0;
        std::memcpy(&p, u + 8 * i, 8);
        std::memcpy(&q, v + 8 * i, 8);
        std::memcpy(&p0, u_before + 8 * i, 8);
        pairs += bit_count<Native>(nonzero_marks<T>(p) & nonzero_marks<T>(q));
        xt += bit_count<Native>(p ^ p0);
        if constexpr (CountY) {
            std::uint64_t q0;
            std::memcpy(&q0, v_before + 8 * i, 8);
            yt += bit_count<Native>(q ^ q0);
        }
    }
    for (std::size_t i = words * 8 / sizeof(T); i < n; ++i) {
        pairs += !operand_is_zero(x[i]) & !operand_is_zero(y[i]);
        xt += toggles_between(x[i], x[i + x_step]);
        if constexpr (CountY) yt += toggles_between(y[i], y[i + y_step]);
    }
    return {pairs, xt, yt};
}

// The i < n at which the flags x[i] and y[i] (0 or 1) are both 1, eight at a time.
template <bool Native>
inline __attribute__((always_inline)) std::uint64_t both_set(const std::uint8_t* x, const std::uint8_t* y,
                                                             std::size_t n) {
    std::uint64_t both = 0;
    std::size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        std::uint64_t p, q;
        std::memcpy(&p, x + i, 8);
        std::memcpy(&q, y + i, 8);
        both += bit_count<Native>(p & q);
    }
    for (; i < n; ++i)
        both += x[i] & y[i];
    return both;
}

// The toggles between x[i] and y[i] for i < n: a register array's change over one edge.
template <class T>
std::uint64_t toggles_of_spans(const T* x, const T* y, std::size_t n) {
    std::uint64_t toggles = 0;
    with_counting_path([&](auto native) __attribute__((always_inline)) {
        constexpr bool Native = decltype(native)::value;
        toggles = toggles_of<Native>(x, y, n);
    });
    return toggles;
}

}  // namespace systolic
