// The two engines give one result: seeded random jobs run through the whole testbench once on the
// cycle engine and once on the functional engine, and C's bytes and every counter must be the
// same (and both must pass the scoreboard), on square and on rectangular arrays (R rows of C PEs,
// where the tiles and the edge counts follow R and C apart). Also: the planted extra-advance fault
// is caught by the edge check alone, and the edge observer sees every edge at its own simulated time.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "bench_set.h"
#include "format_types.h"
#include "systolic/edge_observer.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

const std::vector<std::size_t> sizes = {1, 2, 3, 4, 5, 8};
// R x C: a single row and a single column, and both orientations of two rectangles.
const std::vector<std::pair<std::size_t, std::size_t>> rect_shapes = {{1, 4}, {4, 1}, {3, 5},
                                                                      {5, 3}, {2, 7}, {7, 2}};

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        build_every_format(sizes, rect_shapes);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

// Draws the overflow mode, int8 output and the operands, runs the job on both engines of the
// rows x cols bench and compares everything.
template <class Format>
void run_both_engines(std::mt19937_64& rng, std::uint64_t seed, std::size_t rows, std::size_t cols,
                      const problem_shape& s, job_options o) {
    if (Format::is_integer) o.run.overflow = rng() % 2 ? overflow_mode::saturate : overflow_mode::wrap;
    if (rng() % 4 == 0) {
        o.run.quant.enabled = true;
        o.run.quant.scale = 1.0 / double(1 + rng() % 300);
        o.run.quant.zero_point = std::int32_t(rng() % 21) - 10;
    }
    // Integer operands near the format's limits a quarter of the time, so overflows happen.
    double range = default_range<Format>();
    if constexpr (Format::is_integer)
        if (rng() % 4 == 0) range = double(std::numeric_limits<typename Format::operand_type>::max());
    const auto pr = random_problem<Format>(s, rng(), range);
    const std::string what = std::string(Format::name) + " " + describe(s, rows, cols, o, seed);

    auto& b = bench_set<Format>::get(rows, cols);
    o.run.engine = engine_kind::cycle;
    const auto cyc = b.run(pr, o);
    o.run.engine = engine_kind::functional;
    const auto fun = b.run(pr, o);

    ASSERT_TRUE(cyc.pass()) << what << ": "
                            << (cyc.scoreboard.errors.empty() ? "" : cyc.scoreboard.errors[0]);
    ASSERT_TRUE(fun.pass()) << what << ": "
                            << (fun.scoreboard.errors.empty() ? "" : fun.scoreboard.errors[0]);
    EXPECT_EQ(cyc.c, fun.c) << what;
    const auto& rc = cyc.result;
    EXPECT_EQ(rc.engine, engine_kind::cycle);
    EXPECT_EQ(fun.result.engine, engine_kind::functional);
    expect_same_counters(cyc, fun, what);
    // The counting rules for R x C, worked out here: ceil(M/R) x ceil(P/C) tiles, each chunk of kc
    // terms kc + R + C - 2 edges, counted by the cycle engine as it stepped.
    const std::uint64_t tiles = (s.m + rows - 1) / rows * ((s.p + cols - 1) / cols);
    EXPECT_EQ(rc.tiles.size(), tiles) << what;
    const std::uint64_t kt = o.run.k_tile == 0 || o.run.k_tile > s.k ? s.k : o.run.k_tile;
    std::vector<std::uint64_t> per_chunk;
    for (std::uint64_t k0 = 0; k0 < s.k; k0 += kt)
        per_chunk.push_back(std::min(kt, s.k - k0) + rows + cols - 2);
    for (const auto& t : rc.tiles)
        EXPECT_EQ(t.advance_edges_per_chunk, per_chunk) << what;
    // The real block of every tile is at most R rows of C.
    for (const auto& t : rc.tiles) {
        EXPECT_LE(t.where.rows, rows) << what;
        EXPECT_LE(t.where.cols, cols) << what;
        EXPECT_EQ(t.where.r0 % rows, 0u) << what;
        EXPECT_EQ(t.where.c0 % cols, 0u) << what;
    }
}

template <class Format>
void compare_engines(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const std::size_t n = sizes[rng() % sizes.size()];
    const problem_shape s{1 + rng() % 19, 1 + rng() % 23, 1 + rng() % 19};
    job_options o;
    o.run.order = static_cast<tile_order>(rng() % 4);
    o.run.order_seed = rng();
    o.run.k_tile = rng() % 3 == 0 ? 0 : 1 + rng() % s.k;
    o.run.policy = rng() % 2 ? k_policy::partials : k_policy::preserve;
    run_both_engines<Format>(rng, seed, n, n, s, o);
}

// Every rectangular bench, each with two shapes whose M and P are not multiples of R and C, under
// one chunk and under K-splitting with both policies.
template <class Format>
void compare_engines_rectangular(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    for (const auto& [rows, cols] : rect_shapes) {
        for (int shape = 0; shape < 2; ++shape) {
            problem_shape s;
            do {
                s = {1 + rng() % 17, 2 + rng() % 21, 1 + rng() % 17};
            } while ((rows > 1 && s.m % rows == 0) || (cols > 1 && s.p % cols == 0));
            const std::uint64_t k_tile = 1 + rng() % (s.k - 1);  // at least two chunks
            for (const auto& [kt, policy] :
                 {std::pair{std::uint64_t{0}, k_policy::preserve}, std::pair{k_tile, k_policy::preserve},
                  std::pair{k_tile, k_policy::partials}}) {
                job_options o;
                o.run.order = static_cast<tile_order>(rng() % 4);
                o.run.order_seed = rng();
                o.run.k_tile = kt;
                o.run.policy = policy;
                run_both_engines<Format>(rng, seed, rows, cols, s, o);
                if (::testing::Test::HasFatalFailure()) return;
            }
        }
    }
}

// Every format of the model's list (format_types.h), each with its own seeds.
template <class Format>
class EngineCrossCheck : public ::testing::Test {};
TYPED_TEST_SUITE(EngineCrossCheck, systolic::test::format_types, systolic::test::format_name);

// 60 seeds per format, every option drawn at random per seed.
TYPED_TEST(EngineCrossCheck, AllOptions) {
    for (std::uint64_t seed = 1; seed <= 60; ++seed)
        compare_engines<TypeParam>(1000 * systolic::test::format_index<TypeParam> + seed);
}

// Per format: 6 rectangular arrays x 2 shapes x 3 K-splitting set-ups = 36 cases.
TYPED_TEST(EngineCrossCheck, Rectangular) {
    compare_engines_rectangular<TypeParam>(4001 + 1000 * systolic::test::format_index<TypeParam>);
}

TEST(EngineCrossCheck, OverflowCountsNearTheBoundAgree) {
    // int8: 127 x 127 = 16129 per term; 2^31 / 16129 = 133145 terms keep the sum in range. A K just
    // above that overflows in the last few terms; one just below never does.
    for (std::uint64_t k : {133140u, 133150u}) {
        problem<int8_format> pr;
        pr.shape = {1, k, 2};
        pr.a.assign(k, 127);
        pr.b.assign(2 * k, 127);
        for (auto mode : {overflow_mode::wrap, overflow_mode::saturate}) {
            job_options o;
            o.run.overflow = mode;
            const auto cyc = bench_set<int8_format>::get(2).run(pr, o);
            o.run.engine = engine_kind::functional;
            const auto fun = bench_set<int8_format>::get(2).run(pr, o);
            expect_pass(cyc);
            expect_pass(fun);
            EXPECT_EQ(cyc.result.overflows, fun.result.overflows);
            EXPECT_EQ(cyc.c, fun.c);
            // Overflowing steps, by hand: the sum 16129 k exceeds 2^31 - 1 from term 133145 on
            // (wrap: each later term may overflow again only after another 2^32 / 16129 terms).
            EXPECT_EQ(cyc.result.overflows,
                      k > 133144 ? 2 * (mode == overflow_mode::wrap ? 1 : k - 133144) : 0u)
                << k << " " << to_string(mode);
        }
    }
}

TEST(ExtraAdvance, IsCaughtByTheEdgeCheckAlone) {
    auto& b = bench_set<int32_format>::get(2);
    job_options o;
    expect_pass(b.run(seed_example<int32_format>(), o));
    o.inject = fault::extra_advance;
    const auto out = b.run(seed_example<int32_format>(), o);
    EXPECT_TRUE(out.result.completed());  // the watchdog sees nothing wrong
    EXPECT_EQ(out.scoreboard.mismatches, 0u);
    EXPECT_FALSE(out.scoreboard.edges_ok);
    EXPECT_FALSE(out.pass());
    EXPECT_TRUE(has_error(out, "advance edges: expected 20 (4 tiles x 5), counted 24"))
        << out.scoreboard.errors[0];
    EXPECT_TRUE(has_error(out, "tile 0: 6 advance edges, expected 5"));
    o.inject = fault::none;
    expect_pass(b.run(seed_example<int32_format>(), o));
}

// Records what the observer is shown.
class recorder final : public edge_observer<int32_format> {
public:
    struct seen {
        std::uint64_t tile, chunk, edge;
        sc_core::sc_time time;
        std::int64_t acc00;
        std::uint64_t consumed00;
    };
    std::vector<seen> edges;
    void on_edge(const edge_event<int32_format>& e) override {
        edges.push_back({e.step.where->index, e.step.chunk, e.edge, e.time, e.array->accumulator(0, 0),
                         e.array->consumed(0, 0)});
    }
};

TEST(EdgeObserver, SeesEveryEdgeAtItsOwnTime) {
    auto& b = bench_set<int32_format>::get(2);
    recorder rec;
    b.controller.set_observer(&rec);
    job_options o;
    o.run.k_tile = 2;
    const auto out = b.run(seed_example<int32_format>(), o);
    b.controller.set_observer(nullptr);
    expect_pass(out);
    ASSERT_EQ(rec.edges.size(), out.result.advance_edges);
    const auto clock = b.controller.cfg().clock_period;
    for (std::size_t i = 1; i < rec.edges.size(); ++i) {
        const auto& p = rec.edges[i - 1];
        const auto& e = rec.edges[i];
        if (e.tile == p.tile && e.chunk == p.chunk) {
            EXPECT_EQ(e.edge, p.edge + 1);
            EXPECT_EQ(e.time - p.time, clock);  // one clock apart, though the kernel time stood still
        } else {
            EXPECT_EQ(e.edge, 0u);
            EXPECT_GT(e.time, p.time);  // the load between chunks took time too
        }
    }
    // Tile 0, PE(0,0): C(0,0) = 1*1 + 2*0 + 3*2 = 7, term by term on edges 0, 1 (chunk 0) and 0 (chunk 1).
    EXPECT_EQ(rec.edges[0].acc00, 1);
    EXPECT_EQ(rec.edges[1].acc00, 1);
    EXPECT_EQ(rec.edges[1].consumed00, 2u);
    const auto chunk1 =
        std::find_if(rec.edges.begin(), rec.edges.end(), [](const auto& e) { return e.chunk == 1; });
    ASSERT_NE(chunk1, rec.edges.end());
    EXPECT_EQ(chunk1->acc00, 7);
    EXPECT_EQ(chunk1->consumed00, 3u);
}

TEST(EdgeObserver, IsNotCalledByTheFunctionalEngine) {
    auto& b = bench_set<int32_format>::get(2);
    recorder rec;
    b.controller.set_observer(&rec);
    job_options o;
    o.run.engine = engine_kind::functional;
    const auto out = b.run(seed_example<int32_format>(), o);
    b.controller.set_observer(nullptr);
    expect_pass(out);
    EXPECT_TRUE(rec.edges.empty());
}

}  // namespace
