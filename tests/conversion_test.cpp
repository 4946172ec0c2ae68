// Every double-to-integer and double-to-float conversion on the model's requantization path has a
// defined result. The rule: NaN -> 0, at or above the type's maximum -> the
// maximum, at or below its minimum -> the minimum, otherwise the (already rounded) value; a double
// converted to float becomes +-inf once its magnitude rounds past FLT_MAX. int8 output codes keep
// their own rule (NaN -> zero point, clip to [-128, 127]). Expected values are written out here,
// not computed with the code under test.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "systolic/quantize.h"

namespace {

using systolic::quantization;
using systolic::rounding_mode;
using i32 = std::int32_t;
using i64 = std::int64_t;

constexpr double inf = std::numeric_limits<double>::infinity();

// Hides a constant from the optimiser: GCC folds an out-of-range constant conversion to the
// saturated value, which would let an undefined conversion pass these tests in a Release build.
double opaque(double v) {
    volatile double hidden = v;
    return hidden;
}
constexpr i32 i32_max = 2147483647;
constexpr i32 i32_min = -2147483647 - 1;
constexpr i64 i64_max = 9223372036854775807LL;
constexpr i64 i64_min = -9223372036854775807LL - 1;

TEST(SaturatingConversion, Int32) {
    using systolic::saturating_cast;
    EXPECT_EQ(saturating_cast<i32>(opaque(0.0)), 0);
    EXPECT_EQ(saturating_cast<i32>(opaque(-7.0)), -7);
    EXPECT_EQ(saturating_cast<i32>(opaque(2147483647.0)), i32_max);
    EXPECT_EQ(saturating_cast<i32>(opaque(2147483648.0)), i32_max);
    EXPECT_EQ(saturating_cast<i32>(opaque(1e10)), i32_max);
    EXPECT_EQ(saturating_cast<i32>(opaque(1e308)), i32_max);
    EXPECT_EQ(saturating_cast<i32>(opaque(inf)), i32_max);
    EXPECT_EQ(saturating_cast<i32>(opaque(-2147483648.0)), i32_min);
    EXPECT_EQ(saturating_cast<i32>(opaque(-2147483649.0)), i32_min);
    EXPECT_EQ(saturating_cast<i32>(opaque(-inf)), i32_min);
    EXPECT_EQ(saturating_cast<i32>(opaque(std::nan(""))), 0);
    EXPECT_EQ(saturating_cast<i32>(opaque(-std::nan(""))), 0);
    EXPECT_EQ(saturating_cast<i32>(opaque(2.75)), 2);  // truncation, for values the caller did not round
    EXPECT_EQ(saturating_cast<i32>(opaque(-2.75)), -2);
}

TEST(SaturatingConversion, Int64) {
    using systolic::saturating_cast;
    // 2^63 is the first double above INT64_MAX; the largest double below it is 2^63 - 1024.
    EXPECT_EQ(saturating_cast<i64>(opaque(9223372036854775808.0)), i64_max);
    EXPECT_EQ(saturating_cast<i64>(opaque(9223372036854774784.0)), 9223372036854774784LL);
    EXPECT_EQ(saturating_cast<i64>(opaque(1e300)), i64_max);
    EXPECT_EQ(saturating_cast<i64>(opaque(inf)), i64_max);
    EXPECT_EQ(saturating_cast<i64>(opaque(-9223372036854775808.0)), i64_min);
    EXPECT_EQ(saturating_cast<i64>(opaque(-1e300)), i64_min);
    EXPECT_EQ(saturating_cast<i64>(opaque(-inf)), i64_min);
    EXPECT_EQ(saturating_cast<i64>(opaque(std::nan(""))), 0);
}

TEST(SaturatingConversion, FloatGoesToInfinityPastFltMax) {
    using systolic::to_float;
    constexpr float flt_max = std::numeric_limits<float>::max();
    const double flt_max_d = flt_max;                                    // (2 - 2^-23) * 2^127
    const double halfway = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);  // between FLT_MAX and 2^128
    EXPECT_EQ(to_float(opaque(flt_max_d)), flt_max);
    EXPECT_EQ(to_float(opaque(std::nextafter(halfway, 0.0))), flt_max);            // rounds down to FLT_MAX
    EXPECT_EQ(to_float(opaque(halfway)), std::numeric_limits<float>::infinity());  // ties to even: 2^128
    EXPECT_EQ(to_float(opaque(-halfway)), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(to_float(opaque(1e300)), std::numeric_limits<float>::infinity());
    EXPECT_EQ(to_float(opaque(-1e300)), -std::numeric_limits<float>::infinity());
    EXPECT_EQ(to_float(opaque(inf)), std::numeric_limits<float>::infinity());
    EXPECT_TRUE(std::isnan(to_float(std::nan(""))));
    EXPECT_EQ(to_float(opaque(0.1)), 0.1f);
    EXPECT_EQ(to_float(opaque(1e-300)), 0.0f);  // underflow is defined: zero
}

quantization per_partial(double scale, rounding_mode mode = rounding_mode::nearest_even) {
    quantization q;
    q.enabled = true;
    q.scale = scale;
    q.rounding = mode;
    q.per_partial = true;
    return q;
}

// Partials of 10000 scaled by 1e6 (or 1e308) do not fit in int32.
TEST(SaturatingConversion, RoundedPartialSaturatesInt32) {
    using systolic::rounded_partial;
    EXPECT_EQ(rounded_partial<i32>(10000, per_partial(opaque(1e6))), i32_max);
    EXPECT_EQ(rounded_partial<i32>(-10000, per_partial(opaque(1e6))), i32_min);
    EXPECT_EQ(rounded_partial<i32>(10000, per_partial(opaque(1e308))), i32_max);
    EXPECT_EQ(rounded_partial<i32>(-10000, per_partial(opaque(1e308))), i32_min);
    EXPECT_EQ(rounded_partial<i32>(i32_max, per_partial(opaque(1.0))), i32_max);
    EXPECT_EQ(rounded_partial<i32>(7, per_partial(0.5)), 4);  // in range: unchanged behaviour
    EXPECT_EQ(rounded_partial<i32>(0, per_partial(opaque(1e308))), 0);
}

TEST(SaturatingConversion, RoundedPartialSaturatesInt64) {
    using systolic::rounded_partial;
    EXPECT_EQ(rounded_partial<i64>(i64_max, per_partial(opaque(1.0))), i64_max);  // double(i64_max) is 2^63
    EXPECT_EQ(rounded_partial<i64>(i64_min, per_partial(opaque(1.0))), i64_min);
    EXPECT_EQ(rounded_partial<i64>(3, per_partial(opaque(1e300))), i64_max);
    EXPECT_EQ(rounded_partial<i64>(-3, per_partial(opaque(1e300))), i64_min);
    EXPECT_EQ(rounded_partial<i64>(5, per_partial(0.5, rounding_mode::nearest_away)), 3);
}

TEST(SaturatingConversion, RoundedPartialOfFloatGoesToInfinity) {
    using systolic::rounded_partial;
    constexpr float big = 3e38f;
    EXPECT_EQ(rounded_partial<float>(big, per_partial(opaque(10.0))), std::numeric_limits<float>::infinity());
    EXPECT_EQ(rounded_partial<float>(-big, per_partial(opaque(10.0))),
              -std::numeric_limits<float>::infinity());
    EXPECT_EQ(rounded_partial<float>(2.5f, per_partial(opaque(1.0))), 2.0f);
}

TEST(SaturatingConversion, Int8CodesKeepTheirRule) {
    bool sat = false;
    EXPECT_EQ(systolic::saturate_int8(std::nan(""), 7, &sat), 7);
    EXPECT_FALSE(sat);
    EXPECT_EQ(systolic::saturate_int8(inf, 0, &sat), 127);
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::saturate_int8(-inf, 0, &sat), -128);
    EXPECT_TRUE(sat);
    quantization q;
    q.enabled = true;
    q.scale = opaque(1e308);
    EXPECT_EQ(systolic::requantize(1e300, q), 127);
    EXPECT_EQ(systolic::requantize(-1e300, q), -128);
}

}  // namespace
