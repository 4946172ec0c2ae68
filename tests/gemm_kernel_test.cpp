// gemm_accumulate against two independent ways of getting the same numbers:
//  - a scalar loop that applies Format::mac output by output in k order and counts overflows
//    one step at a time (the contract, written as plainly as possible);
//  - array_core itself, fed the skewed token streams the controller feeds (row i of A i edges
//    late, column j of B j edges late, K + 2(N-1) edges), on small cases.
// Every format, both overflow modes, shapes that are not multiples of any vector width, strides
// wider than the block, accumulators that continue a sum, counts on both sides of the no-overflow
// bound, and NaN / infinity / subnormal / signed-zero floats. Floats compare bit for bit, except
// that any NaN matches any NaN (payloads depend on operand order inside the add).
// CTest runs this executable three times: on the machine's best path, with SYSTOLIC_ISA=avx2
// (the path of machines without AVX-512) and with SYSTOLIC_ISA=generic (the portable loops).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "format_types.h"
#include "systolic/array_core.h"
#include "systolic/gemm_kernel.h"
#include "systolic/number_format.h"

namespace {

using systolic::array_core;
using systolic::bf16;
using systolic::bf16_format;
using systolic::fp32_format;
using systolic::gemm_accumulate;
using systolic::int32_format;
using systolic::int8_format;
using systolic::overflow_mode;

// A block of C inside a wider buffer: the kernel must write the rows x cols block and nothing else.
template <class Format>
struct gemm_case {
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    std::size_t rows = 0, cols = 0, kc = 0;
    std::size_t lda = 0, ldb = 0, ldc = 0;
    std::vector<op_t> a, b;
    std::vector<acc_t> c;  // ldc x (rows + 1): one guard row below, guard columns on the right
};

template <class Format>
typename Format::operand_type random_operand(std::mt19937_64& rng, bool extremes = true) {
    using op_t = typename Format::operand_type;
    if constexpr (Format::is_integer) {
        // Mostly small values, sometimes (unless told not to) the type's extremes.
        const std::uint64_t r = rng();
        if (extremes && r % 8 == 0)
            return (r & 8) ? std::numeric_limits<op_t>::max() : std::numeric_limits<op_t>::min();
        const std::int64_t range = sizeof(op_t) == 1 ? 127 : 1000000;
        return static_cast<op_t>(static_cast<std::int64_t>(rng() % std::uint64_t(2 * range + 1)) - range);
    } else {
        std::uniform_real_distribution<float> u(-2.0f, 2.0f);
        return systolic::value_from<op_t>(u(rng));
    }
}

template <class Format>
typename Format::accumulator_type random_accumulator(std::mt19937_64& rng) {
    using acc_t = typename Format::accumulator_type;
    if constexpr (Format::is_integer) {
        return static_cast<acc_t>(static_cast<std::int64_t>(rng() % 2000001) - 1000000);
    } else {
        std::uniform_real_distribution<float> u(-8.0f, 8.0f);
        return u(rng);
    }
}

template <class Format>
gemm_case<Format> make_case(std::size_t rows, std::size_t cols, std::size_t kc, std::mt19937_64& rng,
                            std::size_t pad = 0, bool extremes = true) {
    gemm_case<Format> g;
    g.rows = rows;
    g.cols = cols;
    g.kc = kc;
    g.lda = kc + pad;
    g.ldb = cols + pad;
    g.ldc = cols + pad + 3;
    g.a.resize(rows * g.lda);
    g.b.resize(kc * g.ldb);
    g.c.resize((rows + 1) * g.ldc);
    for (auto& v : g.a)
        v = random_operand<Format>(rng, extremes);
    for (auto& v : g.b)
        v = random_operand<Format>(rng, extremes);
    for (auto& v : g.c)
        v = random_accumulator<Format>(rng);
    return g;
}

// The contract, plainly: each output in k order through Format::mac, one count per overflowing step.
template <class Format>
std::uint64_t scalar_accumulate(gemm_case<Format>& g, overflow_mode mode) {
    std::uint64_t count = 0;
    for (std::size_t i = 0; i < g.rows; ++i) {
        for (std::size_t j = 0; j < g.cols; ++j) {
            auto acc = g.c[i * g.ldc + j];
            for (std::size_t k = 0; k < g.kc; ++k) {
                bool overflowed = false;
                acc = systolic::mac<Format>(mode, acc, g.a[i * g.lda + k], g.b[k * g.ldb + j], overflowed);
                count += overflowed;
            }
            g.c[i * g.ldc + j] = acc;
        }
    }
    return count;
}

template <class Format>
std::uint64_t kernel_accumulate(gemm_case<Format>& g, overflow_mode mode) {
    return gemm_accumulate<Format>(g.rows, g.cols, g.kc, g.a.data(), g.lda, g.b.data(), g.ldb, g.c.data(),
                                   g.ldc, mode);
}

template <class T>
bool same_value(T x, T y) {
    if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
        std::uint32_t ux, uy;
        std::memcpy(&ux, &x, sizeof ux);
        std::memcpy(&uy, &y, sizeof uy);
        return ux == uy;
    } else {
        return x == y;
    }
}

// Every element of the buffers (so the guards too) equal, or the first difference.
template <class T>
::testing::AssertionResult same_buffers(const std::vector<T>& got, const std::vector<T>& want,
                                        std::size_t ld) {
    if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
    for (std::size_t e = 0; e < got.size(); ++e) {
        if (!same_value(got[e], want[e]))
            return ::testing::AssertionFailure() << "first difference at row " << e / ld << ", column "
                                                 << e % ld << ": got " << +got[e] << ", want " << +want[e];
    }
    return ::testing::AssertionSuccess();
}

template <class Format>
void expect_kernel_matches_scalar(gemm_case<Format> g, overflow_mode mode, const std::string& what) {
    auto want = g;
    const std::uint64_t want_count = scalar_accumulate(want, mode);
    const std::uint64_t got_count = kernel_accumulate(g, mode);
    EXPECT_TRUE(same_buffers(g.c, want.c, g.ldc)) << what;
    EXPECT_EQ(got_count, want_count) << what;
}

const overflow_mode kModes[] = {overflow_mode::wrap, overflow_mode::saturate};

std::string label(const char* format, std::size_t r, std::size_t c, std::size_t k, overflow_mode m) {
    return std::string(format) + " " + std::to_string(r) + "x" + std::to_string(c) +
           " kc=" + std::to_string(k) + (m == overflow_mode::wrap ? " wrap" : " saturate");
}

// Shapes around every vector width and block size the kernels use (8 rows; 8, 16, 32, 64 columns;
// k blocks of 256 and 1024, VNNI quads of 4).
struct shape {
    std::size_t rows, cols, kc;
};
const shape kShapes[] = {{1, 1, 1},     {1, 1, 5},      {1, 17, 3},    {3, 1, 9},      {2, 3, 1},
                         {7, 15, 4},    {8, 16, 8},     {8, 32, 13},   {9, 33, 31},    {16, 64, 64},
                         {17, 65, 257}, {5, 100, 1027}, {24, 40, 300}, {13, 47, 130},  {33, 31, 6},
                         {64, 48, 520}, {1, 128, 2},    {128, 1, 7},   {11, 129, 258}, {40, 96, 1029}};

template <class Format>
void random_shapes_match_scalar(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (const auto& s : kShapes) {
        for (auto mode : kModes) {
            for (std::size_t pad : {std::size_t{0}, std::size_t{5}}) {
                // Without extremes the integer bound holds (the fast path); with them int32 takes
                // the exact path.
                auto g = make_case<Format>(s.rows, s.cols, s.kc, rng, pad, pad == 0);
                expect_kernel_matches_scalar(g, mode, label(Format::name, s.rows, s.cols, s.kc, mode));
            }
        }
    }
}

template <class Format>
class GemmKernelOf : public ::testing::Test {};
TYPED_TEST_SUITE(GemmKernelOf, systolic::test::format_types, systolic::test::format_name);

TYPED_TEST(GemmKernelOf, RandomShapesMatchScalar) {
    random_shapes_match_scalar<TypeParam>(systolic::test::format_index<TypeParam> + 1);
}

// int32 operands up to 2^24: sums pass 2^53 (so not exact in double) but stay far inside int64,
// which is the int64 lane path; the shapes above (operands up to 10^6) stay within 2^53.
TEST(GemmKernel, Int32WideOperandsMatchScalar) {
    std::mt19937_64 rng(5);
    for (const auto& s : kShapes) {
        auto g = make_case<int32_format>(s.rows, s.cols, s.kc, rng, 2, false);
        for (auto* v : {&g.a, &g.b})
            for (auto& x : *v)
                x = static_cast<std::int32_t>(static_cast<std::int64_t>(rng() % (1u << 25)) - (1 << 24));
        for (auto mode : kModes)
            expect_kernel_matches_scalar(g, mode, label("int32 wide", s.rows, s.cols, s.kc, mode));
    }
}

TEST(GemmKernel, EmptyShapesChangeNothing) {
    std::vector<float> a(4, 1.0f), b(4, 1.0f), c(4, 3.0f);
    EXPECT_EQ(
        gemm_accumulate<fp32_format>(0, 2, 2, a.data(), 2, b.data(), 2, c.data(), 2, overflow_mode::wrap),
        0u);
    EXPECT_EQ(
        gemm_accumulate<fp32_format>(2, 0, 2, a.data(), 2, b.data(), 2, c.data(), 2, overflow_mode::wrap),
        0u);
    EXPECT_EQ(
        gemm_accumulate<fp32_format>(2, 2, 0, a.data(), 2, b.data(), 2, c.data(), 2, overflow_mode::wrap),
        0u);
    for (float v : c)
        EXPECT_EQ(v, 3.0f);
}

// ---- Against the array itself

// Runs one chunk through the array as the controller feeds it: valid tokens only inside the
// skewed streams, valid zeros for rows and columns beyond the real block.
template <class Format>
void step_array(array_core<Format>& core, const gemm_case<Format>& g) {
    using op_t = typename Format::operand_type;
    const std::size_t n = core.rows();  // square here
    const std::size_t edges = g.kc + 2 * (n - 1);
    std::vector<op_t> west(n), north(n);
    std::vector<std::uint8_t> west_ok(n), north_ok(n);
    for (std::size_t e = 0; e < edges; ++e) {
        for (std::size_t i = 0; i < n; ++i) {
            west_ok[i] = e >= i && e - i < g.kc;
            west[i] = west_ok[i] && i < g.rows ? g.a[i * g.lda + (e - i)] : op_t{};
        }
        for (std::size_t j = 0; j < n; ++j) {
            north_ok[j] = e >= j && e - j < g.kc;
            north[j] = north_ok[j] && j < g.cols ? g.b[(e - j) * g.ldb + j] : op_t{};
        }
        core.advance(west.data(), west_ok.data(), north.data(), north_ok.data());
    }
}

// Two chunks on the array without a clear between them (the preserve policy), against two kernel
// calls on a C that starts at zero: the second call continues the first one's sums.
template <class Format>
void two_chunks_match_array(std::uint64_t seed, std::size_t n, std::size_t rows, std::size_t cols,
                            std::size_t k1, std::size_t k2, overflow_mode mode, bool extremes) {
    using acc_t = typename Format::accumulator_type;
    using op_t = typename Format::operand_type;
    std::mt19937_64 rng(seed);
    auto first = make_case<Format>(rows, cols, k1, rng);
    auto second = make_case<Format>(rows, cols, k2, rng);
    if (extremes) {  // push the int32 sums across the int64 range, so that steps do overflow
        for (auto* g : {&first, &second}) {
            for (auto& v : g->a)
                v = (rng() & 1) ? std::numeric_limits<op_t>::min() : std::numeric_limits<op_t>::max();
            for (auto& v : g->b)
                v = (rng() & 3) ? std::numeric_limits<op_t>::min() : std::numeric_limits<op_t>::max();
        }
    }
    std::fill(first.c.begin(), first.c.end(), acc_t{});

    array_core<Format> core(n);
    core.set_overflow(mode);
    step_array(core, first);
    step_array(core, second);

    std::uint64_t count = kernel_accumulate(first, mode);
    second.c = first.c;
    count += kernel_accumulate(second, mode);

    const std::string what = label(Format::name, rows, cols, k1 + k2, mode) + " on N=" + std::to_string(n);
    ASSERT_TRUE(core.complete(k1 + k2)) << what;
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            ASSERT_TRUE(same_value(second.c[i * second.ldc + j], core.accumulator(i, j)))
                << what << " PE(" << i << "," << j << "): kernel " << +second.c[i * second.ldc + j]
                << ", array " << +core.accumulator(i, j);
    EXPECT_EQ(count, core.overflows_in(rows, cols)) << what;
}

template <class Format>
void small_cases_match_array(std::uint64_t seed, bool extremes = false) {
    const struct {
        std::size_t n, rows, cols, k1, k2;
    } cases[] = {{1, 1, 1, 1, 1},      {3, 2, 3, 4, 1},    {5, 5, 5, 9, 8},      {8, 7, 8, 16, 3},
                 {17, 17, 13, 40, 33}, {20, 9, 20, 70, 5}, {33, 33, 33, 12, 300}};
    std::uint64_t s = seed;
    for (const auto& c : cases)
        for (auto mode : kModes)
            two_chunks_match_array<Format>(++s, c.n, c.rows, c.cols, c.k1, c.k2, mode, extremes);
}

TYPED_TEST(GemmKernelOf, MatchesArray) {
    small_cases_match_array<TypeParam>(10 * (systolic::test::format_index<TypeParam> + 1));
}
TEST(GemmKernel, Int32OverflowingSumsMatchArray) {
    small_cases_match_array<int32_format>(60, true);
}

// ---- Overflow counts on both sides of the bound

// c starts at `start` everywhere and every product is p = a * b; the sum c + kc * p either just
// fits or passes the end of the range on the last step.
template <class Format>
void bound_case(typename Format::accumulator_type start, typename Format::operand_type a,
                typename Format::operand_type b, std::size_t rows, std::size_t cols, std::size_t kc,
                std::uint64_t overflows_per_output_wrap, std::uint64_t overflows_per_output_saturate) {
    gemm_case<Format> g;
    g.rows = rows;
    g.cols = cols;
    g.kc = kc;
    g.lda = kc;
    g.ldb = cols;
    g.ldc = cols;
    g.a.assign(rows * kc, a);
    g.b.assign(kc * cols, b);
    g.c.assign((rows + 1) * cols, start);
    for (auto mode : kModes) {
        const std::string what =
            label(Format::name, rows, cols, kc, mode) + " start " + std::to_string(start);
        expect_kernel_matches_scalar(g, mode, what);
        auto h = g;
        const std::uint64_t per_output =
            mode == overflow_mode::wrap ? overflows_per_output_wrap : overflows_per_output_saturate;
        EXPECT_EQ(kernel_accumulate(h, mode), per_output * rows * cols) << what;
    }
}

TEST(GemmKernel, Int8CountsAtTheBound) {
    constexpr std::int32_t max = std::numeric_limits<std::int32_t>::max();
    constexpr std::int32_t min = std::numeric_limits<std::int32_t>::min();
    const std::size_t kc = 1000;
    const std::int32_t span = 127 * 127 * 1000;
    // Exactly reaches max: no step overflows (the bound holds with equality: the fast path).
    bound_case<int8_format>(max - span, 127, 127, 9, 35, kc, 0, 0);
    // One more: the last step overflows. Saturating, it stays at max: one overflow too.
    bound_case<int8_format>(max - span + 1, 127, 127, 9, 35, kc, 1, 1);
    // Downwards: -127 x 127 from min + span lands on min exactly; one lower overflows once.
    bound_case<int8_format>(min + span, -127, 127, 9, 35, kc, 0, 0);
    bound_case<int8_format>(min + span - 1, -127, 127, 9, 35, kc, 1, 1);
    // From max, every step of +16384 (-128 x -128) overflows while saturating; wrapping, the sum
    // goes round the 2^32 ring once every 262144 steps: once here, on the first step.
    bound_case<int8_format>(max, -128, -128, 3, 17, 40, 1, 40);
    // c = min: the magnitude 2^31 alone is outside the bound; nothing overflows going up.
    bound_case<int8_format>(min, 127, 127, 2, 33, 64, 0, 0);
    // kc = 1 right at the edge.
    bound_case<int8_format>(max - 16129, 127, 127, 1, 1, 1, 0, 0);
    bound_case<int8_format>(max - 16128, 127, 127, 1, 1, 1, 1, 1);
}

TEST(GemmKernel, Int32CountsAtTheBound) {
    constexpr std::int64_t max = std::numeric_limits<std::int64_t>::max();
    const std::int64_t p = std::int64_t{1} << 40;  // 2^20 x 2^20
    bound_case<int32_format>(max - 64 * p, 1 << 20, 1 << 20, 5, 19, 64, 0, 0);
    bound_case<int32_format>(max - 64 * p + 1, 1 << 20, 1 << 20, 5, 19, 64, 1, 1);
    // Products of 2^62 from zero: the sum passes 2^63 on the second step, wraps to -2^63, and
    // comes back up: wrapping, steps 2, 6, 10, ... overflow (every fourth); saturating, every step
    // from the second.
    bound_case<int32_format>(0, std::numeric_limits<std::int32_t>::min(),
                             std::numeric_limits<std::int32_t>::min(), 3, 9, 10, 3, 9);
}

// Random cases whose sums cross the range now and then: operands of the type's extremes, c near
// either end.
template <class Format>
void random_near_bound(std::uint64_t seed) {
    using acc_t = typename Format::accumulator_type;
    std::mt19937_64 rng(seed);
    for (int trial = 0; trial < 40; ++trial) {
        const std::size_t rows = 1 + rng() % 20, cols = 1 + rng() % 70, kc = 1 + rng() % 300;
        auto g = make_case<Format>(rows, cols, kc, rng, rng() % 3);
        const acc_t edge =
            (rng() & 1) ? std::numeric_limits<acc_t>::max() : std::numeric_limits<acc_t>::min();
        for (auto& v : g.c)
            v = static_cast<acc_t>(edge - (edge > 0 ? 1 : -1) * static_cast<acc_t>(rng() % 5000000));
        for (auto mode : kModes)
            expect_kernel_matches_scalar(
                g, mode, "trial " + std::to_string(trial) + " " + label(Format::name, rows, cols, kc, mode));
    }
}

TEST(GemmKernel, Int8RandomNearTheBound) {
    random_near_bound<int8_format>(60);
}
TEST(GemmKernel, Int32RandomNearTheBound) {
    random_near_bound<int32_format>(70);
}

// ---- Special floats

template <class Format>
typename Format::operand_type special_operand(std::mt19937_64& rng) {
    const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                              -std::numeric_limits<float>::quiet_NaN(),
                              std::numeric_limits<float>::infinity(),
                              -std::numeric_limits<float>::infinity(),
                              std::numeric_limits<float>::denorm_min(),
                              -1e-40f,
                              std::numeric_limits<float>::min(),
                              0.0f,
                              -0.0f,
                              std::numeric_limits<float>::max(),
                              -3e38f,
                              1e-20f};
    const std::uint64_t r = rng();
    if (r % 4 == 0) return systolic::value_from<typename Format::operand_type>(specials[(r >> 8) % 12]);
    return random_operand<Format>(rng);
}

template <class Format>
void special_floats(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (const auto& s : kShapes) {
        auto g = make_case<Format>(s.rows, s.cols, s.kc, rng, 1);
        for (auto& v : g.a)
            v = special_operand<Format>(rng);
        for (auto& v : g.b)
            v = special_operand<Format>(rng);
        g.c[0] = std::numeric_limits<float>::infinity();
        if (g.c.size() > 2) g.c[2] = std::numeric_limits<float>::denorm_min();
        expect_kernel_matches_scalar(g, overflow_mode::wrap,
                                     label(Format::name, s.rows, s.cols, s.kc, overflow_mode::wrap));
    }
}

TEST(GemmKernel, Fp32SpecialValuesMatchScalar) {
    special_floats<fp32_format>(80);
}
TEST(GemmKernel, Bf16SpecialValuesMatchScalar) {
    special_floats<bf16_format>(90);
}

// Products that round: a fused multiply-add would give a different sum here.
TEST(GemmKernel, Fp32ProductIsRoundedBeforeTheAdd) {
    // (1 + 2^-12)^2 = 1 + 2^-11 + 2^-24; rounded to float the 2^-24 is lost (a tie, to even), and
    // adding -(1 + 2^-11) gives 0. Fused, the result would be 2^-24.
    const float x = 1.0f + 0x1.0p-12f;
    std::vector<float> a(1, x), b(1, x), c(1, -(1.0f + 0x1.0p-11f));
    gemm_accumulate<fp32_format>(1, 1, 1, a.data(), 1, b.data(), 1, c.data(), 1, overflow_mode::wrap);
    EXPECT_EQ(c[0], 0.0f);
    // Same on a wide block, so the vector kernel sees it too.
    const std::size_t rows = 9, cols = 40;
    std::vector<float> aa(rows, x), bb(cols, x), cc(rows * cols, -(1.0f + 0x1.0p-11f));
    gemm_accumulate<fp32_format>(rows, cols, 1, aa.data(), 1, bb.data(), cols, cc.data(), cols,
                                 overflow_mode::wrap);
    for (float v : cc)
        EXPECT_EQ(v, 0.0f);
}

TEST(GemmKernel, Bf16WithOperandsOnlyBf16Precision) {
    // The kernel must use the bf16 values, not anything wider: 1 + 2^-8 is not a bf16 (rounds to 1).
    const bf16 one_ish = bf16::from_float(1.0f + 0x1.0p-8f);
    std::vector<bf16> a(1, one_ish), b(1, one_ish);
    std::vector<float> c(1, 0.0f);
    gemm_accumulate<bf16_format>(1, 1, 1, a.data(), 1, b.data(), 1, c.data(), 1, overflow_mode::wrap);
    EXPECT_EQ(c[0], 1.0f);
}

// Where the bf16 kernel may fuse (every product exact in float) and where it must not: these two
// blocks give different bits with a fused multiply-add.
TEST(GemmKernel, Bf16FusesOnlyWhereProductsAreExact) {
    const std::size_t rows = 9, cols = 33;
    auto block = [&](float a_value, float b_value, float c_value) {
        std::vector<bf16> a(rows, bf16::from_float(a_value)), b(cols, bf16::from_float(b_value));
        std::vector<float> c(rows * cols, c_value);
        gemm_accumulate<bf16_format>(rows, cols, 1, a.data(), 1, b.data(), cols, c.data(), cols,
                                     overflow_mode::wrap);
        return c;
    };
    // 2^-75 x 2^-75 = 2^-150, half the smallest subnormal: rounded alone it ties to 0, and
    // 0 + 2^-149 = 2^-149. Fused, 1.5 x 2^-149 would tie to 2^-148.
    const float tiny = std::numeric_limits<float>::denorm_min();
    for (float v : block(0x1p-75f, 0x1p-75f, tiny))
        ASSERT_EQ(v, tiny);
    // 2^100 x 2^100 overflows to infinity, and inf + -inf is NaN. Fused, the exact 2^200 plus -inf
    // would be -inf.
    for (float v : block(0x1p100f, 0x1p100f, -std::numeric_limits<float>::infinity()))
        ASSERT_TRUE(std::isnan(v));
    // Ordinary values, exact products: same as the scalar rule (here exact anyway).
    for (float v : block(1.5f, -2.25f, 1.0f))
        ASSERT_EQ(v, 1.0f - 3.375f);
}

// Random bf16 blocks with exponent fields on either side of the fusing bounds (sums of 127/128
// and 379/380), random significands and signs, and accumulators of the products' size: the
// kernel, fused or not, must still match the scalar rule.
TEST(GemmKernel, Bf16RandomNearTheFusingBounds) {
    std::mt19937_64 rng(100);
    const struct {
        unsigned ea, eb;
        float c_scale;
    } bounds[] = {{64, 64, 0x1p-125f},  {64, 63, 0x1p-126f},  {50, 52, 0x1p-147f},
                  {190, 189, 0x1p126f}, {190, 190, 0x1p127f}, {127, 127, 1.0f}};
    for (const auto& bd : bounds) {
        const std::size_t rows = 11, cols = 37, kc = 300;
        gemm_case<bf16_format> g = make_case<bf16_format>(rows, cols, kc, rng);
        auto draw = [&](unsigned exponent) {
            const auto sign = static_cast<std::uint16_t>((rng() & 1) << 15);
            return bf16{static_cast<std::uint16_t>(sign | (exponent << 7) | (rng() & 0x7f))};
        };
        for (auto& v : g.a)
            v = draw(bd.ea);
        for (auto& v : g.b)
            v = draw(bd.eb);
        std::uniform_real_distribution<float> u(-4.0f, 4.0f);
        for (auto& v : g.c)
            v = u(rng) * bd.c_scale;
        expect_kernel_matches_scalar(g, overflow_mode::wrap,
                                     "exponents " + std::to_string(bd.ea) + " + " + std::to_string(bd.eb));
    }
}

TEST(GemmKernel, ReportsItsPath) {
    const std::string isa = systolic::gemm_kernel_isa();
    EXPECT_TRUE(isa == "avx512" || isa == "avx2" || isa == "generic") << isa;
    const char* forced = std::getenv("SYSTOLIC_ISA");
    if (forced != nullptr && std::string(forced) == "generic") {
        EXPECT_EQ(isa, "generic");
    }
    if (forced != nullptr && std::string(forced) == "avx2") {
        EXPECT_NE(isa, "avx512");
    }
}

}  // namespace
