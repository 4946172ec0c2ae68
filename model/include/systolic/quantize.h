// Requantization of wide accumulators to int8 on the way out of the array:
//   q = saturate_int8(round(acc x scale) + zero_point)
// computed in double (exact for integer accumulators up to 2^53 in magnitude). Plain C++, used
// by the controller's drain.
//
// Every conversion out of double here has a defined result (a plain static_cast of an out-of-range
// double to an integer is undefined behaviour, and x86 happens to give INT_MIN):
//   double -> integer: NaN -> 0, v >= max -> max, v <= min -> min, otherwise truncation of the
//                      (already rounded) value;
//   double -> int8 code: NaN -> the zero point, clipped to [-128, 127] (saturate_int8);
//   double -> float:   +-inf once the magnitude rounds past FLT_MAX, done explicitly.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string_view>
#include <type_traits>

#include "systolic/names.h"

namespace systolic {

enum class rounding_mode { nearest_even, nearest_away, toward_zero };
inline constexpr enum_name<rounding_mode> rounding_mode_names[] = {
    {rounding_mode::nearest_even, "nearest-even", "round half to even"},
    {rounding_mode::nearest_away, "nearest-away", "round half away from zero"},
    {rounding_mode::toward_zero, "toward-zero", "truncate"},
};
static_assert(names_in_order(rounding_mode_names));
constexpr const char* to_string(rounding_mode mode) {
    return name_of(rounding_mode_names, mode);
}
constexpr std::optional<rounding_mode> parse_rounding_mode(std::string_view name) {
    return parse_name(rounding_mode_names, name);
}

// What C holds: the accumulators, or int8 codes requantized from them (the OUT_DTYPE register).
enum class output_dtype { acc, int8 };
inline constexpr enum_name<output_dtype> output_dtype_names[] = {
    {output_dtype::acc, "acc", "the accumulators"},
    {output_dtype::int8, "int8", "int8 codes: saturate(round(acc x scale) + zero_point)"},
};
static_assert(names_in_order(output_dtype_names));
constexpr const char* to_string(output_dtype d) {
    return name_of(output_dtype_names, d);
}

// Per-column (per-channel) requantization: where a job's memory holds one scale per column j of C
// and, optionally, one zero point per column. From `base` (8-byte aligned): P little-endian IEEE
// float64 scales, then, when `zero_points`, P little-endian int32 zero points (docs/formats.md).
// The output stage reads a tile's slice of them over the DMA port when it writes C.
struct column_vectors {
    std::uint64_t base = 0;
    bool zero_points = false;  // false: every column uses quantization::zero_point

    static constexpr std::uint64_t scale_bytes = 8;
    static constexpr std::uint64_t zero_point_bytes = 4;
    std::uint64_t scale_address(std::uint64_t col) const { return base + col * scale_bytes; }
    std::uint64_t zero_point_address(std::uint64_t cols, std::uint64_t col) const {
        return base + cols * scale_bytes + col * zero_point_bytes;
    }
    // The bytes the vectors take for a C of `cols` columns.
    std::uint64_t bytes(std::uint64_t cols) const {
        return cols * (scale_bytes + (zero_points ? zero_point_bytes : 0));
    }
};

struct quantization {
    bool enabled = false;  // false: C holds the accumulators themselves
    double scale = 1.0;    // per-tensor: every column's scale, unless `columns`
    std::int32_t zero_point = 0;
    rounding_mode rounding = rounding_mode::nearest_even;
    // K-splitting with partial sums only: round each chunk's partial before combining them, the
    // mistake the seeds warn about, kept for study. Default: quantize the complete sum once.
    bool per_partial = false;
    // Present: column j of C is requantized with the scale (and zero point) that the job's memory
    // holds for it, instead of `scale` (and `zero_point`). Absent: per-tensor, as above.
    std::optional<column_vectors> columns;
};

// v rounded to an integer (as a double) under the given mode; no dependence on the FPU's mode.
inline double round_to_integer(double v, rounding_mode mode) {
    switch (mode) {
        case rounding_mode::toward_zero:
            return std::trunc(v);
        case rounding_mode::nearest_away:
            return std::round(v);
        case rounding_mode::nearest_even: {
            const double floor = std::floor(v);
            const double frac = v - floor;
            if (frac > 0.5) return floor + 1;
            if (frac < 0.5) return floor;
            return std::fmod(floor, 2.0) == 0 ? floor : floor + 1;
        }
    }
    return v;
}

// A double as the integer type Int, saturating (the rule above). The bounds compare as doubles:
// min is a power of two, so exact; max may round up to the next power of two (2^63 for int64),
// and every double below that bound fits, so the cast in the last line is always defined.
template <class Int>
Int saturating_cast(double v) {
    static_assert(std::is_integral_v<Int>, "saturating_cast converts to integer types");
    constexpr Int lo = std::numeric_limits<Int>::min();
    constexpr Int hi = std::numeric_limits<Int>::max();
    if (std::isnan(v)) return 0;
    if (v >= static_cast<double>(hi)) return hi;
    if (v <= static_cast<double>(lo)) return lo;
    return static_cast<Int>(v);
}

// A double as float: round to nearest, and +-inf when that rounding would pass FLT_MAX. The
// halfway point between FLT_MAX and 2^128 rounds to 2^128 (ties to even: FLT_MAX's significand
// is odd), so anything at or beyond it is infinite; below it, the conversion is in range.
inline float to_float(double v) {
    constexpr double overflow = 0x1.ffffffp127;  // 2^128 - 2^103
    if (v >= overflow) return std::numeric_limits<float>::infinity();
    if (v <= -overflow) return -std::numeric_limits<float>::infinity();
    return static_cast<float>(v);  // NaN stays NaN
}

// The int8 code of an already rounded value: add the zero point and saturate. NaN maps to the
// zero point.
inline std::int8_t saturate_int8(double rounded, std::int32_t zero_point, bool* saturated = nullptr) {
    double q = std::isnan(rounded) ? zero_point : rounded + zero_point;
    const bool clip = q > 127 || q < -128;
    if (saturated) *saturated = clip;
    q = q > 127 ? 127 : q < -128 ? -128 : q;
    return static_cast<std::int8_t>(q);
}

// One partial sum as per-partial quantization sees it: scaled and rounded to an integer, kept in
// the accumulator's type so that it can be combined with the others.
// A product that does not fit saturates (integers) or goes to infinity (float), by the rules above.
template <class Accumulator>
Accumulator rounded_partial(Accumulator v, const quantization& qz) {
    const double rounded = round_to_integer(double(v) * qz.scale, qz.rounding);
    if constexpr (std::is_integral_v<Accumulator>) {
        return saturating_cast<Accumulator>(rounded);
    } else {
        return to_float(rounded);
    }
}

// The int8 code of one accumulator under a scale and zero point: the tensor's, or its column's.
inline std::int8_t requantize(double acc, double scale, std::int32_t zero_point, rounding_mode rounding,
                              bool* saturated = nullptr) {
    return saturate_int8(round_to_integer(acc * scale, rounding), zero_point, saturated);
}

inline std::int8_t requantize(double acc, const quantization& qz, bool* saturated = nullptr) {
    return requantize(acc, qz.scale, qz.zero_point, qz.rounding, saturated);
}

}  // namespace systolic
