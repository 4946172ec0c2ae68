// Requantization of wide accumulators to int8 on the way out of the array:
//   q = saturate_int8(round(acc x scale) + zero_point)
// computed in double (exact for integer accumulators up to 2^53 in magnitude). Plain C++, shared
// by the controller's drain and the scoreboard's reference.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <string_view>

namespace systolic {

enum class rounding_mode { nearest_even, nearest_away, toward_zero };
std::string_view to_string(rounding_mode mode);
std::optional<rounding_mode> parse_rounding_mode(std::string_view name);  // "nearest-even", ...

struct quantization {
    bool enabled = false;  // false: C holds the accumulators themselves
    double scale = 1.0;
    std::int32_t zero_point = 0;
    rounding_mode rounding = rounding_mode::nearest_even;
    // K-splitting with partial sums only: round each chunk's partial before combining them, the
    // mistake the seeds warn about, kept for study. Default: quantize the complete sum once.
    bool per_partial = false;
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
template <class Accumulator>
Accumulator rounded_partial(Accumulator v, const quantization& qz) {
    return static_cast<Accumulator>(round_to_integer(double(v) * qz.scale, qz.rounding));
}

inline std::int8_t requantize(double acc, const quantization& qz, bool* saturated = nullptr) {
    return saturate_int8(round_to_integer(acc * qz.scale, qz.rounding), qz.zero_point, saturated);
}

}  // namespace systolic
