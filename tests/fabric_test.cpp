// A fabric of arrays through the whole testbench (controller, TLM memory, scoreboard): the seed's
// 15^3 case on 3x3x3 arrays of 5x5 with its halo words and its 43 edges; random jobs on several
// fabric shapes giving C bit for bit as one array does, in every format and K policy; the same
// results and counts on one thread and on two; and the planted faults caught on a fabric too.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <random>
#include <string>
#include <tuple>

#include "bench_set.h"
#include "systolic/fabric_geometry.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

struct fabric_key {
    std::size_t n;
    fabric_shape shape;
    std::uint64_t latency;
    unsigned threads;
    bool operator<(const fabric_key& o) const {
        return std::tie(n, shape.rows, shape.cols, shape.depth, latency, threads) <
               std::tie(o.n, o.shape.rows, o.shape.cols, o.shape.depth, o.latency, o.threads);
    }
};

// Every fabric bench a test uses, built before the first sc_start.
const std::vector<fabric_key> fabric_keys = {
    {5, {3, 3, 3}, 1, 1}, {2, {2, 2, 1}, 1, 1}, {2, {2, 2, 1}, 1, 2}, {3, {1, 3, 2}, 2, 1},
    {3, {1, 3, 2}, 2, 2}, {2, {2, 1, 3}, 3, 1}, {3, {2, 2, 2}, 1, 1}, {3, {2, 2, 2}, 1, 2},
};
const std::vector<std::size_t> single_sizes = {2, 3, 5};

template <class Format>
std::map<fabric_key, std::unique_ptr<testbench<Format>>>& fabrics() {
    static std::map<fabric_key, std::unique_ptr<testbench<Format>>> m;
    return m;
}

template <class Format>
void build_fabrics() {
    for (const auto& k : fabric_keys) {
        typename testbench<Format>::config cfg;
        cfg.rows = cfg.cols = k.n;
        cfg.fabric = k.shape;
        cfg.link_latency = k.latency;
        cfg.threads = k.threads;
        const std::string name =
            std::string("fab_") + Format::name + "_" + std::to_string(fabrics<Format>().size());
        fabrics<Format>()[k] = std::make_unique<testbench<Format>>(name.c_str(), cfg);
    }
    bench_set<Format>::build(single_sizes);
}

template <class Format>
testbench<Format>& fabric_bench(const fabric_key& k) {
    return *fabrics<Format>().at(k);
}

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        build_fabrics<int8_format>();
        build_fabrics<int32_format>();
        build_fabrics<fp32_format>();
        build_fabrics<bf16_format>();
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

TEST(Fabric, SeedCaseOnThreeByThreeByThreeArrays) {
    const auto pr = random_problem<int32_format>({15, 15, 15}, 5);
    auto& b = fabric_bench<int32_format>({5, {3, 3, 3}, 1, 1});
    const auto out = b.run(pr);
    expect_pass(out);
    EXPECT_EQ(out.result.advance_edges, 43u);  // the wavefront of the whole 15^3 cube
    EXPECT_EQ(std::string(b.fabric_module()->name()), std::string(b.name()) + ".fabric");
    ASSERT_TRUE(out.fabric);
    const auto& f = *out.fabric;
    EXPECT_EQ(f.passes, 1u);
    // systolic-partition --m 15 --k 15 --p 15 --block 5: +j 450, +i 450, +k 450.
    EXPECT_EQ(f.halo_words("a"), 450u);
    EXPECT_EQ(f.halo_words("b"), 450u);
    EXPECT_EQ(f.halo_words("c"), 450u);
    EXPECT_EQ(f.halo_words("a", true) + f.halo_words("b", true) + f.halo_words("c", true), 0u);
    // Only the west face reads A and only the north face B, once; one 5x5 array reads them thrice.
    EXPECT_EQ(out.result.traffic.a_read, 15u * 15u * 4u);
    EXPECT_EQ(out.result.traffic.b_read, 15u * 15u * 4u);
    EXPECT_EQ(f.single_array.a_read, 3u * 15u * 15u * 4u);
    EXPECT_EQ(out.result.traffic.c_written, 15u * 15u * 8u);
    // The same C as one 5x5 array.
    const auto one = bench_set<int32_format>::get(5).run(pr);
    expect_pass(one);
    EXPECT_EQ(out.c, one.c);
    EXPECT_EQ(one.result.traffic.a_read, f.single_array.a_read);  // the rule, against a measured run
    EXPECT_EQ(one.result.traffic.b_read, f.single_array.b_read);
}

template <class Format>
void compare_with_one_array(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const fabric_key& key = fabric_keys[1 + rng() % (fabric_keys.size() - 1)];
    const problem_shape s{1 + rng() % 17, 1 + rng() % 21, 1 + rng() % 17};
    job_options o;
    o.run.order = static_cast<tile_order>(rng() % 4);
    o.run.order_seed = rng();
    o.run.k_tile = rng() % 3 == 0 ? 0 : 1 + rng() % s.k;
    o.run.policy = rng() % 2 ? k_policy::partials : k_policy::preserve;
    if (Format::is_integer) o.run.overflow = rng() % 2 ? overflow_mode::saturate : overflow_mode::wrap;
    if (rng() % 4 == 0) {  // int8 output through the output stage
        o.run.quant.enabled = true;
        o.run.quant.scale = 1.0 / double(1 + rng() % 300);
        o.run.quant.zero_point = std::int32_t(rng() % 21) - 10;
    }
    double range = default_range<Format>();
    if constexpr (Format::is_integer)
        if (rng() % 4 == 0) range = double(std::numeric_limits<typename Format::operand_type>::max());
    const auto pr = random_problem<Format>(s, rng(), range);
    const std::string what =
        std::string(Format::name) + " seed " + std::to_string(seed) + ": " + to_string(key.shape) + " of " +
        std::to_string(key.n) + ", L=" + std::to_string(key.latency) + ", M=" + std::to_string(s.m) +
        " K=" + std::to_string(s.k) + " P=" + std::to_string(s.p) +
        " k_tile=" + std::to_string(o.run.k_tile) + " " + std::string(to_string(o.run.policy));

    const auto fab = fabric_bench<Format>(key).run(pr, o);
    const auto one = bench_set<Format>::get(key.n).run(pr, o);
    ASSERT_TRUE(fab.pass()) << what << ": "
                            << (fab.scoreboard.errors.empty() ? "" : fab.scoreboard.errors[0]);
    ASSERT_TRUE(one.pass()) << what;
    EXPECT_EQ(fab.c, one.c) << what;
    EXPECT_EQ(fab.result.macs_real, one.result.macs_real) << what;
    EXPECT_EQ(fab.result.overflows, one.result.overflows) << what;
    EXPECT_EQ(fab.result.partial_overflows, one.result.partial_overflows) << what;
    EXPECT_EQ(fab.result.advance_edges,
              count_fabric_job(s, fabric_geometry{key.shape, key.n, key.latency}, o.run.k_tile)
                  .counts.advance_edges)
        << what;
    EXPECT_EQ(fab.fabric->passes,
              count_fabric_job(s, fabric_geometry{key.shape, key.n, key.latency}, o.run.k_tile).passes)
        << what;
}

TEST(Fabric, Int8MatchesOneArray) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed)
        compare_with_one_array<int8_format>(seed);
}
TEST(Fabric, Int32MatchesOneArray) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed)
        compare_with_one_array<int32_format>(100 + seed);
}
TEST(Fabric, Fp32MatchesOneArray) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed)
        compare_with_one_array<fp32_format>(200 + seed);
}
TEST(Fabric, Bf16MatchesOneArray) {
    for (std::uint64_t seed = 1; seed <= 25; ++seed)
        compare_with_one_array<bf16_format>(300 + seed);
}

TEST(Fabric, TwoThreadsGiveTheSameResultsAndCounts) {
    for (const auto& [one, two] :
         {std::pair{fabric_key{2, {2, 2, 1}, 1, 1}, fabric_key{2, {2, 2, 1}, 1, 2}},
          std::pair{fabric_key{3, {1, 3, 2}, 2, 1}, fabric_key{3, {1, 3, 2}, 2, 2}},
          std::pair{fabric_key{3, {2, 2, 2}, 1, 1}, fabric_key{3, {2, 2, 2}, 1, 2}}}) {
        for (std::uint64_t seed = 1; seed <= 4; ++seed) {
            job_options o;
            o.run.k_tile = seed % 2 ? 0 : 4;
            const auto pr = random_problem<fp32_format>({5 + seed * 3, 9 + seed * 5, 4 + seed * 2}, seed);
            const auto a = fabric_bench<fp32_format>(one).run(pr, o);
            const auto b = fabric_bench<fp32_format>(two).run(pr, o);
            expect_pass(a);
            expect_pass(b);
            EXPECT_EQ(a.c, b.c);
            EXPECT_EQ(a.result.advance_edges, b.result.advance_edges);
            EXPECT_EQ(a.result.macs_padded, b.result.macs_padded);
            EXPECT_EQ(a.result.end - a.result.start, b.result.end - b.result.start);
            ASSERT_EQ(a.fabric->links.size(), b.fabric->links.size());
            for (std::size_t l = 0; l < a.fabric->links.size(); ++l) {
                EXPECT_EQ(a.fabric->links[l].words, b.fabric->links[l].words);
                EXPECT_EQ(a.fabric->links[l].padding_words, b.fabric->links[l].padding_words);
            }
            EXPECT_EQ(b.fabric->threads, 2u);
        }
    }
}

TEST(Fabric, PlantedFaultsAreCaught) {
    const auto pr = random_problem<int32_format>({10, 14, 11}, 9);
    auto& b = fabric_bench<int32_format>({3, {2, 2, 2}, 1, 1});
    for (fault f : {fault::clear_between_k, fault::invalid_padding, fault::no_mask, fault::global_skew,
                    fault::skip_advance, fault::extra_advance}) {
        job_options o;
        o.run.k_tile = 5;
        o.inject = f;
        const auto out = b.run(pr, o);
        EXPECT_FALSE(out.pass()) << to_string(f);
    }
    job_options o;
    o.run.k_tile = 5;
    expect_pass(b.run(pr, o));  // and the bench is fine again without one
}

}  // namespace
