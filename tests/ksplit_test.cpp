// K-splitting (seeds 001/003, last section; seed 000's 2x2-block example) and quantized output,
// run through the whole SystemC model and checked by the scoreboard.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "bench_set.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

namespace {

using namespace systolic;
using namespace systolic::verify;
using acc64 = std::int64_t;

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<int32_format>::build({1, 2, 3, 4});
        bench_set<int8_format>::build({2, 3});
        bench_set<fp32_format>::build({2, 3});
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

job_options split(std::uint64_t k_tile, k_policy policy) {
    job_options o;
    o.run.k_tile = k_tile;
    o.run.policy = policy;
    return o;
}

// The seeds' element: C(0,0) = 1*1 + 2*0 + 3*2 = 7, split as K = 2 + 1 into partials 1 and 6.
problem<int32_format> seed_element() {
    return make_problem<int32_format>({1, 3, 1}, {1, 2, 3}, {1, 0, 2});
}

TEST(KSplit, SeedElementBothPoliciesGiveSeven) {
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        auto& b = bench_set<int32_format>::get(2);
        const auto out = b.run(seed_element(), split(2, policy));
        expect_pass(out);
        EXPECT_EQ(out.c_as<acc64>(), std::vector<acc64>{7}) << to_string(policy);
        EXPECT_EQ(out.expected.k_chunks, 2u);
    }
}

TEST(KSplit, PartialsPolicyDrainsOneThenSix) {
    auto& b = bench_set<int32_format>::get(2);
    const auto opt = split(2, k_policy::partials);
    const matmul_job job = b.plan_memory({1, 3, 1}, opt);
    ASSERT_TRUE(job.uses_partial_buffer());
    std::vector<acc64> partial_writes;
    auto scoreboard_hook = b.monitor.on_write;
    b.monitor.on_write = [&](const tlm::tlm_generic_payload& t) {
        if (job.partial.covers(t.get_address())) {
            acc64 v;
            std::memcpy(&v, t.get_data_ptr(), sizeof v);
            partial_writes.push_back(v);
        }
        scoreboard_hook(t);
    };
    const auto out = b.run(seed_element(), opt);
    b.monitor.on_write = scoreboard_hook;
    expect_pass(out);
    // Chunk 0 (k = 0, 1) stores its partial 1*1 + 2*0 = 1; chunk 1 (k = 2) starts from a clear,
    // so the array ends holding 3*2 = 6, which the drain adds to the stored 1 and writes as C.
    EXPECT_EQ(partial_writes, std::vector<acc64>{1});
    EXPECT_EQ(b.array().at(0, 0).accumulator(), 6);
    EXPECT_EQ(out.c_as<acc64>(), std::vector<acc64>{7});
    EXPECT_EQ(out.scoreboard.partial_writes, 1u);
}

TEST(KSplit, PreservePolicyKeepsTheAccumulator) {
    auto& b = bench_set<int32_format>::get(2);
    const auto out = b.run(seed_element(), split(2, k_policy::preserve));
    expect_pass(out);
    EXPECT_EQ(b.array().at(0, 0).accumulator(), 7);  // never cleared between the chunks
    EXPECT_EQ(out.scoreboard.partial_writes, 0u);
}

TEST(KSplit, SeedExampleCountsEdgesPerChunk) {
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        const auto out = bench_set<int32_format>::get(2).run(seed_example<int32_format>(), split(2, policy));
        expect_pass(out);
        EXPECT_EQ(out.c_as<acc64>(), (std::vector<acc64>{7, 2, 5, 16, 5, 14, 25, 8, 23}));
        // K = 2 + 1 on N = 2: (2 + 2) + (1 + 2) = 7 edges per tile, 28 for the four tiles.
        EXPECT_EQ(out.result.advance_edges, 28u);
        for (const auto& t : out.result.tiles)
            EXPECT_EQ(t.advance_edges_per_chunk, (std::vector<std::uint64_t>{4, 3}));
        EXPECT_EQ(out.result.macs_padded, 48u);
        EXPECT_EQ(out.result.macs_real, 27u);
    }
}

// Seed 000: a 4x4 product as 2x2 blocks. C00 = A00*B00 + A01*B10 = [[1,3],[4,5]] on N = 2 with
// KT = 2, i.e. exactly one K chunk per block of the reduction.
TEST(KSplit, Seed000BlockExample) {
    // A = [[A00, A01], [A10, A11]] and B = [[B00, B01], [B10, B11]]; the blocks that do not
    // reach C00 are arbitrary.
    const std::vector<double> a = {1, 2, 0, 1,  //
                                   3, 4, 1, 0,  //
                                   5, 6, 7, 8,  //
                                   9, 1, 2, 3};
    const std::vector<double> b = {1, 0, 4, 5,  //
                                   0, 1, 6, 7,  //
                                   1, 1, 8, 9,  //
                                   0, 1, 2, 3};
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        const auto out = bench_set<int32_format>::get(2).run(make_problem<int32_format>({4, 4, 4}, a, b),
                                                             split(2, policy));
        expect_pass(out);
        const auto c = out.c_as<acc64>();
        EXPECT_EQ(c[0 * 4 + 0], 1);
        EXPECT_EQ(c[0 * 4 + 1], 3);
        EXPECT_EQ(c[1 * 4 + 0], 4);
        EXPECT_EQ(c[1 * 4 + 1], 5);
    }
}

template <class Format>
void random_split_shapes(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (int i = 0; i < 12; ++i) {
        const problem_shape s{1 + rng() % 9, 3 + rng() % 20, 1 + rng() % 9};
        std::uint64_t kt = 2 + rng() % (s.k - 1);
        if (s.k % kt == 0) kt = kt > 2 ? kt - 1 : kt + 1;  // K not a multiple of KT
        if (kt >= s.k) kt = s.k - 1;
        const std::size_t n = 2 + rng() % 2;
        for (auto policy : {k_policy::preserve, k_policy::partials}) {
            auto opt = split(kt, policy);
            opt.run.order = static_cast<tile_order>(rng() % 4);
            opt.run.order_seed = rng();
            const auto out = bench_set<Format>::get(n).run(random_problem<Format>(s, rng()), opt);
            SCOPED_TRACE(std::string(Format::name) + " N=" + std::to_string(n) + " M=" + std::to_string(s.m) +
                         " K=" + std::to_string(s.k) + " P=" + std::to_string(s.p) +
                         " KT=" + std::to_string(kt) + " " + std::string(to_string(policy)));
            EXPECT_NE(s.k % kt, 0u);
            expect_pass(out);
            EXPECT_EQ(out.expected.k_chunks, (s.k + kt - 1) / kt);
        }
    }
}

TEST(KSplit, RandomShapesWithAShortLastChunkInt32) {
    random_split_shapes<int32_format>(31);
}
TEST(KSplit, RandomShapesWithAShortLastChunkInt8) {
    random_split_shapes<int8_format>(8);
}
TEST(KSplit, RandomShapesWithAShortLastChunkFp32) {
    random_split_shapes<fp32_format>(32);
}

quantization int8_out(double scale, std::int32_t zero_point = 0, bool per_partial = false) {
    quantization q;
    q.enabled = true;
    q.scale = scale;
    q.zero_point = zero_point;
    q.per_partial = per_partial;
    return q;
}

// The seeds' warning: partials 1 and 6 with scale 0.5 give round(3.5) = 4 when the complete sum
// is quantized once, and round(0.5) + round(3) = 0 + 3 = 3 when each partial is (nearest-even).
TEST(Quantize, OnceVersusPerPartial) {
    auto& b = bench_set<int32_format>::get(2);
    auto opt = split(2, k_policy::partials);
    opt.run.quant = int8_out(0.5);
    const auto once = b.run(seed_element(), opt);
    expect_pass(once);
    EXPECT_EQ(once.c_as<std::int8_t>(), std::vector<std::int8_t>{4});
    EXPECT_EQ(once.differs_from_quantize_once, 0u);

    opt.run.quant = int8_out(0.5, 0, true);
    const auto per_partial = b.run(seed_element(), opt);
    expect_pass(per_partial);  // the scoreboard reproduces the chosen (wrong-on-purpose) policy
    EXPECT_EQ(per_partial.c_as<std::int8_t>(), std::vector<std::int8_t>{3});
    EXPECT_EQ(per_partial.differs_from_quantize_once, 1u);
}

TEST(Quantize, ZeroPointRoundingAndSaturation) {
    auto& b = bench_set<int32_format>::get(2);
    // A (4x1) = [1, -1, 100, -100] times B (1x1) = [7] gives C = [7, -7, 700, -700]. Scale 0.5 and
    // zero point 10: 3.5 -> 4 (even) + 10 = 14; -3.5 -> -4 + 10 = 6; 350 + 10 saturates to 127;
    // -350 + 10 to -128.
    const auto pr = make_problem<int32_format>({4, 1, 1}, {1, -1, 100, -100}, {7});
    job_options opt;
    opt.run.quant = int8_out(0.5, 10);
    const auto out = b.run(pr, opt);
    expect_pass(out);
    EXPECT_EQ(out.c_as<std::int8_t>(), (std::vector<std::int8_t>{14, 6, 127, -128}));
    EXPECT_EQ(out.result.saturated_outputs, 2u);
    opt.run.quant.rounding = rounding_mode::nearest_away;  // 3.5 -> 4, -3.5 -> -4
    EXPECT_EQ(b.run(pr, opt).c_as<std::int8_t>(), (std::vector<std::int8_t>{14, 6, 127, -128}));
    opt.run.quant.rounding = rounding_mode::toward_zero;  // 3.5 -> 3, -3.5 -> -3
    EXPECT_EQ(b.run(pr, opt).c_as<std::int8_t>(), (std::vector<std::int8_t>{13, 7, 127, -128}));
}

TEST(Quantize, RandomSplitJobsMatchTheReference) {
    std::mt19937_64 rng(5);
    for (int i = 0; i < 8; ++i) {
        const problem_shape s{1 + rng() % 7, 4 + rng() % 12, 1 + rng() % 7};
        auto opt = split(3, k_policy::partials);
        opt.run.quant =
            int8_out(1.0 / double(1 + rng() % 50), static_cast<std::int32_t>(rng() % 21) - 10, rng() % 2);
        opt.run.quant.rounding = static_cast<rounding_mode>(rng() % 3);
        const auto out = bench_set<int8_format>::get(3).run(random_problem<int8_format>(s, rng()), opt);
        expect_pass(out);
    }
}

// (2^31 - 1)^2 is just under 2^62, so three such products overflow int64 on the third term.
TEST(Overflow, Int32WrapsOrSaturatesAndCounts) {
    const double big = 2147483647.0;
    const auto pr = make_problem<int32_format>({1, 3, 1}, {big, big, big}, {big, big, big});
    const acc64 square = acc64{2147483647} * 2147483647;
    auto& b = bench_set<int32_format>::get(1);

    job_options opt;
    const auto wrapped = b.run(pr, opt);
    expect_pass(wrapped);
    const auto expected_wrap = static_cast<acc64>(3 * static_cast<std::uint64_t>(square));
    EXPECT_EQ(wrapped.c_as<acc64>(), std::vector<acc64>{expected_wrap});
    EXPECT_EQ(wrapped.result.overflows, 1u);

    opt.run.overflow = overflow_mode::saturate;
    const auto saturated = b.run(pr, opt);
    expect_pass(saturated);
    EXPECT_EQ(saturated.c_as<acc64>(), std::vector<acc64>{std::numeric_limits<acc64>::max()});
    EXPECT_EQ(saturated.result.overflows, 1u);

    // With one-term partials, it is the combination of the third partial that overflows.
    opt = split(1, k_policy::partials);
    opt.run.overflow = overflow_mode::saturate;
    const auto combined = b.run(pr, opt);
    expect_pass(combined);
    EXPECT_EQ(combined.c_as<acc64>(), std::vector<acc64>{std::numeric_limits<acc64>::max()});
    EXPECT_EQ(combined.result.overflows, 0u);
    EXPECT_EQ(combined.result.partial_overflows, 1u);
}

// int8 x int8 products are at most 127 * 127 = 16129, so int32 overflows after 133144 terms.
TEST(Overflow, Int8AccumulatorWrapsAfterManyTerms) {
    const std::uint64_t k = 140000;
    problem<int8_format> pr;
    pr.shape = {1, k, 1};
    pr.a.assign(k, 127);
    pr.b.assign(k, 127);
    job_options opt;
    opt.run.overflow = overflow_mode::saturate;
    const auto out = bench_set<int8_format>::get(2).run(pr, opt);
    expect_pass(out);
    EXPECT_EQ(out.c_as<std::int32_t>(), std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::max()});
    // Saturation is per step: every term after the sum first exceeds the range saturates again.
    const std::uint64_t first_overflowing_term = std::numeric_limits<std::int32_t>::max() / 16129 + 1;
    EXPECT_EQ(out.result.overflows, k - first_overflowing_term + 1);
}

}  // namespace
