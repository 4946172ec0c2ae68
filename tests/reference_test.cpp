// The reference GEMM on its own terms: its conversion and rounding rules on hand-derived values,
// overflow counts worked out by hand, the canonical NaN, and (since it shares no arithmetic with
// the model) a cross-check of its C and counts against gemm_accumulate, which uses the model's
// Format::mac, on cases on both sides of the overflow bounds.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "format_types.h"
#include "systolic/gemm_kernel.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

namespace {

using systolic::bf16;
using systolic::bf16_format;
using systolic::fp32_format;
using systolic::int32_format;
using systolic::int8_format;
using systolic::k_policy;
using systolic::overflow_mode;
using systolic::problem_shape;
using systolic::quantization;
using systolic::rounding_mode;
using systolic::verify::reference_options;
namespace d = systolic::verify::reference_detail;

std::uint32_t bits_of(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
float float_of(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

TEST(ReferenceRules, RoundingModes) {
    using rm = rounding_mode;
    const struct {
        double v, even, away, zero;
    } cases[] = {{2.5, 2, 3, 2},
                 {3.5, 4, 4, 3},
                 {-2.5, -2, -3, -2},
                 {-3.5, -4, -4, -3},
                 {2.4999, 2, 2, 2},
                 {-2.7, -3, -3, -2},
                 {0.5, 0, 1, 0},
                 {-0.5, -0.0, -1, -0.0},
                 {0x1p52 + 1, 0x1p52 + 1, 0x1p52 + 1, 0x1p52 + 1},
                 {1e300, 1e300, 1e300, 1e300}};
    for (const auto& c : cases) {
        EXPECT_EQ(d::round_integral(c.v, rm::nearest_even), c.even) << c.v;
        EXPECT_EQ(d::round_integral(c.v, rm::nearest_away), c.away) << c.v;
        EXPECT_EQ(d::round_integral(c.v, rm::toward_zero), c.zero) << c.v;
    }
    EXPECT_TRUE(std::isnan(d::round_integral(std::nan(""), rm::nearest_even)));
    EXPECT_EQ(d::round_integral(-INFINITY, rm::nearest_away), -INFINITY);
}

TEST(ReferenceRules, DoubleToIntegerSaturates) {
    using i32 = std::int32_t;
    using i64 = std::int64_t;
    EXPECT_EQ(d::saturating_integer<i32>(std::nan("")), 0);
    EXPECT_EQ(d::saturating_integer<i32>(2147483647.0), 2147483647);
    EXPECT_EQ(d::saturating_integer<i32>(2147483648.0), 2147483647);
    EXPECT_EQ(d::saturating_integer<i32>(-2147483648.0), -2147483647 - 1);
    EXPECT_EQ(d::saturating_integer<i32>(-1e300), -2147483647 - 1);
    EXPECT_EQ(d::saturating_integer<i32>(INFINITY), 2147483647);
    EXPECT_EQ(d::saturating_integer<i32>(-7.0), -7);
    EXPECT_EQ(d::saturating_integer<i64>(0x1p63), std::numeric_limits<i64>::max());
    EXPECT_EQ(d::saturating_integer<i64>(-0x1p63), std::numeric_limits<i64>::min());
    EXPECT_EQ(d::saturating_integer<i64>(0x1p62), i64{1} << 62);
    EXPECT_EQ(d::saturating_integer<i64>(std::nan("")), 0);
}

TEST(ReferenceRules, DoubleToFloatGoesToInfinityPastFltMax) {
    const double fmax = std::numeric_limits<float>::max();
    EXPECT_EQ(d::float_from_double(fmax), std::numeric_limits<float>::max());
    // Below half an ulp (2^103) above FLT_MAX it still rounds to FLT_MAX; the tie rounds to even,
    // which is the infinity.
    EXPECT_EQ(d::float_from_double(fmax + 0x1p102), std::numeric_limits<float>::max());
    EXPECT_EQ(d::float_from_double(fmax + 0x1p103), INFINITY);
    EXPECT_EQ(d::float_from_double(-(fmax + 0x1p103)), -INFINITY);
    EXPECT_EQ(d::float_from_double(1e300), INFINITY);
    EXPECT_EQ(bits_of(d::float_from_double(std::nan(""))), 0x7fc00000u);
    EXPECT_EQ(d::float_from_double(0.1), 0.1f);
}

TEST(ReferenceRules, Int8Codes) {
    EXPECT_EQ(d::int8_code(std::nan(""), 5), 5);
    EXPECT_EQ(d::int8_code(std::nan(""), 200), 127);  // the zero point itself is clipped
    EXPECT_EQ(d::int8_code(120, 10), 127);
    EXPECT_EQ(d::int8_code(-120, -10), -128);
    EXPECT_EQ(d::int8_code(INFINITY, 0), 127);
    EXPECT_EQ(d::int8_code(-INFINITY, 0), -128);
    EXPECT_EQ(d::int8_code(-3, 2), -1);
}

TEST(ReferenceRules, EncodeCRoundsThenShiftsThenClips) {
    const std::vector<std::int32_t> wide = {5, 7, -5, 1000, -1000};
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.zero_point = 3;
    const struct {
        rounding_mode mode;
        std::int8_t want[5];
    } cases[] = {{rounding_mode::nearest_even, {5, 7, 1, 127, -128}},  // 2.5->2, 3.5->4, -2.5->-2
                 {rounding_mode::nearest_away, {6, 7, 0, 127, -128}},  // 3, 4, -3
                 {rounding_mode::toward_zero, {5, 6, 1, 127, -128}}};  // 2, 3, -2
    for (const auto& c : cases) {
        q.rounding = c.mode;
        const auto bytes = systolic::verify::encode_c<int8_format>(wide, q);
        ASSERT_EQ(bytes.size(), wide.size());
        for (std::size_t i = 0; i < wide.size(); ++i)
            EXPECT_EQ(static_cast<std::int8_t>(bytes[i]), c.want[i])
                << systolic::to_string(c.mode) << " " << i;
    }
    // A NaN accumulator becomes the zero point.
    q.rounding = rounding_mode::nearest_even;
    const auto nan_bytes = systolic::verify::encode_c<fp32_format>({std::nanf("")}, q);
    EXPECT_EQ(static_cast<std::int8_t>(nan_bytes[0]), 3);
}

// Per-column: element i of the row-major M x P result takes column i mod P's scale and zero point.
// A 2 x 3 C with scales 1, 0.5, 0.25 and zero points 0, 1, -1, by hand (nearest even: 2.5 -> 2,
// 1.25 -> 1, 3.5 -> 4, 5.75 -> 6).
TEST(ReferenceRules, EncodeCPerColumn) {
    const std::vector<std::int32_t> wide = {7, 5, 5, 16, 5, 14};
    quantization q;
    q.enabled = true;
    q.scale = 100;  // the tensor's: unused once the columns have their own
    q.zero_point = 50;
    const std::vector<double> scales = {1, 0.5, 0.25};
    auto codes = [](const std::vector<std::uint8_t>& b) {
        return std::vector<std::int8_t>(b.begin(), b.end());
    };
    EXPECT_EQ(codes(systolic::verify::encode_c<int8_format>(wide, q, scales)),
              (std::vector<std::int8_t>{57, 52, 51, 66, 52, 54}));  // the tensor's zero point
    EXPECT_EQ(codes(systolic::verify::encode_c<int8_format>(wide, q, scales, {0, 1, -1})),
              (std::vector<std::int8_t>{7, 3, 0, 16, 3, 3}));
    // Each column saturates on its own.
    EXPECT_EQ(codes(systolic::verify::encode_c<int8_format>({1000, 1000}, q, {1, 0.01}, {0, 0})),
              (std::vector<std::int8_t>{127, 10}));
    // Vectors that do not fit C's columns are refused.
    EXPECT_THROW(systolic::verify::encode_c<int8_format>(wide, q, {1, 1, 1, 1}), std::invalid_argument);
    EXPECT_THROW(systolic::verify::encode_c<int8_format>(wide, q, scales, {0}), std::invalid_argument);
}

// The in-memory layout the output stage reads: P float64 scales from the base, then P int32
// zero points.
TEST(ReferenceRules, ColumnVectorLayout) {
    const systolic::column_vectors v{0x1000, true};
    EXPECT_EQ(v.scale_address(0), 0x1000u);
    EXPECT_EQ(v.scale_address(3), 0x1018u);
    EXPECT_EQ(v.zero_point_address(5, 0), 0x1028u);
    EXPECT_EQ(v.zero_point_address(5, 2), 0x1030u);
    EXPECT_EQ(v.bytes(5), 60u);
    EXPECT_EQ((systolic::column_vectors{0, false}.bytes(5)), 40u);
}

// ---- Overflow counts by hand

TEST(ReferenceCounts, Int8StepsPastTheRange) {
    // 127 x 127 = 16129 per step: the sum first passes 2^31 - 1 at step 133145 (16129 x 133144 =
    // 2147479576 still fits). Wrapping, it then needs 2^32 / 16129 > 266000 more steps to pass
    // again: one overflow in 140000 steps. Saturating, every step from 133145 on: 6856.
    const std::uint64_t k = 140000;
    const problem_shape s{1, k, 1};
    const std::vector<std::int8_t> a(k, 127), b(k, 127);
    reference_options opt;
    opt.overflow = overflow_mode::wrap;
    auto wrap = systolic::verify::reference_gemm_counted<int8_format>(s, a, b, opt);
    EXPECT_EQ(wrap.overflows, 1u);
    EXPECT_EQ(wrap.c[0], static_cast<std::int32_t>(static_cast<std::uint32_t>(16129u * 140000u)));
    opt.overflow = overflow_mode::saturate;
    auto sat = systolic::verify::reference_gemm_counted<int8_format>(s, a, b, opt);
    EXPECT_EQ(sat.overflows, 6856u);
    EXPECT_EQ(sat.c[0], std::numeric_limits<std::int32_t>::max());
    EXPECT_EQ(sat.partial_overflows, 0u);
}

TEST(ReferenceCounts, Int32StepsAndPartials) {
    // Products of 2^62 (INT32_MIN squared). One chunk of 10 from zero: wrapping, steps 2, 6 and 10
    // pass 2^63 - 1; saturating, steps 2 to 10 all do.
    const std::int32_t lo = std::numeric_limits<std::int32_t>::min();
    {
        const problem_shape s{2, 10, 3};
        const std::vector<std::int32_t> a(20, lo), b(30, lo);
        reference_options opt;
        auto wrap = systolic::verify::reference_gemm_counted<int32_format>(s, a, b, opt);
        EXPECT_EQ(wrap.overflows, 3u * 6);
        EXPECT_EQ(wrap.c[0], std::numeric_limits<std::int64_t>::min());  // 10 x 2^62 = 2^63 mod 2^64
        opt.overflow = overflow_mode::saturate;
        auto sat = systolic::verify::reference_gemm_counted<int32_format>(s, a, b, opt);
        EXPECT_EQ(sat.overflows, 9u * 6);
        EXPECT_EQ(sat.c[5], std::numeric_limits<std::int64_t>::max());
    }
    {
        // K = 4 in chunks of 2 as partial sums: each chunk overflows once (step 2); combining the
        // two partials overflows once more. Wrapping: -2^63 + -2^63 = 0. Saturating: max + max = max.
        const problem_shape s{1, 4, 1};
        const std::vector<std::int32_t> a(4, lo), b(4, lo);
        reference_options opt;
        opt.k_tile = 2;
        opt.policy = k_policy::partials;
        auto wrap = systolic::verify::reference_gemm_counted<int32_format>(s, a, b, opt);
        EXPECT_EQ(wrap.overflows, 2u);
        EXPECT_EQ(wrap.partial_overflows, 1u);
        EXPECT_EQ(wrap.c[0], 0);
        opt.overflow = overflow_mode::saturate;
        auto sat = systolic::verify::reference_gemm_counted<int32_format>(s, a, b, opt);
        EXPECT_EQ(sat.overflows, 2u);
        EXPECT_EQ(sat.partial_overflows, 1u);
        EXPECT_EQ(sat.c[0], std::numeric_limits<std::int64_t>::max());
        // Preserved, the four steps are one sum: 2^62, then -2^63 (step 2 wraps), -2^62, 0.
        opt.policy = k_policy::preserve;
        opt.overflow = overflow_mode::wrap;
        auto kept = systolic::verify::reference_gemm_counted<int32_format>(s, a, b, opt);
        EXPECT_EQ(kept.overflows, 1u);
        EXPECT_EQ(kept.partial_overflows, 0u);
        EXPECT_EQ(kept.c[0], 0);
    }
}

// ---- NaN

TEST(ReferenceNaN, EveryNaNInCIsCanonical) {
    const float nans[] = {float_of(0x7fc00000u), float_of(0xffc00000u), float_of(0x7f800001u),
                          float_of(0x7fc12345u), float_of(0xff812345u)};
    for (float n : nans) {
        const problem_shape s{1, 2, 2};
        const std::vector<float> a = {n, 1.0f};
        const std::vector<float> b = {1.0f, 2.0f, 3.0f, 4.0f};
        const auto c = systolic::verify::reference_gemm<fp32_format>(s, a, b);
        EXPECT_EQ(bits_of(c[0]), 0x7fc00000u) << std::hex << bits_of(n);
        EXPECT_EQ(bits_of(c[1]), 0x7fc00000u) << std::hex << bits_of(n);
    }
    // inf - inf, and a bf16 NaN.
    const auto c =
        systolic::verify::reference_gemm<fp32_format>({1, 2, 1}, {INFINITY, -INFINITY}, {1.0f, 1.0f});
    EXPECT_EQ(bits_of(c[0]), 0x7fc00000u);
    const auto h = systolic::verify::reference_gemm<bf16_format>({1, 1, 1}, {bf16{0xffc1}}, {bf16{0x3f80}});
    EXPECT_EQ(bits_of(h[0]), 0x7fc00000u);
}

TEST(ReferencePartials, PerPartialRoundingFollowsTheConversionRules) {
    quantization q;
    q.enabled = true;
    q.per_partial = true;
    q.scale = 1e30;
    reference_options opt;
    opt.k_tile = 1;
    opt.policy = k_policy::partials;
    opt.quant = q;
    // fp32: each partial times 1e30 rounds past FLT_MAX: +inf, then inf + inf.
    const auto f = systolic::verify::reference_gemm<fp32_format>({1, 2, 1}, {1e9f, 1e9f}, {1.0f, 1.0f}, opt);
    EXPECT_EQ(f[0], INFINITY);
    // int32 operands: each partial scaled to far past 2^63 saturates to the int64 maximum; adding
    // the two overflows once.
    auto i = systolic::verify::reference_gemm_counted<int32_format>({1, 2, 1}, {1000, 1000}, {1, 1}, opt);
    EXPECT_EQ(i.c[0], -2);  // (2^63 - 1) + (2^63 - 1) = 2^64 - 2, wrapped
    EXPECT_EQ(i.partial_overflows, 1u);
}

// ---- The reference in parts, shared by threads as a job's check shares it

// Parts taken from one counter by two threads, in whatever order they get them, give the C and the
// counts that one thread running them in turn gives: shapes of several parts each way, K split
// into partials, and integer operands at their extremes, so that int32's steps overflow.
template <class Format>
void parts_on_two_threads(std::uint64_t seed) {
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    using parts_t = systolic::verify::reference_parts<Format>;
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 4; ++trial) {
        const problem_shape s{parts_t::part_rows + 1 + rng() % (2 * parts_t::part_rows), 1 + rng() % 300,
                              257 + rng() % 500};  // over one part's rows and one panel's 256 columns
        auto pr = systolic::verify::random_problem<Format>(s, rng());
        if constexpr (Format::is_integer) {
            for (auto* v : {&pr.a, &pr.b})
                for (auto& x : *v)
                    if (rng() % 2 == 0) x = std::numeric_limits<op_t>::max();
        }
        reference_options opt;
        opt.k_tile = 1 + rng() % 64;
        opt.policy = k_policy::partials;
        const auto want = systolic::verify::reference_gemm_counted<Format>(s, pr.a, pr.b, opt);
        parts_t parts(s, pr.a, pr.b, opt);
        std::atomic<std::size_t> next{0};
        auto take = [&] {
            for (std::size_t i; (i = next.fetch_add(1)) < parts.size();)
                parts.run(parts.size() - 1 - i);  // from the last part back
        };
        std::thread other(take);
        take();
        other.join();
        const auto got = parts.take();
        const std::string what = std::string(Format::name) + " trial " + std::to_string(trial);
        EXPECT_GT(parts.size(), 1u) << what;
        EXPECT_EQ(got.overflows, want.overflows) << what;
        EXPECT_EQ(got.partial_overflows, want.partial_overflows) << what;
        ASSERT_EQ(got.c.size(), want.c.size()) << what;
        EXPECT_EQ(std::memcmp(got.c.data(), want.c.data(), got.c.size() * sizeof(acc_t)), 0) << what;
        if constexpr (std::is_same_v<Format, int32_format>) {  // int8 would need K past 130,000
            EXPECT_GT(want.overflows + want.partial_overflows, 0u) << what;
        }
    }
}

TEST(ReferenceParts, TwoThreadsGiveWhatOneGives) {
    systolic::for_each_format([](auto format) {
        using Format = decltype(format);
        parts_on_two_threads<Format>(11 + systolic::test::format_index<Format>);
    });
}

// ---- Against the model's arithmetic (gemm_accumulate, which uses Format::mac)

template <class Format>
void cross_check(std::uint64_t seed, bool extremes) {
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 12; ++trial) {
        const problem_shape s{1 + rng() % 40, 1 + rng() % 600, 1 + rng() % 300};
        auto pr = systolic::verify::random_problem<Format>(s, rng());
        if (extremes) {
            for (auto* v : {&pr.a, &pr.b})
                for (auto& x : *v)
                    if (rng() % 3 == 0)
                        x = (rng() & 1) ? std::numeric_limits<op_t>::max() : std::numeric_limits<op_t>::min();
        }
        for (auto mode : {overflow_mode::wrap, overflow_mode::saturate}) {
            reference_options opt;
            opt.overflow = mode;
            const auto want = systolic::verify::reference_gemm_counted<Format>(s, pr.a, pr.b, opt);
            std::vector<acc_t> c(s.m * s.p);
            const std::uint64_t count = systolic::gemm_accumulate<Format>(
                s.m, s.p, s.k, pr.a.data(), s.k, pr.b.data(), s.p, c.data(), s.p, mode);
            const std::string what = std::string(Format::name) + " trial " + std::to_string(trial) +
                                     (mode == overflow_mode::wrap ? " wrap" : " saturate");
            EXPECT_EQ(count, want.overflows) << what;
            EXPECT_EQ(std::memcmp(c.data(), want.c.data(), c.size() * sizeof(acc_t)), 0) << what;
        }
    }
}

template <class Format>
class ReferenceCrossCheckOf : public ::testing::Test {};
TYPED_TEST_SUITE(ReferenceCrossCheckOf, systolic::test::format_types, systolic::test::format_name);

TYPED_TEST(ReferenceCrossCheckOf, AgreesWithTheModel) {
    cross_check<TypeParam>(systolic::test::format_index<TypeParam> + 1, false);
}
TEST(ReferenceCrossCheck, Int32OverflowCountsAgreeWithTheModel) {
    cross_check<int32_format>(6, true);
}

// int8 near its bound: a long K with the type's extremes, so that some blocks overflow.
TEST(ReferenceCrossCheck, Int8OverflowCountsAgreeWithTheModel) {
    std::mt19937_64 rng(6);
    const problem_shape s{3, 200000, 20};
    std::vector<std::int8_t> a(s.m * s.k), b(s.k * s.p);
    for (auto& x : a)
        x = (rng() % 16) ? 127 : -128;
    for (auto& x : b)
        x = (rng() % 8) ? 127 : static_cast<std::int8_t>(rng() % 256 - 128);
    for (auto mode : {overflow_mode::wrap, overflow_mode::saturate}) {
        reference_options opt;
        opt.overflow = mode;
        const auto want = systolic::verify::reference_gemm_counted<int8_format>(s, a, b, opt);
        std::vector<std::int32_t> c(s.m * s.p);
        const std::uint64_t count = systolic::gemm_accumulate<int8_format>(
            s.m, s.p, s.k, a.data(), s.k, b.data(), s.p, c.data(), s.p, mode);
        EXPECT_GT(want.overflows, 0u);
        EXPECT_EQ(count, want.overflows);
        EXPECT_EQ(c, want.c);
    }
}

}  // namespace
