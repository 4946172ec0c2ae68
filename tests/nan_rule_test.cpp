// The NaN rule end to end (docs/formats.md): every NaN that reaches C is the
// canonical quiet NaN 0x7fc00000, whichever NaN operands (sign, payload, quiet or signalling),
// inf - inf or 0 x inf produced it. Every pair of special and ordinary values meets every other
// pair in a two-term dot product, through the whole testbench, on both engines, with and without
// K-splitting. The expected bits are computed here from IEEE-754 arithmetic on plain floats, not by
// the reference GEMM, so the scoreboard and this test check the run independently.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "bench_set.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

const std::vector<std::size_t> sizes = {1, 3, 8};

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<fp32_format>::build(sizes);
        bench_set<bf16_format>::build(sizes);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

constexpr std::uint32_t canonical = 0x7fc00000u;

float float_of(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}
std::uint32_t bits_of(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// The values as binary32 bit patterns: infinities, NaNs of both signs with several payloads (quiet
// and signalling), signed zeros, ordinary numbers, subnormals and the largest finite values (whose
// products and sums overflow to infinity).
const std::vector<std::uint32_t> fp32_values = {
    0x7f800000u, 0xff800000u,                            // +inf, -inf
    0x7fc00000u, 0xffc00000u, 0x7fc12345u, 0xffd00001u,  // quiet NaNs
    0x7f800001u, 0xffbfffffu,                            // signalling NaNs
    0x00000000u, 0x80000000u,                            // +0, -0
    0x3f800000u, 0xc0200000u,                            // 1, -2.5
    0x00000001u, 0x807fffffu,                            // subnormals
    0x7f7fffffu, 0xff7fffffu,                            // +-FLT_MAX
};
// The same kinds as bf16 bit patterns (the top half of a binary32).
const std::vector<std::uint16_t> bf16_values = {
    0x7f80, 0xff80,                  // +inf, -inf
    0x7fc0, 0xffc0, 0x7fc5, 0xffd1,  // quiet NaNs
    0x7f81, 0xffbf,                  // signalling NaNs
    0x0000, 0x8000,                  // +0, -0
    0x3f80, 0xc020,                  // 1, -2.5
    0x0001, 0x807f,                  // subnormals
    0x7f7f, 0xff7f,                  // largest finite bf16, both signs
};

template <class Format>
typename Format::operand_type operand(std::size_t i) {
    if constexpr (std::is_same_v<typename Format::operand_type, bf16>) {
        return bf16{bf16_values[i]};
    } else {
        return float_of(fp32_values[i]);
    }
}
template <class Format>
std::size_t value_count() {
    return std::is_same_v<typename Format::operand_type, bf16> ? bf16_values.size() : fp32_values.size();
}
float widen(float v) {
    return v;
}
float widen(bf16 v) {
    const std::uint32_t u = std::uint32_t{v.bits} << 16;
    return float_of(u);
}

// Row r = (i, j) of A holds (v_i, v_j); column c = (k, l) of B holds (v_k, v_l). So C(r, c) =
// v_i v_k + v_j v_l, and every combination of four values as A and B entries appears once.
template <class Format>
problem<Format> all_pairs() {
    const std::size_t n = value_count<Format>(), pairs = n * n;
    problem<Format> pr;
    pr.shape = {pairs, 2, pairs};
    pr.a.resize(pairs * 2);
    pr.b.resize(2 * pairs);
    for (std::size_t i = 0; i < n; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            pr.a[(i * n + j) * 2 + 0] = operand<Format>(i);
            pr.a[(i * n + j) * 2 + 1] = operand<Format>(j);
            pr.b[0 * pairs + i * n + j] = operand<Format>(i);
            pr.b[1 * pairs + i * n + j] = operand<Format>(j);
        }
    return pr;
}

// C's bits by IEEE-754 on plain floats: each product rounded, then added to an accumulator that
// starts at +0, in k order; then the NaN rule. (With one term per K chunk the partial sums are
// 0 + p0 and 0 + p1, and their sum is the same value, signed zeros included.)
template <class Format>
std::vector<std::uint32_t> expected_bits(const problem<Format>& pr) {
    const auto& s = pr.shape;
    std::vector<std::uint32_t> c(s.m * s.p);
    for (std::uint64_t r = 0; r < s.m; ++r)
        for (std::uint64_t col = 0; col < s.p; ++col) {
            volatile float acc = 0.0f;  // volatile: each step rounded on its own, nothing folded
            for (std::uint64_t k = 0; k < s.k; ++k) {
                const volatile float product = widen(pr.a[r * s.k + k]) * widen(pr.b[k * s.p + col]);
                acc = acc + product;
            }
            const float v = acc;
            c[r * s.p + col] = std::isnan(v) ? canonical : bits_of(v);
        }
    return c;
}

struct variant {
    std::uint64_t k_tile;
    k_policy policy;
    const char* name;
};
const variant variants[] = {
    {0, k_policy::preserve, "one chunk"},
    {1, k_policy::preserve, "k-tile 1, preserve"},
    {1, k_policy::partials, "k-tile 1, partials"},
};

template <class Format>
void every_combination() {
    const auto pr = all_pairs<Format>();
    const auto want = expected_bits(pr);
    std::uint64_t nans = 0;
    for (auto w : want)
        nans += w == canonical;
    ASSERT_GT(nans, 0u);                   // the cases of interest are there ...
    ASSERT_GT(want.size() - nans, 5000u);  // ... and so are infinities, zeros and finite sums

    for (auto n : sizes)
        for (const auto& v : variants)
            for (auto engine : {engine_kind::cycle, engine_kind::functional}) {
                job_options o;
                o.run.k_tile = v.k_tile;
                o.run.policy = v.policy;
                o.run.engine = engine;
                const std::string what = std::string(Format::name) + " N=" + std::to_string(n) + ", " +
                                         v.name + ", " + std::string(to_string(engine)) + " engine";
                const auto out = bench_set<Format>::get(n).run(pr, o);
                expect_pass(out);
                const auto got = out.template c_as<std::uint32_t>();
                ASSERT_EQ(got.size(), want.size());
                std::uint64_t wrong = 0;
                for (std::size_t e = 0; e < got.size(); ++e) {
                    if (got[e] == want[e]) continue;
                    if (++wrong <= 4)
                        ADD_FAILURE() << what << ": C(" << e / pr.shape.p << "," << e % pr.shape.p
                                      << ") is 0x" << std::hex << got[e] << ", expected 0x" << want[e];
                }
                EXPECT_EQ(wrong, 0u) << what;
            }
}

TEST(NanRule, Fp32EveryCombinationOfSpecialValuesGivesExactBits) {
    every_combination<fp32_format>();
}
TEST(NanRule, Bf16EveryCombinationOfSpecialValuesGivesExactBits) {
    every_combination<bf16_format>();
}

// inf x 0 and NaN x 0 make two NaNs whose sum kept different payloads in the
// model and the reference ("expected -nan, got nan"). Now both sides give the canonical NaN.
TEST(NanRule, InfTimesZeroPlusNanTimesZeroIsTheCanonicalNan) {
    const float inf = INFINITY;
    for (float sign : {1.0f, -1.0f})
        for (auto engine : {engine_kind::cycle, engine_kind::functional}) {
            problem<fp32_format> pr;
            pr.shape = {1, 2, 1};
            pr.a = {sign * inf, std::copysign(NAN, sign)};
            pr.b = {0.0f, 0.0f};
            job_options o;
            o.run.engine = engine;
            const auto out = bench_set<fp32_format>::get(1).run(pr, o);
            expect_pass(out);
            EXPECT_EQ(out.c_as<std::uint32_t>().at(0), canonical) << sign << " " << to_string(engine);
        }
}

// With int8 output a NaN becomes the zero point, in either policy.
TEST(NanRule, Int8OutputMapsNanToTheZeroPoint) {
    problem<fp32_format> pr;
    pr.shape = {1, 2, 1};
    pr.a = {INFINITY, 1.0f};
    pr.b = {0.0f, 3.0f};
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        job_options o;
        o.run.k_tile = 1;
        o.run.policy = policy;
        o.run.quant.enabled = true;
        o.run.quant.zero_point = -7;
        const auto out = bench_set<fp32_format>::get(3).run(pr, o);
        expect_pass(out);
        EXPECT_EQ(out.c_as<std::int8_t>().at(0), -7);
    }
}

}  // namespace
