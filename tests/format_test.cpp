// Number formats through the whole model: int8 (int32 accumulators), int32 (int64), fp32, and
// bf16 (fp32 accumulation). The scoreboard compares C bit for bit with a reference that
// accumulates in the same order with the same rule; here we also check values worked out by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench_set.h"
#include "format_types.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        for_each_format([](auto format) { bench_set<decltype(format)>::build({2, 4}); });
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

template <class Format>
void seed_example_in() {
    using acc_t = typename Format::accumulator_type;
    const auto out = bench_set<Format>::get(2).run(seed_example<Format>());
    expect_pass(out);
    EXPECT_EQ(out.template c_as<acc_t>(), (std::vector<acc_t>{7, 2, 5, 16, 5, 14, 25, 8, 23}))
        << Format::name;
}

// Every format of the model's list (format_types.h).
template <class Format>
class EveryFormat : public ::testing::Test {};
TYPED_TEST_SUITE(EveryFormat, systolic::test::format_types, systolic::test::format_name);

TYPED_TEST(EveryFormat, SeedExample) {
    seed_example_in<TypeParam>();
}

template <class Format>
void random_shapes(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 10; ++i) {
        const problem_shape s{1 + rng() % 11, 1 + rng() % 30, 1 + rng() % 11};
        job_options opt;
        opt.run.order = static_cast<tile_order>(rng() % 4);
        const std::size_t n = rng() % 2 ? 2 : 4;
        const auto out = bench_set<Format>::get(n).run(random_problem<Format>(s, rng()), opt);
        SCOPED_TRACE(std::string(Format::name) + " N=" + std::to_string(n) + " M=" + std::to_string(s.m) +
                     " K=" + std::to_string(s.k) + " P=" + std::to_string(s.p));
        expect_pass(out);
    }
}

// Bit-exact for the float formats too: the scoreboard's reference accumulates in the same order.
TYPED_TEST(EveryFormat, RandomShapes) {
    random_shapes<TypeParam>(1 + systolic::test::format_index<TypeParam>);
}

// Product rounded, then added: with a = b = 1 + 2^-12 the exact product 1 + 2^-11 + 2^-24 lies
// exactly half an ulp above 1 + 2^-11 and rounds to it (even); adding it to -1 leaves 2^-11. A
// fused multiply-add would keep the 2^-24 and give 2^-11 + 2^-24.
TEST(Formats, Fp32RoundsTheProductBeforeAdding) {
    const double x = 1 + std::ldexp(1.0, -12);
    const auto pr = make_problem<fp32_format>({1, 2, 1}, {1, x}, {-1, x});
    const auto out = bench_set<fp32_format>::get(2).run(pr);
    expect_pass(out);
    EXPECT_EQ(out.c_as<float>(), std::vector<float>{std::ldexp(1.0f, -11)});
}

// bf16 keeps 7 fraction bits: 1 + 2^-8 is halfway between 1 and 1 + 2^-7 and rounds to 1 (even),
// 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6 and rounds to 1 + 2^-6 (even).
TEST(Formats, Bf16OperandsAreRoundedToNearestEven) {
    const auto pr =
        make_problem<bf16_format>({1, 2, 1}, {1 + std::ldexp(1.0, -8), 1 + 3 * std::ldexp(1.0, -8)}, {1, 1});
    EXPECT_EQ(pr.a[0].to_float(), 1.0f);
    EXPECT_EQ(pr.a[1].to_float(), 1.0f + std::ldexp(1.0f, -6));
    const auto out = bench_set<bf16_format>::get(2).run(pr);
    expect_pass(out);
    EXPECT_EQ(out.c_as<float>(), std::vector<float>{2.0f + std::ldexp(1.0f, -6)});
}

// Saturating int8 accumulation: 127 * 127 = 16129 per term; with K = 3 the sums stay far inside
// int32, so saturate and wrap agree and nothing is counted.
TEST(Formats, Int8ExtremesStayExact) {
    const auto pr = make_problem<int8_format>({2, 3, 1}, {127, 127, 127, -128, -128, -128}, {127, -128, 127});
    job_options opt;
    opt.run.overflow = overflow_mode::saturate;
    const auto out = bench_set<int8_format>::get(2).run(pr, opt);
    expect_pass(out);
    EXPECT_EQ(out.c_as<std::int32_t>(),
              (std::vector<std::int32_t>{127 * 127 * 2 - 127 * 128, -128 * 127 * 2 + 128 * 128}));
    EXPECT_EQ(out.result.overflows, 0u);
}

}  // namespace
