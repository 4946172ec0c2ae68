// The scoreboard's reference: independent of the array, its skew and its tiling, and of the
// model's arithmetic. It calls nothing from number_format.h or quantize.h (it only uses their
// types): the integer add with wrap or saturate, the overflow test, the float product-then-add,
// the bf16 widening and the requantization are all written again here, in a different form.
// It reproduces the model's results exactly, not approximately: every output is summed in k
// order (fp32 and bf16 compare bit for bit), in the same K chunks, combined the same way.
//
// Rules it follows (agreed for model and reference alike):
//  - integer accumulators: each step adds the exact product; a step whose exact sum leaves the
//    accumulator's range counts one overflow and wraps modulo 2^bits or saturates;
//  - floats: the product is rounded to float, then added (no fused multiply-add: the build passes
//    -ffp-contract=off); bf16 operands are widened exactly, by their bits;
//  - a double converted to an integer type saturates: NaN -> 0, >= max -> max, <= min -> min,
//    otherwise the (already rounded) value truncated; a double converted to float becomes +-inf
//    when its magnitude, rounded to float, would pass FLT_MAX;
//  - int8 output codes: NaN -> the zero point, then clipped to [-128, 127];
//  - every NaN in C is the canonical quiet NaN, 0x7FC00000.
//
// Fast enough to check a whole layer beside the model: outputs are computed in blocks of 8 rows
// by 256 columns kept in a small local buffer while k runs (i-k-j inside a block, four k per
// pass), loops the compiler vectorises, with AVX2 and AVX-512 clones where GCC makes ifuncs.
// Integer steps are tested for overflow one by one, except in blocks where the reference's own
// bound (the sum over k of the block's largest |a| times its largest |b|) shows that none can
// overflow; blocks near the range's end are always tested step by step.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "systolic/counting.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define SYSTOLIC_REFERENCE_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define SYSTOLIC_REFERENCE_CLONES
#endif

namespace systolic::verify {

struct reference_options {
    std::uint64_t k_tile = 0;  // 0: one chunk of K
    k_policy policy = k_policy::preserve;
    overflow_mode overflow = overflow_mode::wrap;
    quantization quant;  // only per_partial matters here: partials rounded before combining
};

// C and the overflows counted on the way: accumulation steps (one per product whose step
// overflowed) and combinations of chunk partials (one per add of a partial that overflowed).
template <class Format>
struct counted_gemm {
    std::vector<typename Format::accumulator_type> c;
    std::uint64_t overflows = 0;
    std::uint64_t partial_overflows = 0;
};

namespace reference_detail {

constexpr std::size_t block_rows = 8;
constexpr std::size_t block_cols = 256;

constexpr std::uint32_t canonical_nan_bits = 0x7fc00000u;

inline float float_from_bits(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

// t (rows x cols block, stride block_cols) += a (rows x [k0, k1)) * b ([k0, k1) x cols), float
// products rounded, then added, in k order for every output.
SYSTOLIC_REFERENCE_CLONES inline void float_block(std::size_t rows, std::size_t cols, std::size_t k0,
                                                  std::size_t k1, const float* __restrict a, std::size_t lda,
                                                  const float* __restrict b, std::size_t ldb,
                                                  float* __restrict t) {
    std::size_t k = k0;
    // Four k at a time: each sum is read and written once per four steps, which are still taken one
    // after another, in k order.
    for (; k + 4 <= k1; k += 4) {
        const float* __restrict b0 = b + k * ldb;
        const float* __restrict b1 = b0 + ldb;
        const float* __restrict b2 = b1 + ldb;
        const float* __restrict b3 = b2 + ldb;
        for (std::size_t r = 0; r < rows; ++r) {
            const float* ar = a + r * lda + k;
            const float x0 = ar[0], x1 = ar[1], x2 = ar[2], x3 = ar[3];
            float* __restrict trow = t + r * block_cols;
            for (std::size_t j = 0; j < cols; ++j) {
                float sum = trow[j];
                const float p0 = x0 * b0[j];
                sum = sum + p0;
                const float p1 = x1 * b1[j];
                sum = sum + p1;
                const float p2 = x2 * b2[j];
                sum = sum + p2;
                const float p3 = x3 * b3[j];
                sum = sum + p3;
                trow[j] = sum;
            }
        }
    }
    for (; k < k1; ++k) {
        const float* __restrict brow = b + k * ldb;
        for (std::size_t r = 0; r < rows; ++r) {
            const float x = a[r * lda + k];
            float* __restrict trow = t + r * block_cols;
            for (std::size_t j = 0; j < cols; ++j) {
                const float product = x * brow[j];
                trow[j] = trow[j] + product;
            }
        }
    }
}

// The integer step, in the reference's own form: wrap by unsigned addition, then tell an overflow
// from the direction the accumulator moved (a positive product must not make it smaller, a
// negative one larger).
template <class Acc, bool Saturate>
inline Acc integer_step(Acc old, Acc product, Acc& overflowed) {
    using U = std::make_unsigned_t<Acc>;
    const Acc sum = static_cast<Acc>(static_cast<U>(old) + static_cast<U>(product));
    // A nonzero product moves the wrapped sum the wrong way exactly when the step overflowed: down
    // for a positive product, up for a negative one. As an Acc, not a bool: lanes of one width
    // are what the vectoriser wants.
    const Acc over = Acc(sum < old) ^ Acc(product < 0);
    overflowed += over;
    if constexpr (Saturate) {
        const Acc end = product < 0 ? std::numeric_limits<Acc>::min() : std::numeric_limits<Acc>::max();
        return over ? end : sum;
    }
    return sum;
}

// t (rows x cols block, stride block_cols) += a * b over [k0, k1), integer steps. Checked: every
// step is tested and counted. Unchecked: only where the caller has shown that no step can
// overflow (then wrapping adds are exact and the count is zero).
template <class Acc, class Op, bool Saturate, bool Checked>
SYSTOLIC_REFERENCE_CLONES std::uint64_t integer_block(std::size_t rows, std::size_t cols, std::size_t k0,
                                                      std::size_t k1, const Op* __restrict a, std::size_t lda,
                                                      const Op* __restrict b, std::size_t ldb,
                                                      Acc* __restrict t) {
    using U = std::make_unsigned_t<Acc>;
    auto step = [](Acc sum, Acc product, Acc& row_count) {
        if constexpr (Checked) {
            return integer_step<Acc, Saturate>(sum, product, row_count);
        } else {
            (void)row_count;
            return static_cast<Acc>(static_cast<U>(sum) + static_cast<U>(product));
        }
    };
    std::uint64_t count = 0;
    std::size_t k = k0;
    // Four k at a time, one step after another, as in float_block.
    for (; k + 4 <= k1; k += 4) {
        const Op* __restrict b0 = b + k * ldb;
        const Op* __restrict b1 = b0 + ldb;
        const Op* __restrict b2 = b1 + ldb;
        const Op* __restrict b3 = b2 + ldb;
        for (std::size_t r = 0; r < rows; ++r) {
            const Op* ar = a + r * lda + k;
            const Acc x0 = ar[0], x1 = ar[1], x2 = ar[2], x3 = ar[3];
            Acc* __restrict trow = t + r * block_cols;
            Acc row_count = 0;  // at most 4 x block_cols
            for (std::size_t j = 0; j < cols; ++j) {
                Acc sum = trow[j];
                sum = step(sum, x0 * static_cast<Acc>(b0[j]), row_count);  // products are exact
                sum = step(sum, x1 * static_cast<Acc>(b1[j]), row_count);
                sum = step(sum, x2 * static_cast<Acc>(b2[j]), row_count);
                sum = step(sum, x3 * static_cast<Acc>(b3[j]), row_count);
                trow[j] = sum;
            }
            count += static_cast<std::uint64_t>(row_count);
        }
    }
    for (; k < k1; ++k) {
        const Op* __restrict brow = b + k * ldb;
        for (std::size_t r = 0; r < rows; ++r) {
            const Acc x = a[r * lda + k];
            Acc* __restrict trow = t + r * block_cols;
            Acc row_count = 0;
            for (std::size_t j = 0; j < cols; ++j)
                trow[j] = step(trow[j], x * static_cast<Acc>(brow[j]), row_count);
            count += static_cast<std::uint64_t>(row_count);
        }
    }
    return count;
}

template <class Int>
std::uint64_t abs_value(Int v) {
    return v < 0 ? std::uint64_t{0} - static_cast<std::uint64_t>(static_cast<std::int64_t>(v))
                 : static_cast<std::uint64_t>(v);
}

// Whether a block's sums, starting from zero, stay in range over [k0, k1) whatever the order: the
// largest possible |sum| is the sum over k of (largest |a| in the block's rows at k) x (largest |b|
// in its columns at k). This skips only the testing of steps that cannot overflow; any block that
// comes near the range's end is tested and counted step by step.
inline bool block_cannot_overflow(std::uint64_t limit, std::size_t k0, std::size_t k1,
                                  const std::uint64_t* amax, const std::uint64_t* bmax) {
    std::uint64_t reach = 0;
    for (std::size_t k = k0; k < k1; ++k) {
        reach += amax[k] * bmax[k];  // each product at most 2^62, and reach stays at most 2^63 here
        if (reach > limit) return false;
    }
    return true;
}

// v rounded to an integral double: nearest with ties to even, nearest with ties away from zero,
// or toward zero. Exact for every double; NaN and infinities come back as they are.
inline double round_integral(double v, rounding_mode mode) {
    if (!(std::fabs(v) < 0x1p52)) return v;  // NaN, infinities and doubles that are integers already
    const double whole = std::trunc(v);
    if (mode == rounding_mode::toward_zero) return whole;
    const double rest = std::fabs(v - whole);  // exact: both below 2^52
    const double away = whole + (v < 0 ? -1.0 : 1.0);
    if (rest > 0.5) return away;
    if (rest < 0.5) return whole;
    if (mode == rounding_mode::nearest_away) return away;
    return std::fmod(whole, 2.0) == 0.0 ? whole : away;  // a tie: the even neighbour
}

// A double to an integer type, saturating; NaN -> 0.
template <class Int>
Int saturating_integer(double v) {
    if (v != v) return 0;
    if (v >= static_cast<double>(std::numeric_limits<Int>::max())) return std::numeric_limits<Int>::max();
    if (v <= static_cast<double>(std::numeric_limits<Int>::min())) return std::numeric_limits<Int>::min();
    return static_cast<Int>(v);
}

// A double to float: +-inf once the magnitude rounds past FLT_MAX. FLT_MAX + half an ulp (2^103)
// is a tie that rounds to even, which is the infinity (FLT_MAX's last significand bit is 1).
inline float float_from_double(double v) {
    if (v != v) return float_from_bits(canonical_nan_bits);
    const double magnitude = std::fabs(v);
    if (magnitude >= 0x1.ffffffp127)
        return v < 0 ? -std::numeric_limits<float>::infinity() : std::numeric_limits<float>::infinity();
    if (magnitude > static_cast<double>(std::numeric_limits<float>::max()))
        return v < 0 ? -std::numeric_limits<float>::max() : std::numeric_limits<float>::max();
    return static_cast<float>(v);
}

// Per-partial quantization: a chunk's partial scaled, rounded and put back in the accumulator type.
template <class Acc>
Acc rounded_partial_value(Acc v, const quantization& q) {
    const double rounded = round_integral(static_cast<double>(v) * q.scale, q.rounding);
    if constexpr (std::is_floating_point_v<Acc>) {
        return float_from_double(rounded);
    } else {
        return saturating_integer<Acc>(rounded);
    }
}

// The int8 code of an already rounded value: NaN -> the zero point, then the zero point added and
// the result clipped to [-128, 127].
inline std::int8_t int8_code(double rounded, std::int32_t zero_point) {
    const double shifted = rounded != rounded ? static_cast<double>(zero_point) : rounded + zero_point;
    return static_cast<std::int8_t>(std::min(127.0, std::max(-128.0, shifted)));
}

}  // namespace reference_detail

// The wide result with its overflow counts, in parts that threads may share: C = A (M x K) *
// B (K x P), both row-major, M x P accumulators. A part is a panel of block_cols columns by
// part_rows rows; it writes only its own outputs and keeps its own counts, so distinct parts may
// run at once, in any order, and give the same C and counts. Preserved accumulators see one
// unbroken k-ordered sum; with partial sums every chunk restarts from zero, is optionally rounded
// (per-partial quantization), and is added to the sum of the chunks before it.
template <class Format>
class reference_parts {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    static constexpr std::size_t part_rows = 64;  // a few milliseconds of work on a big layer

    // a and b must outlive the parts (bf16 operands are widened into the parts' own copies).
    reference_parts(const problem_shape& s, const std::vector<operand_type>& a,
                    const std::vector<operand_type>& b, const reference_options& opt = {});

    std::size_t size() const { return m_panels * m_row_parts; }
    void run(std::size_t part);
    // Once every part has run: C and the counts.
    counted_gemm<Format> take();

private:
    // Operands as multiplied: bf16 widened to float, the rest as given.
    using value_type = std::conditional_t<std::is_same_v<operand_type, bf16>, float, operand_type>;

    problem_shape m_shape;
    reference_options m_opt;
    std::vector<value_type> m_wa, m_wb;  // bf16 only
    const value_type* m_a;
    const value_type* m_b;
    std::size_t m_panels, m_row_parts;
    std::vector<accumulator_type> m_c;
    std::vector<std::array<std::uint64_t, 2>> m_counts;  // per part: step and partial overflows
};

template <class Format>
reference_parts<Format>::reference_parts(const problem_shape& s, const std::vector<operand_type>& a,
                                         const std::vector<operand_type>& b, const reference_options& opt)
    : m_shape(s), m_opt(opt) {
    if constexpr (std::is_same_v<operand_type, bf16>) {
        auto widen = [](const std::vector<bf16>& v) {
            std::vector<float> out(v.size());
            for (std::size_t i = 0; i < v.size(); ++i)
                out[i] = reference_detail::float_from_bits(std::uint32_t{v[i].bits} << 16);
            return out;
        };
        m_wa = widen(a);
        m_wb = widen(b);
        m_a = m_wa.data();
        m_b = m_wb.data();
    } else {
        m_a = a.data();
        m_b = b.data();
    }
    m_panels =
        static_cast<std::size_t>((s.p + reference_detail::block_cols - 1) / reference_detail::block_cols);
    m_row_parts = static_cast<std::size_t>((s.m + part_rows - 1) / part_rows);
    m_c.assign(s.m * s.p, accumulator_type{});
    m_counts.assign(size(), {0, 0});
}

template <class Format>
void reference_parts<Format>::run(std::size_t part) {
    namespace d = reference_detail;
    using acc_t = accumulator_type;
    const problem_shape& s = m_shape;
    const reference_options& opt = m_opt;
    const bool split = opt.policy == k_policy::partials && k_chunks(s.k, opt.k_tile) > 1;
    const std::uint64_t chunk = split ? effective_k_tile(s.k, opt.k_tile) : s.k;
    const bool round_partials = split && opt.quant.per_partial;
    const bool saturate = opt.overflow == overflow_mode::saturate;
    std::uint64_t& overflows = m_counts[part][0];
    std::uint64_t& partial_overflows = m_counts[part][1];

    const std::uint64_t j0 = (part / m_row_parts) * d::block_cols;
    const std::uint64_t rows_begin = (part % m_row_parts) * part_rows;
    const std::uint64_t rows_end = std::min<std::uint64_t>(s.m, rows_begin + part_rows);
    const std::size_t cols = std::min<std::uint64_t>(d::block_cols, s.p - j0);

    std::vector<acc_t> total(d::block_rows * d::block_cols), partial(d::block_rows * d::block_cols);
    // Integers: the largest |b| of each k in the column panel and |a| in the row block, for the
    // block bound.
    std::vector<std::uint64_t> amax(Format::is_integer ? s.k : 0), bmax(Format::is_integer ? s.k : 0);
    if constexpr (Format::is_integer) {
        for (std::uint64_t k = 0; k < s.k; ++k) {
            std::uint64_t m = 0;
            for (std::size_t j = 0; j < cols; ++j)
                m = std::max(m, d::abs_value(m_b[k * s.p + j0 + j]));
            bmax[k] = m;
        }
    }
    for (std::uint64_t i0 = rows_begin; i0 < rows_end; i0 += d::block_rows) {
        const std::size_t rows = std::min<std::uint64_t>(d::block_rows, rows_end - i0);
        const auto* ablock = m_a + i0 * s.k;
        const auto* bblock = m_b + j0;
        if constexpr (Format::is_integer) {
            for (std::uint64_t k = 0; k < s.k; ++k) {
                std::uint64_t m = 0;
                for (std::size_t r = 0; r < rows; ++r)
                    m = std::max(m, d::abs_value(m_a[(i0 + r) * s.k + k]));
                amax[k] = m;
            }
        }
        for (std::uint64_t k0 = 0; k0 < s.k || k0 == 0; k0 += chunk) {
            const std::uint64_t k1 = std::min(s.k, k0 + chunk);
            std::fill(partial.begin(), partial.end(), acc_t{});
            if constexpr (Format::is_integer) {
                using op_t = operand_type;
                const auto limit = static_cast<std::uint64_t>(std::numeric_limits<acc_t>::max());
                if (d::block_cannot_overflow(limit, k0, k1, amax.data(), bmax.data())) {
                    d::integer_block<acc_t, op_t, false, false>(rows, cols, k0, k1, ablock, s.k, bblock, s.p,
                                                                partial.data());
                } else {
                    overflows += saturate ? d::integer_block<acc_t, op_t, true, true>(
                                                rows, cols, k0, k1, ablock, s.k, bblock, s.p, partial.data())
                                          : d::integer_block<acc_t, op_t, false, true>(
                                                rows, cols, k0, k1, ablock, s.k, bblock, s.p, partial.data());
                }
            } else {
                d::float_block(rows, cols, k0, k1, ablock, s.k, bblock, s.p, partial.data());
            }
            for (std::size_t r = 0; r < rows; ++r) {
                for (std::size_t j = 0; j < cols; ++j) {
                    acc_t& sum = total[r * d::block_cols + j];
                    acc_t part_sum = partial[r * d::block_cols + j];
                    if (round_partials) part_sum = d::rounded_partial_value(part_sum, opt.quant);
                    if (k0 == 0) {
                        sum = part_sum;
                    } else if constexpr (Format::is_integer) {
                        acc_t over = 0;
                        sum = saturate ? d::integer_step<acc_t, true>(sum, part_sum, over)
                                       : d::integer_step<acc_t, false>(sum, part_sum, over);
                        partial_overflows += static_cast<std::uint64_t>(over);
                    } else {
                        sum = sum + part_sum;
                    }
                }
            }
            if (s.k == 0) break;
        }
        for (std::size_t r = 0; r < rows; ++r) {
            for (std::size_t j = 0; j < cols; ++j) {
                acc_t v = total[r * d::block_cols + j];
                if constexpr (!Format::is_integer) {
                    if (v != v) v = d::float_from_bits(d::canonical_nan_bits);
                }
                m_c[(i0 + r) * s.p + j0 + j] = v;
            }
        }
    }
}

template <class Format>
counted_gemm<Format> reference_parts<Format>::take() {
    counted_gemm<Format> out;
    out.c = std::move(m_c);
    for (const auto& c : m_counts) {
        out.overflows += c[0];
        out.partial_overflows += c[1];
    }
    return out;
}

// The whole reference on the calling thread.
template <class Format>
counted_gemm<Format> reference_gemm_counted(const problem_shape& s,
                                            const std::vector<typename Format::operand_type>& a,
                                            const std::vector<typename Format::operand_type>& b,
                                            const reference_options& opt = {}) {
    reference_parts<Format> parts(s, a, b, opt);
    for (std::size_t i = 0; i < parts.size(); ++i)
        parts.run(i);
    return parts.take();
}

// The wide result alone, M x P accumulators.
template <class Format>
std::vector<typename Format::accumulator_type> reference_gemm(
    const problem_shape& s, const std::vector<typename Format::operand_type>& a,
    const std::vector<typename Format::operand_type>& b, const reference_options& opt = {}) {
    return reference_gemm_counted<Format>(s, a, b, opt).c;
}

// C's bytes from the wide result: the accumulators themselves, or int8 codes. With per-partial
// quantization the partials were already scaled and rounded, so only the zero point and the
// saturation remain.
//
// Per-column: when `scales` is not empty (P entries, P = its length), the element at index i of the
// row-major M x P result is column i mod P and uses scales[i mod P], and zero_points[i mod P] when
// that is not empty, in place of the tensor's scale and zero point.
template <class Format>
std::vector<std::uint8_t> encode_c(const std::vector<typename Format::accumulator_type>& wide,
                                   const quantization& quant, const std::vector<double>& scales = {},
                                   const std::vector<std::int32_t>& zero_points = {}) {
    namespace d = reference_detail;
    using acc_t = typename Format::accumulator_type;
    if (!quant.enabled) {
        std::vector<std::uint8_t> bytes(wide.size() * sizeof(acc_t));
        std::memcpy(bytes.data(), wide.data(), bytes.size());
        return bytes;
    }
    if (!scales.empty() &&
        (wide.size() % scales.size() != 0 || (!zero_points.empty() && zero_points.size() != scales.size())))
        throw std::invalid_argument("reference: the per-column vectors do not match C's columns");
    std::vector<std::uint8_t> bytes(wide.size());
    const std::size_t p = scales.size();
    for (std::size_t i = 0; i < wide.size(); ++i) {
        const double scale = p ? scales[i % p] : quant.scale;
        const std::int32_t zero_point = !zero_points.empty() ? zero_points[i % p] : quant.zero_point;
        const double v = static_cast<double>(wide[i]);
        const double rounded = quant.per_partial ? v : d::round_integral(v * scale, quant.rounding);
        bytes[i] = static_cast<std::uint8_t>(d::int8_code(rounded, zero_point));
    }
    return bytes;
}

// The four formats are compiled once, in verify/src/reference_gemm.cpp.
#define SYSTOLIC_REFERENCE_EXTERN(F)                                                                       \
    extern template class reference_parts<F>;                                                              \
    extern template counted_gemm<F> reference_gemm_counted<F>(                                             \
        const problem_shape&, const std::vector<F::operand_type>&, const std::vector<F::operand_type>&,    \
        const reference_options&);                                                                         \
    extern template std::vector<F::accumulator_type> reference_gemm<F>(                                    \
        const problem_shape&, const std::vector<F::operand_type>&, const std::vector<F::operand_type>&,    \
        const reference_options&);                                                                         \
    extern template std::vector<std::uint8_t> encode_c<F>(const std::vector<F::accumulator_type>&,         \
                                                          const quantization&, const std::vector<double>&, \
                                                          const std::vector<std::int32_t>&);
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_REFERENCE_EXTERN)
#undef SYSTOLIC_REFERENCE_EXTERN

}  // namespace systolic::verify
