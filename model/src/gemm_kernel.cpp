// gemm_accumulate: see gemm_kernel.h for the contract. Four paths:
//  - exact: integers whose bound does not hold. Row by row in i-k-j order, so every output still
//    sees its products in k order, through Format::mac with the run-time mode, counting each step
//    that overflowed (the same rule, the same count as array_core). Vectorised across j.
//  - avx512: register-blocked micro-kernels (8 rows x 32 or 16 columns held in zmm registers over a
//    block of k), B packed once per call into k-major panels, A made contiguous per k block (bf16
//    widened on the way). fp32 multiplies then adds, two instructions, never fused. bf16 does the
//    same unless every product of the k block is exact in float (checked from the exponents while
//    packing), where a fused multiply-add gives the same bits at twice the speed. int32 runs in
//    double FMAs when every partial sum stays within 2^53 (exact integers), else vpmuldq into
//    int64 lanes; int8 uses VNNI (vpdpbusd). All integer kernels are exact because nothing can
//    overflow on this path.
//  - avx2: machines without AVX-512: fp32 and bf16 micro-kernels (6 x 16 in ymm, multiply then
//    add), int8 with vpmaddwd on int16-widened pairs (also where AVX-512 lacks VNNI), int32 in
//    double while every partial sum stays within 2^53.
//  - generic: the same blocking as portable loops, for the rest (int32 beyond 2^53 without
//    AVX-512; GCC adds an AVX2 clone) and for everything on other compilers or architectures.
// Which of avx512, avx2 and generic runs is the machine's (vector_isa.h: SYSTOLIC_ISA in the
// environment can force "avx2" or "generic", so that the tests cover every path on one machine).
#include "systolic/gemm_kernel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "systolic/format_instances.h"
#include "systolic/vector_isa.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SYSTOLIC_X86_KERNELS 1
#include <immintrin.h>
#define SYSTOLIC_AVX512 __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl")))
#define SYSTOLIC_AVX512_VNNI __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vnni")))
// GCC 12's _mm512_mul_epi32 passes an uninitialised pass-through operand to its builtin and then
// warns about it at every use.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#else
#define SYSTOLIC_X86_KERNELS 0
#endif

// As in array_core.h: an AVX2 clone of the portable loops where GCC can make ifuncs.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define SYSTOLIC_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SYSTOLIC_KERNEL_CLONES
#endif

namespace systolic {
namespace gemm_detail {

// ---------------------------------------------------------------------------------------------
// Shared helpers

// The value an operand contributes to a product: floats as float (bf16 by its bits, which is exact),
// integers widened to the accumulator so that the product cannot overflow.
template <class Format>
inline auto widen(typename Format::operand_type v) {
    if constexpr (std::is_same_v<typename Format::operand_type, bf16>) {
        const std::uint32_t u = std::uint32_t{v.bits} << 16;
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    } else {
        return static_cast<typename Format::accumulator_type>(v);
    }
}

// Per-thread packing buffers, 64-byte aligned, grown as needed and kept between calls.
struct scratch {
    std::vector<unsigned char> bytes;
    template <class T>
    T* get(std::size_t count) {
        const std::size_t need = count * sizeof(T) + 64;
        if (bytes.size() < need) bytes.resize(need);
        const auto p = reinterpret_cast<std::uintptr_t>(bytes.data());
        return reinterpret_cast<T*>((p + 63) & ~std::uintptr_t{63});
    }
};
thread_local scratch t_pack_b;
thread_local scratch t_pack_a;

template <class T>
inline std::uint64_t magnitude(T v) {
    const auto w = static_cast<std::int64_t>(v);
    return w < 0 ? 0 - static_cast<std::uint64_t>(w) : static_cast<std::uint64_t>(w);
}

template <class T>
SYSTOLIC_KERNEL_CLONES std::uint64_t max_magnitude(std::size_t rows, std::size_t cols, const T* p,
                                                   std::size_t ld) {
    std::uint64_t m = 0;
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            m = std::max(m, magnitude(p[i * ld + j]));
    return m;
}

// The largest magnitude any partial sum of any output can reach, |c| + kc * max|a| * max|b|
// (UINT64_MAX when that does not fit 64 bits): when it is within the accumulator's range, no step
// can overflow. The operand types' own extremes are tried first (enough for int8 up to kc ~ 131 000
// with small c), so A and B are scanned only when those do not prove it. Conservative: a bound too
// high only costs speed, never a different count.
template <class Format>
std::uint64_t integer_reach(std::size_t rows, std::size_t cols, std::size_t kc,
                            const typename Format::operand_type* a, std::size_t lda,
                            const typename Format::operand_type* b, std::size_t ldb,
                            const typename Format::accumulator_type* c, std::size_t ldc) {
    using acc_t = typename Format::accumulator_type;
    using op_t = typename Format::operand_type;
    constexpr std::uint64_t none = ~std::uint64_t{0};
    const std::uint64_t limit = static_cast<std::uint64_t>(std::numeric_limits<acc_t>::max());
    const std::uint64_t cmax = max_magnitude(rows, cols, c, ldc);
    auto reach = [&](std::uint64_t amax, std::uint64_t bmax) {
        const std::uint64_t product = amax * bmax;  // at most 2^62
        std::uint64_t terms = 0, total = 0;
        if (__builtin_mul_overflow(product, static_cast<std::uint64_t>(kc), &terms)) return none;
        if (__builtin_add_overflow(terms, cmax, &total)) return none;
        return total;
    };
    const std::uint64_t type_max = std::uint64_t{1} << (8 * sizeof(op_t) - 1);
    const std::uint64_t by_type = reach(type_max, type_max);
    if (by_type <= limit) return by_type;
    return reach(max_magnitude(rows, kc, a, lda), max_magnitude(kc, cols, b, ldb));
}

// ---------------------------------------------------------------------------------------------
// Exact path (integers that might overflow): i-k-j, one step per product, counted.

template <class Format, overflow_mode Mode>
SYSTOLIC_KERNEL_CLONES std::uint64_t exact_row(std::size_t cols, std::size_t kc,
                                               const typename Format::operand_type* __restrict a,
                                               const typename Format::operand_type* __restrict b,
                                               std::size_t ldb,
                                               typename Format::accumulator_type* __restrict c) {
    std::uint64_t count = 0;
    for (std::size_t k = 0; k < kc; ++k) {
        const auto x = a[k];
        const auto* __restrict brow = b + k * ldb;
        for (std::size_t j = 0; j < cols; ++j) {
            bool overflowed = false;
            c[j] = Format::template mac<Mode>(c[j], x, brow[j], overflowed);
            count += overflowed;
        }
    }
    return count;
}

template <class Format>
std::uint64_t exact_path(std::size_t rows, std::size_t cols, std::size_t kc,
                         const typename Format::operand_type* a, std::size_t lda,
                         const typename Format::operand_type* b, std::size_t ldb,
                         typename Format::accumulator_type* c, std::size_t ldc, overflow_mode mode) {
    std::uint64_t count = 0;
    for (std::size_t i = 0; i < rows; ++i) {
        count += mode == overflow_mode::wrap
                     ? exact_row<Format, overflow_mode::wrap>(cols, kc, a + i * lda, b, ldb, c + i * ldc)
                     : exact_row<Format, overflow_mode::saturate>(cols, kc, a + i * lda, b, ldb, c + i * ldc);
    }
    return count;
}

// ---------------------------------------------------------------------------------------------
// Generic path: blocks of up to 4 x 64 outputs kept in a local tile over the whole of k. On the
// integer side it only runs when nothing can overflow, so wrapping unsigned adds are exact.

constexpr std::size_t generic_mr = 4;
constexpr std::size_t generic_nr = 64;

template <class Format>
SYSTOLIC_KERNEL_CLONES void generic_block(std::size_t mr, std::size_t nr, std::size_t kc,
                                          const typename Format::operand_type* __restrict a, std::size_t lda,
                                          const typename Format::operand_type* __restrict b, std::size_t ldb,
                                          typename Format::accumulator_type* __restrict c, std::size_t ldc) {
    using acc_t = typename Format::accumulator_type;
    acc_t t[generic_mr][generic_nr];
    for (std::size_t r = 0; r < mr; ++r)
        for (std::size_t j = 0; j < nr; ++j)
            t[r][j] = c[r * ldc + j];
    for (std::size_t k = 0; k < kc; ++k) {
        const auto* __restrict brow = b + k * ldb;
        for (std::size_t r = 0; r < mr; ++r) {
            const auto x = widen<Format>(a[r * lda + k]);
            for (std::size_t j = 0; j < nr; ++j) {
                if constexpr (Format::is_integer) {
                    using u_t = std::make_unsigned_t<acc_t>;
                    const acc_t product = x * widen<Format>(brow[j]);
                    t[r][j] = static_cast<acc_t>(static_cast<u_t>(t[r][j]) + static_cast<u_t>(product));
                } else {
                    const float product = x * widen<Format>(brow[j]);
                    t[r][j] = t[r][j] + product;
                }
            }
        }
    }
    for (std::size_t r = 0; r < mr; ++r)
        for (std::size_t j = 0; j < nr; ++j)
            c[r * ldc + j] = t[r][j];
}

template <class Format>
void generic_path(std::size_t rows, std::size_t cols, std::size_t kc, const typename Format::operand_type* a,
                  std::size_t lda, const typename Format::operand_type* b, std::size_t ldb,
                  typename Format::accumulator_type* c, std::size_t ldc) {
    for (std::size_t i0 = 0; i0 < rows; i0 += generic_mr) {
        const std::size_t mr = std::min(generic_mr, rows - i0);
        for (std::size_t j0 = 0; j0 < cols; j0 += generic_nr) {
            const std::size_t nr = std::min(generic_nr, cols - j0);
            generic_block<Format>(mr, nr, kc, a + i0 * lda, lda, b + j0, ldb, c + i0 * ldc + j0, ldc);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// AVX-512 path

#if SYSTOLIC_X86_KERNELS

// Calls f(std::integral_constant<int, mr>) for a row count mr of 1..Max: the micro-kernels are
// templates on their row count, so that their accumulators are registers.
template <int Max, class F>
inline void with_rows(std::size_t mr, F&& f) {
    if constexpr (Max == 1) {
        f(std::integral_constant<int, 1>{});
    } else if (mr == Max) {
        f(std::integral_constant<int, Max>{});
    } else {
        with_rows<Max - 1>(mr, f);
    }
}

constexpr int kernel_mr = 8;

inline std::uint32_t lane_mask(std::size_t lanes, std::size_t width) {
    return lanes >= width ? (width == 32 ? 0xffffffffu : (1u << width) - 1) : (1u << lanes) - 1;
}

// ---- fp32 and bf16: 8 x 32 outputs in 16 zmm, product then add (no FMA: two roundings).

constexpr std::size_t f32_nr = 32;
constexpr std::size_t f32_kb = 256;  // one packed B panel (kb x 32 floats) is 32 KiB: it stays in L1

// Fused: one vfmadd instead of vmulps + vaddps. Only for bf16 blocks whose products are all exact
// in float (see bf16_exponents), where rounding the product first changes nothing.
template <int MR, bool Fused>
SYSTOLIC_AVX512 void f32_kernel(std::size_t kb, const float* a, std::size_t lda, const float* bp, float* c,
                                std::size_t ldc, __mmask16 m0, __mmask16 m1) {
    __m512 c0[MR], c1[MR];
    const float* ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm512_maskz_loadu_ps(m0, c + r * ldc);
        c1[r] = _mm512_maskz_loadu_ps(m1, c + r * ldc + 16);
        ar[r] = a + r * lda;
    }
    for (std::size_t k = 0; k < kb; ++k) {
        const __m512 b0 = _mm512_load_ps(bp + f32_nr * k);
        const __m512 b1 = _mm512_load_ps(bp + f32_nr * k + 16);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m512 x = _mm512_set1_ps(ar[r][k]);
            if constexpr (Fused) {
                c0[r] = _mm512_fmadd_ps(x, b0, c0[r]);
                c1[r] = _mm512_fmadd_ps(x, b1, c1[r]);
            } else {
                c0[r] = _mm512_add_ps(c0[r], _mm512_mul_ps(x, b0));
                c1[r] = _mm512_add_ps(c1[r], _mm512_mul_ps(x, b1));
            }
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_ps(c + r * ldc, m0, c0[r]);
        _mm512_mask_storeu_ps(c + r * ldc + 16, m1, c1[r]);
    }
}

// The exponent fields seen while widening bf16: the largest, and the smallest among nonzero values
// (a subnormal shows as 0, an infinity or NaN as 255).
struct bf16_exponents {
    unsigned lo = 255;
    unsigned hi = 0;

    // A product of two bf16 has at most 16 significant bits, so it is exact in float whenever it
    // is a finite normal number: |a| >= 2^(ea-127) and |b| >= 2^(eb-127) make |ab| >= 2^-126 once
    // ea + eb >= 128, and |a| < 2^(ea-126), |b| < 2^(eb-126) keep |ab| < 2^127 while ea + eb <= 379.
    // No infinities, NaNs or subnormals either. Then round(round(ab) + c) = round(ab + c) for every
    // accumulator c (infinite and NaN ones included), and a fused multiply-add is bit-identical.
    static bool products_exact(const bf16_exponents& a, const bf16_exponents& b) {
        return a.hi < 255 && b.hi < 255 && a.lo > 0 && b.lo > 0 && a.lo + b.lo >= 128 && a.hi + b.hi <= 379;
    }
};

struct exponent_lanes {  // built inside the AVX-512 functions: {set1(255), zero}
    __m512i lo;
    __m512i hi;
};

// B rows k0..k0+kb as panels of 32 columns, k-major, zero-padded on the right (masked loads read
// nothing past the last column). bf16 is widened on the way, by its bits.
SYSTOLIC_AVX512 inline void pack_b_f32(std::size_t kb, std::size_t cols, const float* b, std::size_t ldb,
                                       float* out, bf16_exponents*) {
    for (std::size_t j0 = 0; j0 < cols; j0 += f32_nr) {
        const std::size_t w = std::min(f32_nr, cols - j0);
        const auto m0 = static_cast<__mmask16>(lane_mask(w, 16));
        const auto m1 = static_cast<__mmask16>(w > 16 ? lane_mask(w - 16, 16) : 0);
        for (std::size_t k = 0; k < kb; ++k) {
            const float* src = b + k * ldb + j0;
            _mm512_store_ps(out + k * f32_nr, _mm512_maskz_loadu_ps(m0, src));
            _mm512_store_ps(out + k * f32_nr + 16, _mm512_maskz_loadu_ps(m1, src + 16));
        }
        out += kb * f32_nr;
    }
}

SYSTOLIC_AVX512 inline __m512 widen_bf16x16(__mmask16 m, const bf16* src, exponent_lanes& e) {
    const __m256i h = _mm256_maskz_loadu_epi16(m, src);
    const __m512i w = _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16);
    const __m512i exponent = _mm512_and_si512(_mm512_srli_epi32(w, 23), _mm512_set1_epi32(0xff));
    const __mmask16 nonzero = _mm512_test_epi32_mask(w, _mm512_set1_epi32(0x7fffffff));
    e.hi = _mm512_max_epu32(e.hi, exponent);
    e.lo = _mm512_mask_min_epu32(e.lo, nonzero, e.lo, exponent);
    return _mm512_castsi512_ps(w);
}

SYSTOLIC_AVX512 inline void reduce(const exponent_lanes& lanes, bf16_exponents* out) {
    if (out == nullptr) return;
    out->lo = std::min(out->lo, static_cast<unsigned>(_mm512_reduce_min_epu32(lanes.lo)));
    out->hi = std::max(out->hi, static_cast<unsigned>(_mm512_reduce_max_epu32(lanes.hi)));
}

SYSTOLIC_AVX512 inline void pack_b_f32(std::size_t kb, std::size_t cols, const bf16* b, std::size_t ldb,
                                       float* out, bf16_exponents* seen) {
    exponent_lanes e{_mm512_set1_epi32(255), _mm512_setzero_si512()};
    for (std::size_t j0 = 0; j0 < cols; j0 += f32_nr) {
        const std::size_t w = std::min(f32_nr, cols - j0);
        const auto m0 = static_cast<__mmask16>(lane_mask(w, 16));
        const auto m1 = static_cast<__mmask16>(w > 16 ? lane_mask(w - 16, 16) : 0);
        for (std::size_t k = 0; k < kb; ++k) {
            const bf16* src = b + k * ldb + j0;
            _mm512_store_ps(out + k * f32_nr, widen_bf16x16(m0, src, e));
            _mm512_store_ps(out + k * f32_nr + 16, widen_bf16x16(m1, src + 16, e));
        }
        out += kb * f32_nr;
    }
    reduce(e, seen);
}

// A block of A, rows x kb, made contiguous (and widened, for bf16): every panel reads it.
SYSTOLIC_AVX512 inline void pack_a_f32(std::size_t rows, std::size_t kb, const float* a, std::size_t lda,
                                       float* out, bf16_exponents*) {
    for (std::size_t i = 0; i < rows; ++i)
        std::memcpy(out + i * kb, a + i * lda, kb * sizeof(float));
}

SYSTOLIC_AVX512 inline void pack_a_f32(std::size_t rows, std::size_t kb, const bf16* a, std::size_t lda,
                                       float* out, bf16_exponents* seen) {
    exponent_lanes e{_mm512_set1_epi32(255), _mm512_setzero_si512()};
    for (std::size_t i = 0; i < rows; ++i) {
        for (std::size_t k = 0; k < kb; k += 16) {
            const auto m = static_cast<__mmask16>(lane_mask(kb - k, 16));
            _mm512_mask_storeu_ps(out + i * kb + k, m, widen_bf16x16(m, a + i * lda + k, e));
        }
    }
    reduce(e, seen);
}

template <class Format>
void avx512_float(std::size_t rows, std::size_t cols, std::size_t kc, const typename Format::operand_type* a,
                  std::size_t lda, const typename Format::operand_type* b, std::size_t ldb, float* c,
                  std::size_t ldc) {
    constexpr bool is_bf16 = std::is_same_v<typename Format::operand_type, bf16>;
    const std::size_t panels = (cols + f32_nr - 1) / f32_nr;
    float* bp = t_pack_b.get<float>(panels * f32_kb * f32_nr);
    float* af = t_pack_a.get<float>(rows * f32_kb);
    for (std::size_t k0 = 0; k0 < kc; k0 += f32_kb) {
        const std::size_t kb = std::min(f32_kb, kc - k0);
        bf16_exponents ea, eb;
        pack_b_f32(kb, cols, b + k0 * ldb, ldb, bp, &eb);
        pack_a_f32(rows, kb, a + k0, lda, af, &ea);
        const bool fused = is_bf16 && bf16_exponents::products_exact(ea, eb);
        const float* ablock = af;
        const std::size_t ld = kb;
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * f32_nr;
            const std::size_t w = std::min(f32_nr, cols - j0);
            const auto m0 = static_cast<__mmask16>(lane_mask(w, 16));
            const auto m1 = static_cast<__mmask16>(w > 16 ? lane_mask(w - 16, 16) : 0);
            const float* panel = bp + p * kb * f32_nr;
            for (std::size_t i0 = 0; i0 < rows; i0 += kernel_mr) {
                with_rows<kernel_mr>(std::min<std::size_t>(kernel_mr, rows - i0), [&](auto mr) {
                    constexpr int r = decltype(mr)::value;
                    if (fused) {
                        f32_kernel<r, true>(kb, ablock + i0 * ld, ld, panel, c + i0 * ldc + j0, ldc, m0, m1);
                    } else {
                        f32_kernel<r, false>(kb, ablock + i0 * ld, ld, panel, c + i0 * ldc + j0, ldc, m0, m1);
                    }
                });
            }
        }
    }
}

// ---- int32 operands, int64 accumulators: 8 x 16 outputs in 16 zmm, vpmuldq then vpaddq. Only
// called when nothing can overflow, so the adds need no checks.

constexpr std::size_t i32_nr = 16;
constexpr std::size_t i32_kb = 256;  // a packed panel (kb x 16 int64) is 32 KiB

template <int MR>
SYSTOLIC_AVX512 void i32_kernel(std::size_t kb, const std::int32_t* a, std::size_t lda,
                                const std::int64_t* bp, std::int64_t* c, std::size_t ldc, __mmask8 m0,
                                __mmask8 m1) {
    __m512i c0[MR], c1[MR];
    const std::int32_t* ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm512_maskz_loadu_epi64(m0, c + r * ldc);
        c1[r] = _mm512_maskz_loadu_epi64(m1, c + r * ldc + 8);
        ar[r] = a + r * lda;
    }
    for (std::size_t k = 0; k < kb; ++k) {
        // Each 64-bit lane of B holds a sign-extended int32; vpmuldq multiplies the low halves.
        const __m512i b0 = _mm512_load_si512(bp + i32_nr * k);
        const __m512i b1 = _mm512_load_si512(bp + i32_nr * k + 8);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m512i x = _mm512_set1_epi32(ar[r][k]);
            c0[r] = _mm512_add_epi64(c0[r], _mm512_mul_epi32(x, b0));
            c1[r] = _mm512_add_epi64(c1[r], _mm512_mul_epi32(x, b1));
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_epi64(c + r * ldc, m0, c0[r]);
        _mm512_mask_storeu_epi64(c + r * ldc + 8, m1, c1[r]);
    }
}

inline void avx512_int32(std::size_t rows, std::size_t cols, std::size_t kc, const std::int32_t* a,
                         std::size_t lda, const std::int32_t* b, std::size_t ldb, std::int64_t* c,
                         std::size_t ldc) {
    const std::size_t panels = (cols + i32_nr - 1) / i32_nr;
    std::int64_t* bp = t_pack_b.get<std::int64_t>(panels * i32_kb * i32_nr);
    for (std::size_t k0 = 0; k0 < kc; k0 += i32_kb) {
        const std::size_t kb = std::min(i32_kb, kc - k0);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * i32_nr, w = std::min(i32_nr, cols - j0);
            std::int64_t* out = bp + p * kb * i32_nr;
            for (std::size_t k = 0; k < kb; ++k) {
                const std::int32_t* src = b + (k0 + k) * ldb + j0;
                for (std::size_t j = 0; j < w; ++j)
                    out[k * i32_nr + j] = src[j];
                for (std::size_t j = w; j < i32_nr; ++j)
                    out[k * i32_nr + j] = 0;
            }
        }
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * i32_nr, w = std::min(i32_nr, cols - j0);
            const auto m0 = static_cast<__mmask8>(lane_mask(w, 8));
            const auto m1 = static_cast<__mmask8>(w > 8 ? lane_mask(w - 8, 8) : 0);
            const std::int64_t* panel = bp + p * kb * i32_nr;
            for (std::size_t i0 = 0; i0 < rows; i0 += kernel_mr) {
                with_rows<kernel_mr>(std::min<std::size_t>(kernel_mr, rows - i0), [&](auto mr) {
                    i32_kernel<decltype(mr)::value>(kb, a + i0 * lda + k0, lda, panel, c + i0 * ldc + j0, ldc,
                                                    m0, m1);
                });
            }
        }
    }
}

// ---- int32 operands whose every partial sum stays within 2^53: all products and sums are integers
// that double represents exactly, so double FMAs (twice vpmuldq + vpaddq's rate) give the exact
// result. A block of A is converted once per k block, B once per call; C goes to double and back.

constexpr std::uint64_t double_exact_limit = std::uint64_t{1} << 53;

template <int MR>
SYSTOLIC_AVX512 void i32_double_kernel(std::size_t kb, const double* a, std::size_t lda, const double* bp,
                                       std::int64_t* c, std::size_t ldc, __mmask8 m0, __mmask8 m1) {
    __m512d c0[MR], c1[MR];
    const double* ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm512_cvtepi64_pd(_mm512_maskz_loadu_epi64(m0, c + r * ldc));
        c1[r] = _mm512_cvtepi64_pd(_mm512_maskz_loadu_epi64(m1, c + r * ldc + 8));
        ar[r] = a + r * lda;
    }
    for (std::size_t k = 0; k < kb; ++k) {
        const __m512d b0 = _mm512_load_pd(bp + i32_nr * k);
        const __m512d b1 = _mm512_load_pd(bp + i32_nr * k + 8);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            const __m512d x = _mm512_set1_pd(ar[r][k]);
            c0[r] = _mm512_fmadd_pd(x, b0, c0[r]);
            c1[r] = _mm512_fmadd_pd(x, b1, c1[r]);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {  // integral values: the conversion's rounding never applies
        _mm512_mask_storeu_epi64(c + r * ldc, m0, _mm512_cvtpd_epi64(c0[r]));
        _mm512_mask_storeu_epi64(c + r * ldc + 8, m1, _mm512_cvtpd_epi64(c1[r]));
    }
}

SYSTOLIC_AVX512 inline void avx512_int32_in_double(std::size_t rows, std::size_t cols, std::size_t kc,
                                                   const std::int32_t* a, std::size_t lda,
                                                   const std::int32_t* b, std::size_t ldb, std::int64_t* c,
                                                   std::size_t ldc) {
    const std::size_t panels = (cols + i32_nr - 1) / i32_nr;
    double* bp = t_pack_b.get<double>(panels * i32_kb * i32_nr);
    double* ad = t_pack_a.get<double>(rows * i32_kb);
    for (std::size_t k0 = 0; k0 < kc; k0 += i32_kb) {
        const std::size_t kb = std::min(i32_kb, kc - k0);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * i32_nr, w = std::min(i32_nr, cols - j0);
            const auto m0 = static_cast<__mmask8>(lane_mask(w, 8));
            const auto m1 = static_cast<__mmask8>(w > 8 ? lane_mask(w - 8, 8) : 0);
            double* out = bp + p * kb * i32_nr;
            for (std::size_t k = 0; k < kb; ++k) {
                const std::int32_t* src = b + (k0 + k) * ldb + j0;
                _mm512_store_pd(out + k * i32_nr, _mm512_cvtepi32_pd(_mm256_maskz_loadu_epi32(m0, src)));
                _mm512_store_pd(out + k * i32_nr + 8,
                                _mm512_cvtepi32_pd(_mm256_maskz_loadu_epi32(m1, src + 8)));
            }
        }
        for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t k = 0; k < kb; k += 8) {
                const auto m = static_cast<__mmask8>(lane_mask(kb - k, 8));
                _mm512_mask_storeu_pd(ad + i * kb + k, m,
                                      _mm512_cvtepi32_pd(_mm256_maskz_loadu_epi32(m, a + i * lda + k0 + k)));
            }
        }
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * i32_nr, w = std::min(i32_nr, cols - j0);
            const auto m0 = static_cast<__mmask8>(lane_mask(w, 8));
            const auto m1 = static_cast<__mmask8>(w > 8 ? lane_mask(w - 8, 8) : 0);
            const double* panel = bp + p * kb * i32_nr;
            for (std::size_t i0 = 0; i0 < rows; i0 += kernel_mr) {
                with_rows<kernel_mr>(std::min<std::size_t>(kernel_mr, rows - i0), [&](auto mr) {
                    i32_double_kernel<decltype(mr)::value>(kb, ad + i0 * kb, kb, panel, c + i0 * ldc + j0,
                                                           ldc, m0, m1);
                });
            }
        }
    }
}

// ---- int8 operands, int32 accumulators: VNNI. vpdpbusd multiplies unsigned by signed bytes and
// adds four products per int32 lane, so B is stored biased (b + 128, as unsigned) and A's row sums
// times 128 are taken off first. Every intermediate wraps modulo 2^32 and the true result fits
// (this path runs only when the bound holds), so the result is exact. 8 x 32 outputs in 16 zmm.

constexpr std::size_t i8_nr = 32;
constexpr std::size_t i8_kb = 1024;  // a packed panel (kb x 32 bytes) is 32 KiB

template <int MR>
SYSTOLIC_AVX512_VNNI void i8_kernel(std::size_t quads, const std::int8_t* a, std::size_t lda,
                                    const std::uint8_t* bp, std::int32_t* c, std::size_t ldc, __mmask16 m0,
                                    __mmask16 m1) {
    __m512i c0[MR], c1[MR];
    const std::int8_t* ar[MR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm512_maskz_loadu_epi32(m0, c + r * ldc);
        c1[r] = _mm512_maskz_loadu_epi32(m1, c + r * ldc + 16);
        ar[r] = a + r * lda;
    }
    for (std::size_t q = 0; q < quads; ++q) {
        const __m512i b0 = _mm512_load_si512(bp + 128 * q);
        const __m512i b1 = _mm512_load_si512(bp + 128 * q + 64);
#pragma GCC unroll 8
        for (int r = 0; r < MR; ++r) {
            std::int32_t four;
            std::memcpy(&four, ar[r] + 4 * q, sizeof four);
            const __m512i x = _mm512_set1_epi32(four);
            c0[r] = _mm512_dpbusd_epi32(c0[r], b0, x);
            c1[r] = _mm512_dpbusd_epi32(c1[r], b1, x);
        }
    }
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_epi32(c + r * ldc, m0, c0[r]);
        _mm512_mask_storeu_epi32(c + r * ldc + 16, m1, c1[r]);
    }
}

// Rows k..k+4*quads of 32 columns of B, biased to unsigned and interleaved so that each int32 lane
// holds one column's four consecutive k: [quad][column][4 bytes].
SYSTOLIC_AVX512 inline void pack_b_i8(std::size_t quads, std::size_t cols, const std::int8_t* b,
                                      std::size_t ldb, std::uint8_t* out) {
    const __m128i bias = _mm_set1_epi8(static_cast<char>(0x80));
    for (std::size_t j0 = 0; j0 < cols; j0 += i8_nr) {
        for (std::size_t q = 0; q < quads; ++q) {
            for (std::size_t h = 0; h < i8_nr; h += 16) {
                __m128i row[4];
                for (int t = 0; t < 4; ++t) {
                    const std::int8_t* src = b + (4 * q + t) * ldb + j0 + h;
                    const std::size_t w = j0 + h < cols ? std::min<std::size_t>(16, cols - j0 - h) : 0;
                    if (w == 16) {
                        row[t] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src));
                    } else {
                        alignas(16) std::int8_t tmp[16] = {};
                        if (w > 0) std::memcpy(tmp, src, w);
                        row[t] = _mm_load_si128(reinterpret_cast<const __m128i*>(tmp));
                    }
                    row[t] = _mm_xor_si128(row[t], bias);
                }
                const __m128i t0 = _mm_unpacklo_epi8(row[0], row[1]), t1 = _mm_unpackhi_epi8(row[0], row[1]);
                const __m128i t2 = _mm_unpacklo_epi8(row[2], row[3]), t3 = _mm_unpackhi_epi8(row[2], row[3]);
                auto* dst = reinterpret_cast<__m128i*>(out + q * 4 * i8_nr + 4 * h);
                _mm_store_si128(dst + 0, _mm_unpacklo_epi16(t0, t2));
                _mm_store_si128(dst + 1, _mm_unpackhi_epi16(t0, t2));
                _mm_store_si128(dst + 2, _mm_unpacklo_epi16(t1, t3));
                _mm_store_si128(dst + 3, _mm_unpackhi_epi16(t1, t3));
            }
        }
        out += quads * 4 * i8_nr;
    }
}

inline void avx512_int8(std::size_t rows, std::size_t cols, std::size_t kc, const std::int8_t* a,
                        std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                        std::size_t ldc) {
    const std::size_t k4 = kc & ~std::size_t{3};
    const std::size_t panels = (cols + i8_nr - 1) / i8_nr;
    if (k4 > 0) {
        // Take 128 x (row sum of A over the first k4 terms) off every output of the row first.
        for (std::size_t i = 0; i < rows; ++i) {
            std::uint32_t sum = 0;  // modulo 2^32, like everything else on this path
            for (std::size_t k = 0; k < k4; ++k)
                sum += static_cast<std::uint32_t>(std::int32_t{a[i * lda + k]});
            const std::uint32_t bias = sum * 128u;
            for (std::size_t j = 0; j < cols; ++j)
                c[i * ldc + j] = static_cast<std::int32_t>(static_cast<std::uint32_t>(c[i * ldc + j]) - bias);
        }
        std::uint8_t* bp = t_pack_b.get<std::uint8_t>(panels * i8_kb * i8_nr);
        for (std::size_t k0 = 0; k0 < k4; k0 += i8_kb) {
            const std::size_t kb = std::min(i8_kb, k4 - k0), quads = kb / 4;
            pack_b_i8(quads, cols, b + k0 * ldb, ldb, bp);
            for (std::size_t p = 0; p < panels; ++p) {
                const std::size_t j0 = p * i8_nr, w = std::min(i8_nr, cols - j0);
                const auto m0 = static_cast<__mmask16>(lane_mask(w, 16));
                const auto m1 = static_cast<__mmask16>(w > 16 ? lane_mask(w - 16, 16) : 0);
                const std::uint8_t* panel = bp + p * kb * i8_nr;
                for (std::size_t i0 = 0; i0 < rows; i0 += kernel_mr) {
                    with_rows<kernel_mr>(std::min<std::size_t>(kernel_mr, rows - i0), [&](auto mr) {
                        i8_kernel<decltype(mr)::value>(quads, a + i0 * lda + k0, lda, panel,
                                                       c + i0 * ldc + j0, ldc, m0, m1);
                    });
                }
            }
        }
    }
    if (k4 < kc) generic_path<int8_format>(rows, cols, kc - k4, a + k4, lda, b + k4 * ldb, ldb, c, ldc);
}

// ---- AVX2 (machines without AVX-512): fp32 and bf16 as 6 x 16 outputs in 12 ymm, multiply then
// add. Partial blocks at the edges run on a zero-padded copy of their outputs.

#define SYSTOLIC_AVX2 __attribute__((target("avx2")))

constexpr std::size_t avx2_mr = 6;
constexpr std::size_t avx2_nr = 16;
constexpr std::size_t avx2_kb = 256;  // a packed panel (kb x 16 floats) is 16 KiB

template <int MR>
SYSTOLIC_AVX2 void f32_kernel_avx2(std::size_t kb, const float* a, std::size_t lda, const float* bp, float* c,
                                   std::size_t ldc) {
    __m256 c0[MR], c1[MR];
    const float* ar[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm256_loadu_ps(c + r * ldc);
        c1[r] = _mm256_loadu_ps(c + r * ldc + 8);
        ar[r] = a + r * lda;
    }
    for (std::size_t k = 0; k < kb; ++k) {
        const __m256 b0 = _mm256_load_ps(bp + avx2_nr * k);
        const __m256 b1 = _mm256_load_ps(bp + avx2_nr * k + 8);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
            const __m256 x = _mm256_broadcast_ss(ar[r] + k);
            c0[r] = _mm256_add_ps(c0[r], _mm256_mul_ps(x, b0));
            c1[r] = _mm256_add_ps(c1[r], _mm256_mul_ps(x, b1));
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        _mm256_storeu_ps(c + r * ldc, c0[r]);
        _mm256_storeu_ps(c + r * ldc + 8, c1[r]);
    }
}

inline float operand_float(float v) {
    return v;
}
inline float operand_float(bf16 v) {
    return widen<bf16_format>(v);
}

template <class Format>
void avx2_float(std::size_t rows, std::size_t cols, std::size_t kc, const typename Format::operand_type* a,
                std::size_t lda, const typename Format::operand_type* b, std::size_t ldb, float* c,
                std::size_t ldc) {
    const std::size_t panels = (cols + avx2_nr - 1) / avx2_nr;
    float* bp = t_pack_b.get<float>(panels * avx2_kb * avx2_nr);
    float* af = t_pack_a.get<float>(rows * avx2_kb);
    for (std::size_t k0 = 0; k0 < kc; k0 += avx2_kb) {
        const std::size_t kb = std::min(avx2_kb, kc - k0);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * avx2_nr, w = std::min(avx2_nr, cols - j0);
            float* out = bp + p * kb * avx2_nr;
            for (std::size_t k = 0; k < kb; ++k) {
                const auto* src = b + (k0 + k) * ldb + j0;
                for (std::size_t j = 0; j < w; ++j)
                    out[k * avx2_nr + j] = operand_float(src[j]);
                for (std::size_t j = w; j < avx2_nr; ++j)
                    out[k * avx2_nr + j] = 0.0f;
            }
        }
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t k = 0; k < kb; ++k)
                af[i * kb + k] = operand_float(a[i * lda + k0 + k]);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * avx2_nr, w = std::min(avx2_nr, cols - j0);
            const float* panel = bp + p * kb * avx2_nr;
            for (std::size_t i0 = 0; i0 < rows; i0 += avx2_mr) {
                const std::size_t mr = std::min(avx2_mr, rows - i0);
                float* cblock = c + i0 * ldc + j0;
                float edge[avx2_mr * avx2_nr];
                const bool partial = w < avx2_nr;
                std::size_t ld = ldc;
                if (partial) {  // the kernel writes 16 columns: give it a padded copy
                    for (std::size_t r = 0; r < mr; ++r)
                        for (std::size_t j = 0; j < avx2_nr; ++j)
                            edge[r * avx2_nr + j] = j < w ? cblock[r * ldc + j] : 0.0f;
                    cblock = edge;
                    ld = avx2_nr;
                }
                const float* arows = af + i0 * kb;
                with_rows<int(avx2_mr)>(mr, [&](auto m) {
                    f32_kernel_avx2<decltype(m)::value>(kb, arows, kb, panel, cblock, ld);
                });
                if (partial) {
                    for (std::size_t r = 0; r < mr; ++r)
                        for (std::size_t j = 0; j < w; ++j)
                            c[(i0 + r) * ldc + j0 + j] = edge[r * avx2_nr + j];
                }
            }
        }
    }
}

// ---- AVX2 int8 (no VNNI): vpmaddwd on operands widened to int16, two k per instruction, 6 x 16
// outputs in 12 ymm. Each pair of products fits int16 x int16 -> int32 exactly, and this path only
// runs when nothing can overflow, so the sums are exact.

constexpr std::size_t avx2_i8_kb = 512;  // 256 pairs of k: a packed panel is 16 KiB

template <int MR>
SYSTOLIC_AVX2 void i8_kernel_avx2(std::size_t pairs, const std::int32_t* a, std::size_t lda,
                                  const std::int16_t* bp, std::int32_t* c, std::size_t ldc) {
    __m256i c0[MR], c1[MR];
    const std::int32_t* ar[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + r * ldc));
        c1[r] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + r * ldc + 8));
        ar[r] = a + r * lda;
    }
    for (std::size_t q = 0; q < pairs; ++q) {
        const __m256i b0 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bp + 32 * q));
        const __m256i b1 = _mm256_load_si256(reinterpret_cast<const __m256i*>(bp + 32 * q + 16));
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
            const __m256i x = _mm256_set1_epi32(ar[r][q]);  // a[2q] in the low half, a[2q+1] high
            c0[r] = _mm256_add_epi32(c0[r], _mm256_madd_epi16(b0, x));
            c1[r] = _mm256_add_epi32(c1[r], _mm256_madd_epi16(b1, x));
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc), c0[r]);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(c + r * ldc + 8), c1[r]);
    }
}

inline std::int32_t int16_pair(std::int8_t lo, std::int8_t hi) {
    return static_cast<std::int32_t>(
        static_cast<std::uint32_t>(static_cast<std::uint16_t>(std::int16_t{lo})) |
        (static_cast<std::uint32_t>(static_cast<std::uint16_t>(std::int16_t{hi})) << 16));
}

inline void avx2_int8(std::size_t rows, std::size_t cols, std::size_t kc, const std::int8_t* a,
                      std::size_t lda, const std::int8_t* b, std::size_t ldb, std::int32_t* c,
                      std::size_t ldc) {
    const std::size_t k2 = kc & ~std::size_t{1};
    const std::size_t panels = (cols + avx2_nr - 1) / avx2_nr;
    std::int16_t* bp = t_pack_b.get<std::int16_t>(panels * avx2_i8_kb * avx2_nr);
    std::int32_t* ap = t_pack_a.get<std::int32_t>(rows * avx2_i8_kb / 2);
    for (std::size_t k0 = 0; k0 < k2; k0 += avx2_i8_kb) {
        const std::size_t kb = std::min(avx2_i8_kb, k2 - k0), pairs = kb / 2;
        for (std::size_t p = 0; p < panels; ++p) {  // [pair][column][2 x int16]
            const std::size_t j0 = p * avx2_nr, w = std::min(avx2_nr, cols - j0);
            std::int16_t* out = bp + p * pairs * 2 * avx2_nr;
            for (std::size_t q = 0; q < pairs; ++q) {
                const std::int8_t* even = b + (k0 + 2 * q) * ldb + j0;
                const std::int8_t* odd = even + ldb;
                for (std::size_t j = 0; j < avx2_nr; ++j) {
                    out[(q * avx2_nr + j) * 2] = j < w ? even[j] : 0;
                    out[(q * avx2_nr + j) * 2 + 1] = j < w ? odd[j] : 0;
                }
            }
        }
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t q = 0; q < pairs; ++q)
                ap[i * pairs + q] = int16_pair(a[i * lda + k0 + 2 * q], a[i * lda + k0 + 2 * q + 1]);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * avx2_nr, w = std::min(avx2_nr, cols - j0);
            const std::int16_t* panel = bp + p * pairs * 2 * avx2_nr;
            for (std::size_t i0 = 0; i0 < rows; i0 += avx2_mr) {
                const std::size_t mr = std::min(avx2_mr, rows - i0);
                std::int32_t* cblock = c + i0 * ldc + j0;
                std::int32_t edge[avx2_mr * avx2_nr];
                const bool partial = w < avx2_nr;
                std::size_t ld = ldc;
                if (partial) {  // the kernel writes 16 columns: give it a padded copy
                    for (std::size_t r = 0; r < mr; ++r)
                        for (std::size_t j = 0; j < avx2_nr; ++j)
                            edge[r * avx2_nr + j] = j < w ? cblock[r * ldc + j] : 0;
                    cblock = edge;
                    ld = avx2_nr;
                }
                const std::int32_t* arows = ap + i0 * pairs;
                with_rows<int(avx2_mr)>(mr, [&](auto m) {
                    i8_kernel_avx2<decltype(m)::value>(pairs, arows, pairs, panel, cblock, ld);
                });
                if (partial) {
                    for (std::size_t r = 0; r < mr; ++r)
                        for (std::size_t j = 0; j < w; ++j)
                            c[(i0 + r) * ldc + j0 + j] = edge[r * avx2_nr + j];
                }
            }
        }
    }
    if (k2 < kc) generic_path<int8_format>(rows, cols, kc - k2, a + k2, lda, b + k2 * ldb, ldb, c, ldc);
}

// ---- AVX2 int32 while every partial sum stays within 2^53 (as in avx512_int32_in_double): exact in
// double, 6 x 8 outputs in 12 ymm, multiply then add (both exact here). AVX2 has no int64 <-> double
// conversion, so each block's outputs are converted on a small copy.

constexpr std::size_t avx2_i32_nr = 8;

template <int MR>
SYSTOLIC_AVX2 void i32_double_kernel_avx2(std::size_t kb, const double* a, std::size_t lda, const double* bp,
                                          double* c) {
    __m256d c0[MR], c1[MR];
    const double* ar[MR];
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        c0[r] = _mm256_loadu_pd(c + r * avx2_i32_nr);
        c1[r] = _mm256_loadu_pd(c + r * avx2_i32_nr + 4);
        ar[r] = a + r * lda;
    }
    for (std::size_t k = 0; k < kb; ++k) {
        const __m256d b0 = _mm256_load_pd(bp + avx2_i32_nr * k);
        const __m256d b1 = _mm256_load_pd(bp + avx2_i32_nr * k + 4);
#pragma GCC unroll 6
        for (int r = 0; r < MR; ++r) {
            const __m256d x = _mm256_broadcast_sd(ar[r] + k);
            c0[r] = _mm256_add_pd(c0[r], _mm256_mul_pd(x, b0));
            c1[r] = _mm256_add_pd(c1[r], _mm256_mul_pd(x, b1));
        }
    }
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
        _mm256_storeu_pd(c + r * avx2_i32_nr, c0[r]);
        _mm256_storeu_pd(c + r * avx2_i32_nr + 4, c1[r]);
    }
}

inline void avx2_int32_in_double(std::size_t rows, std::size_t cols, std::size_t kc, const std::int32_t* a,
                                 std::size_t lda, const std::int32_t* b, std::size_t ldb, std::int64_t* c,
                                 std::size_t ldc) {
    const std::size_t panels = (cols + avx2_i32_nr - 1) / avx2_i32_nr;
    double* bp = t_pack_b.get<double>(panels * avx2_kb * avx2_i32_nr);
    double* ad = t_pack_a.get<double>(rows * avx2_kb);
    for (std::size_t k0 = 0; k0 < kc; k0 += avx2_kb) {
        const std::size_t kb = std::min(avx2_kb, kc - k0);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * avx2_i32_nr, w = std::min(avx2_i32_nr, cols - j0);
            double* out = bp + p * kb * avx2_i32_nr;
            for (std::size_t k = 0; k < kb; ++k)
                for (std::size_t j = 0; j < avx2_i32_nr; ++j)
                    out[k * avx2_i32_nr + j] = j < w ? static_cast<double>(b[(k0 + k) * ldb + j0 + j]) : 0.0;
        }
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t k = 0; k < kb; ++k)
                ad[i * kb + k] = static_cast<double>(a[i * lda + k0 + k]);
        for (std::size_t p = 0; p < panels; ++p) {
            const std::size_t j0 = p * avx2_i32_nr, w = std::min(avx2_i32_nr, cols - j0);
            const double* panel = bp + p * kb * avx2_i32_nr;
            for (std::size_t i0 = 0; i0 < rows; i0 += avx2_mr) {
                const std::size_t mr = std::min(avx2_mr, rows - i0);
                double tile[avx2_mr * avx2_i32_nr] = {};
                for (std::size_t r = 0; r < mr; ++r)
                    for (std::size_t j = 0; j < w; ++j)
                        tile[r * avx2_i32_nr + j] = static_cast<double>(c[(i0 + r) * ldc + j0 + j]);
                with_rows<int(avx2_mr)>(mr, [&](auto m) {
                    i32_double_kernel_avx2<decltype(m)::value>(kb, ad + i0 * kb, kb, panel, tile);
                });
                for (std::size_t r = 0; r < mr; ++r)  // integral values within 2^53: exact
                    for (std::size_t j = 0; j < w; ++j)
                        c[(i0 + r) * ldc + j0 + j] = static_cast<std::int64_t>(tile[r * avx2_i32_nr + j]);
            }
        }
    }
}

#endif  // SYSTOLIC_X86_KERNELS

// ---------------------------------------------------------------------------------------------
// Dispatch

const vector_isa& isa() {
    return machine_isa();
}

// reach: integer formats, the bound from integer_reach (within the accumulator's range here).
template <class Format>
void fast_path(std::size_t rows, std::size_t cols, std::size_t kc, const typename Format::operand_type* a,
               std::size_t lda, const typename Format::operand_type* b, std::size_t ldb,
               typename Format::accumulator_type* c, std::size_t ldc, std::uint64_t reach) {
    (void)reach;
#if SYSTOLIC_X86_KERNELS
    if constexpr (!Format::is_integer) {
        if (isa().avx512) return avx512_float<Format>(rows, cols, kc, a, lda, b, ldb, c, ldc);
        if (isa().avx2) return avx2_float<Format>(rows, cols, kc, a, lda, b, ldb, c, ldc);
    } else if constexpr (std::is_same_v<Format, int32_format>) {
        if (isa().avx512 && reach <= double_exact_limit)
            return avx512_int32_in_double(rows, cols, kc, a, lda, b, ldb, c, ldc);
        if (isa().avx512) return avx512_int32(rows, cols, kc, a, lda, b, ldb, c, ldc);
        if (isa().avx2 && reach <= double_exact_limit)
            return avx2_int32_in_double(rows, cols, kc, a, lda, b, ldb, c, ldc);
    } else if constexpr (std::is_same_v<Format, int8_format>) {
        if (isa().vnni) return avx512_int8(rows, cols, kc, a, lda, b, ldb, c, ldc);
        if (isa().avx2) return avx2_int8(rows, cols, kc, a, lda, b, ldb, c, ldc);
    }
#endif
    generic_path<Format>(rows, cols, kc, a, lda, b, ldb, c, ldc);
}

}  // namespace gemm_detail

template <class Format>
std::uint64_t gemm_accumulate(std::size_t rows, std::size_t cols, std::size_t kc,
                              const typename Format::operand_type* a, std::size_t lda,
                              const typename Format::operand_type* b, std::size_t ldb,
                              typename Format::accumulator_type* c, std::size_t ldc, overflow_mode mode) {
    if (rows == 0 || cols == 0 || kc == 0) return 0;
    std::uint64_t reach = 0;
    if constexpr (Format::is_integer) {
        reach = gemm_detail::integer_reach<Format>(rows, cols, kc, a, lda, b, ldb, c, ldc);
        if (reach > static_cast<std::uint64_t>(std::numeric_limits<typename Format::accumulator_type>::max()))
            return gemm_detail::exact_path<Format>(rows, cols, kc, a, lda, b, ldb, c, ldc, mode);
    } else {
        (void)mode;  // floats have no overflow mode
    }
    gemm_detail::fast_path<Format>(rows, cols, kc, a, lda, b, ldb, c, ldc, reach);
    return 0;
}

const char* gemm_kernel_isa() {
    return machine_isa_name();
}

#define SYSTOLIC_GEMM_INSTANTIATE(name, F)                                                                 \
    template std::uint64_t name<F>(std::size_t, std::size_t, std::size_t, const F::operand_type*,          \
                                   std::size_t, const F::operand_type*, std::size_t, F::accumulator_type*, \
                                   std::size_t, overflow_mode);
SYSTOLIC_FOR_EACH_FORMAT(SYSTOLIC_GEMM_INSTANTIATE, gemm_accumulate)
#undef SYSTOLIC_GEMM_INSTANTIATE

}  // namespace systolic
