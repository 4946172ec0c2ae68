// Random comparison: 10,240 seeded random jobs per run, in-process, each through the whole
// testbench on both engines and checked by the scoreboard against its independent reference (every
// element of C bit for bit, nothing outside C touched, edge counts, protocol). One seed fixes the whole
// case: the format (seed mod 4), the array size (1-32), the shapes, K-splitting and policy, overflow
// mode, int8 output, tile order, layout and operands, which mix integer extremes or, for floats,
// NaNs, infinities, signed zeros, subnormals and values near overflow.
//
// A failure prints the seed and the case. Replay one seed:
//   SYSTOLIC_RANDOM_SEED=1234 build/tests/random_compare_test --gtest_filter=RandomCompare.Replay
// Other seeds: SYSTOLIC_RANDOM_BASE=N shifts every test case's seed range by N (default 0, the
// range CI runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "bench_set.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

constexpr std::size_t max_array = 32;
constexpr std::uint64_t shards = 2;              // test cases per format
constexpr std::uint64_t cases_per_shard = 1280;  // 4 formats x 2 shards x 1280 = 10,240 cases

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        std::vector<std::size_t> sizes;
        for (std::size_t n = 1; n <= max_array; ++n)
            sizes.push_back(n);
        bench_set<int8_format>::build(sizes);
        bench_set<int32_format>::build(sizes);
        bench_set<fp32_format>::build(sizes);
        bench_set<bf16_format>::build(sizes);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

std::uint64_t env_u64(const char* name, std::uint64_t fallback) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') return fallback;
    return std::strtoull(v, nullptr, 0);
}

float float_of(std::uint32_t bits) {
    float f;
    std::memcpy(&f, &bits, sizeof f);
    return f;
}

// How a case's operands are drawn; named in the failure message.
enum class mix { ordinary, full_range, extremes, specials, near_overflow, tiny };
const char* to_string(mix m) {
    switch (m) {
        case mix::ordinary:
            return "ordinary";
        case mix::full_range:
            return "full range";
        case mix::extremes:
            return "integer extremes";
        case mix::specials:
            return "NaN/inf/zero/subnormal";
        case mix::near_overflow:
            return "near overflow";
        case mix::tiny:
            return "subnormal products";
    }
    return "?";
}

template <class Format>
struct random_case {
    std::uint64_t seed = 0;
    std::size_t n = 1;
    problem<Format> pr;
    job_options opt;
    mix operands = mix::ordinary;
    double special_share = 0;  // floats: the share of special values among the operands
};

// A float from the case's mix. Specials: +-0, +-inf, NaNs of either sign with random payloads
// (quiet and signalling), subnormals, +-FLT_MAX; otherwise a value of the mix's magnitude.
float draw_float(std::mt19937_64& rng, mix m, double special_share) {
    const double unit = double(rng() >> 11) * 0x1.0p-53;  // [0, 1)
    const std::uint32_t sign = (rng() & 1) ? 0x80000000u : 0u;
    if (double(rng() >> 11) * 0x1.0p-53 < special_share) {
        switch (rng() % 7) {
            case 0:
                return float_of(sign);  // +-0
            case 1:
                return float_of(sign | 0x7f800000u);  // +-inf
            case 2:
                return float_of(sign | 0x7fc00000u | (rng() & 0x3fffffu));  // quiet NaN
            case 3:
                return float_of(sign | 0x7f800000u | (1 + rng() % 0x3fffffu));  // signalling NaN
            case 4:
                return float_of(sign | (1 + rng() % 0x7fffffu));  // subnormal
            case 5:
                return float_of(sign | 0x7f7fffffu);  // +-FLT_MAX
            default:
                return float_of(sign | (0x7f000000u + rng() % 0x7fffffu));  // near FLT_MAX
        }
    }
    const float s = sign ? -1.0f : 1.0f;
    switch (m) {
        case mix::near_overflow:  // products near FLT_MAX (about 3.4e38): 1e18 .. 2e19
            return s * float(1e18 + unit * 1.9e19);
        case mix::tiny:  // products below FLT_MIN (1.2e-38), so subnormal or zero: 1e-25 .. 1e-19
            return s * float(std::pow(10.0, -25 + 6 * unit));
        case mix::full_range:  // any finite float magnitude
            return s * float(std::pow(2.0, -149 + 276 * unit));
        default:
            return float(2 * unit - 1);
    }
}

template <class Format>
random_case<Format> make_case(std::uint64_t seed) {
    using T = typename Format::operand_type;
    std::mt19937_64 rng(seed);
    random_case<Format> c;
    c.seed = seed;
    c.n = 1 + rng() % max_array;
    // Shapes: up to about two tiles a side (more for small arrays), K sometimes long.
    const std::uint64_t span = std::min<std::uint64_t>(2 * c.n + 3, 40);
    problem_shape s{1 + rng() % span, 1 + rng() % (rng() % 16 == 0 ? 160 : 40), 1 + rng() % span};

    job_options& o = c.opt;
    o.run.k_tile = rng() % 3 == 0 ? 0 : 1 + rng() % s.k;
    o.run.policy = rng() % 2 ? k_policy::partials : k_policy::preserve;
    o.run.order = static_cast<tile_order>(rng() % 4);
    o.run.order_seed = rng();
    o.packed = rng() % 8 == 0;
    o.fill_seed = rng();
    if (Format::is_integer) o.run.overflow = rng() % 2 ? overflow_mode::saturate : overflow_mode::wrap;
    if (rng() % 4 == 0) {
        o.run.quant.enabled = true;
        switch (rng() % 4) {
            case 0:
                o.run.quant.scale = std::ldexp(1.0, int(rng() % 17) - 12);
                break;  // powers of two
            case 1:
                o.run.quant.scale = std::pow(10.0, -4 + 6 * double(rng() % 1000) / 1000);
                break;
            case 2:
                o.run.quant.scale = rng() % 2 ? 1e6 : 1e300;
                break;  // saturates
            default:
                o.run.quant.scale = 1.0 / double(1 + rng() % 5000);
                break;
        }
        o.run.quant.zero_point = std::int32_t(rng() % 256) - 128;
        o.run.quant.rounding = static_cast<rounding_mode>(rng() % 3);
        o.run.quant.per_partial =
            o.run.policy == k_policy::partials && k_chunks(s.k, o.run.k_tile) > 1 && rng() % 2;
    }

    c.pr.shape = s;
    c.pr.a.resize(s.m * s.k);
    c.pr.b.resize(s.k * s.p);
    if constexpr (Format::is_integer) {
        using L = std::numeric_limits<T>;
        c.operands = static_cast<mix>(rng() % 3);  // ordinary, full range, extremes
        const T edges[] = {L::min(), T(L::min() + 1), T(-1), T(0), T(1), T(L::max() - 1), L::max()};
        auto draw = [&]() -> T {
            const std::uint64_t span_all =
                std::uint64_t(L::max()) - std::uint64_t(std::int64_t(L::min())) + 1;
            const T any = T(std::int64_t(L::min()) + std::int64_t(rng() % span_all));
            switch (c.operands) {
                case mix::full_range:
                    return any;
                case mix::extremes:
                    return rng() % 2 ? edges[rng() % 7] : any;
                default: {
                    const std::int64_t r = std::int64_t(default_range<Format>());
                    return T(std::int64_t(rng() % std::uint64_t(2 * r + 1)) - r);
                }
            }
        };
        for (auto& v : c.pr.a)
            v = draw();
        for (auto& v : c.pr.b)
            v = draw();
    } else {
        const mix mixes[] = {mix::ordinary, mix::specials, mix::near_overflow, mix::tiny, mix::full_range};
        c.operands = mixes[rng() % 5];
        const double shares[] = {0.0, 1.0 / 64, 1.0 / 8, 1.0 / 2};
        c.special_share = c.operands == mix::specials ? shares[1 + rng() % 3] : shares[rng() % 2];
        auto draw = [&]() -> T {
            const float f = draw_float(rng, c.operands, c.special_share);
            if constexpr (std::is_same_v<T, bf16>) {
                // Mostly rounded from float, as loading does; sometimes raw bits, which can hold a
                // signalling bf16 NaN that no conversion would make.
                if (rng() % 8 == 0) {
                    std::uint32_t u;
                    std::memcpy(&u, &f, sizeof u);
                    return bf16{static_cast<std::uint16_t>(u >> 16)};
                }
                return bf16::from_float(f);
            } else {
                return f;
            }
        };
        for (auto& v : c.pr.a)
            v = draw();
        for (auto& v : c.pr.b)
            v = draw();
    }
    return c;
}

template <class T>
std::string show(const std::vector<T>& v) {
    std::ostringstream os;
    os.precision(9);
    os << "[";
    for (std::size_t i = 0; i < v.size(); ++i) {
        if (i) os << ", ";
        if constexpr (std::is_same_v<T, bf16>) {
            os << "0x" << std::hex << v[i].bits << std::dec;
        } else if constexpr (std::is_floating_point_v<T>) {
            std::uint32_t u;
            std::memcpy(&u, &v[i], sizeof u);
            os << v[i] << " (0x" << std::hex << u << std::dec << ")";
        } else {
            os << +v[i];
        }
    }
    return os.str() + "]";
}

template <class Format>
std::string describe(const random_case<Format>& c) {
    const auto& s = c.pr.shape;
    const auto& o = c.opt;
    std::ostringstream os;
    os.precision(17);
    os << "seed " << c.seed << ": " << Format::name << " M=" << s.m << " K=" << s.k << " P=" << s.p
       << " N=" << c.n << " k_tile=" << o.run.k_tile << " policy=" << to_string(o.run.policy)
       << " order=" << to_string(o.run.order) << " (order seed " << o.run.order_seed << ")"
       << (o.packed ? " packed" : "") << " overflow=" << to_string(o.run.overflow);
    if (o.run.quant.enabled)
        os << " int8 out (scale " << o.run.quant.scale << ", zero point " << o.run.quant.zero_point << ", "
           << to_string(o.run.quant.rounding) << (o.run.quant.per_partial ? ", partials quantized" : "")
           << ")";
    os << " operands " << to_string(c.operands);
    if (!Format::is_integer) os << " (special share " << c.special_share << ")";
    if (s.m * s.k + s.k * s.p <= 64) os << "\n  A = " << show(c.pr.a) << "\n  B = " << show(c.pr.b);
    os << "\n  replay: SYSTOLIC_RANDOM_SEED=" << c.seed
       << " build/tests/random_compare_test --gtest_filter=RandomCompare.Replay";
    return os.str();
}

// What a batch of cases covered, so that a change to the generator cannot quietly drop a feature.
struct coverage {
    std::uint64_t cases = 0, failed = 0, split = 0, partials = 0, int8_out = 0, per_partial = 0, packed = 0;
    std::uint64_t orders[4] = {}, wraps = 0, saturations = 0, clipped = 0, nan_outputs = 0, inf_outputs = 0;
    std::vector<bool> sizes = std::vector<bool>(max_array + 1);
};

// Runs one case on both engines; true when both pass the scoreboard and agree on C.
template <class Format>
bool run_case(std::uint64_t seed, coverage& cov) {
    const auto c = make_case<Format>(seed);
    auto& bench = bench_set<Format>::get(c.n);
    job_options o = c.opt;
    o.run.engine = engine_kind::cycle;
    const auto cyc = bench.run(c.pr, o);
    o.run.engine = engine_kind::functional;
    const auto fun = bench.run(c.pr, o);

    ++cov.cases;
    cov.sizes[c.n] = true;
    cov.split += k_chunks(c.pr.shape.k, o.run.k_tile) > 1;
    cov.partials += o.run.policy == k_policy::partials && k_chunks(c.pr.shape.k, o.run.k_tile) > 1;
    cov.int8_out += o.run.quant.enabled;
    cov.per_partial += o.run.quant.per_partial;
    cov.packed += o.packed;
    ++cov.orders[static_cast<int>(o.run.order)];
    if (o.run.overflow == overflow_mode::wrap) cov.wraps += cyc.result.overflows > 0;
    if (o.run.overflow == overflow_mode::saturate) cov.saturations += cyc.result.overflows > 0;
    cov.clipped += cyc.result.saturated_outputs > 0;
    if constexpr (!Format::is_integer) {
        if (!o.run.quant.enabled)
            for (float v : cyc.template c_as<float>()) {
                cov.nan_outputs += std::isnan(v);
                cov.inf_outputs += std::isinf(v);
            }
    }

    std::string why;
    for (const auto* out : {&cyc, &fun}) {
        if (out->pass()) continue;
        why += "\n  " + std::string(to_string(out->result.engine)) + " engine: FAIL";
        for (std::size_t i = 0; i < out->scoreboard.errors.size() && i < 3; ++i)
            why += "\n    " + out->scoreboard.errors[i];
    }
    if (why.empty() && cyc.c != fun.c) why = "\n  the engines wrote different C";
    if (why.empty()) return true;
    if (++cov.failed <= 5) ADD_FAILURE() << describe(c) << why;
    return false;
}

template <class Format>
void run_shard(std::uint64_t format_index, std::uint64_t shard) {
    if (std::getenv("SYSTOLIC_RANDOM_SEED")) GTEST_SKIP() << "replaying one seed (RandomCompare.Replay)";
    const std::uint64_t base = env_u64("SYSTOLIC_RANDOM_BASE", 0);
    coverage cov;
    for (std::uint64_t j = shard * cases_per_shard; j < (shard + 1) * cases_per_shard; ++j)
        run_case<Format>(base + 4 * j + format_index, cov);
    EXPECT_EQ(cov.failed, 0u) << "of " << cov.cases << " cases";

    // Coverage: every array size, both kinds of K-splitting, int8 output, every order, and the
    // extremes of the format really happened.
    EXPECT_EQ(cov.cases, cases_per_shard);
    for (std::size_t n = 1; n <= max_array; ++n)
        EXPECT_TRUE(cov.sizes[n]) << "array size " << n << " never drawn";
    EXPECT_GT(cov.split, cov.cases / 4);
    EXPECT_GT(cov.partials, cov.cases / 8);
    EXPECT_GT(cov.int8_out, cov.cases / 8);
    EXPECT_GT(cov.per_partial, 0u);
    EXPECT_GT(cov.packed, 0u);
    EXPECT_GT(cov.clipped, 0u);
    for (auto n : cov.orders)
        EXPECT_GT(n, cov.cases / 8);
    if constexpr (Format::is_integer) {
        if (sizeof(typename Format::operand_type) > 1) {  // int8 sums need 2^17 terms to overflow
            EXPECT_GT(cov.wraps, 0u);
            EXPECT_GT(cov.saturations, 0u);
        }
    } else {
        EXPECT_GT(cov.nan_outputs, 0u);
        EXPECT_GT(cov.inf_outputs, 0u);
    }
    ::testing::Test::RecordProperty("cases", int(cov.cases));
}

TEST(RandomCompare, Int8Part0) {
    run_shard<int8_format>(0, 0);
}
TEST(RandomCompare, Int8Part1) {
    run_shard<int8_format>(0, 1);
}
TEST(RandomCompare, Int32Part0) {
    run_shard<int32_format>(1, 0);
}
TEST(RandomCompare, Int32Part1) {
    run_shard<int32_format>(1, 1);
}
TEST(RandomCompare, Fp32Part0) {
    run_shard<fp32_format>(2, 0);
}
TEST(RandomCompare, Fp32Part1) {
    run_shard<fp32_format>(2, 1);
}
TEST(RandomCompare, Bf16Part0) {
    run_shard<bf16_format>(3, 0);
}
TEST(RandomCompare, Bf16Part1) {
    run_shard<bf16_format>(3, 1);
}
static_assert(shards == 2, "one TEST per shard and format above");

// One seed, as a failure message names it; the seed picks the format.
TEST(RandomCompare, Replay) {
    const char* v = std::getenv("SYSTOLIC_RANDOM_SEED");
    if (v == nullptr) GTEST_SKIP() << "set SYSTOLIC_RANDOM_SEED to replay one case";
    const std::uint64_t seed = std::strtoull(v, nullptr, 0);
    coverage cov;
    bool ok = false;
    switch (seed % 4) {
        case 0:
            ok = run_case<int8_format>(seed, cov);
            break;
        case 1:
            ok = run_case<int32_format>(seed, cov);
            break;
        case 2:
            ok = run_case<fp32_format>(seed, cov);
            break;
        default:
            ok = run_case<bf16_format>(seed, cov);
            break;
    }
    if (ok) std::printf("seed %llu passes\n", static_cast<unsigned long long>(seed));
}

}  // namespace
