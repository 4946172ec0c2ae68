// Unit tests of the controller's parts, each driven on its own without a SystemC simulation: the
// tile plan, the feeder, the two engines, the DMA port (over a fake forward interface), the output
// stage and the testbench's fault policy. Expected values come from the counting rules written out
// by hand in the comments, or from one part checked against an independent computation here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

// After <systemc>: the keeper's header uses sc_core without including it.
#include <tlm_utils/tlm_quantumkeeper.h>

#include "systolic/counting.h"
#include "systolic/cycle_engine.h"
#include "systolic/dma_port.h"
#include "systolic/feeder.h"
#include "systolic/functional_engine.h"
#include "systolic/log.h"
#include "systolic/output_stage.h"
#include "systolic/tile_plan.h"
#include "systolic/verify/fault.h"

namespace {

using namespace systolic;

matmul_job job_of(problem_shape s, std::uint64_t k_tile = 0, k_policy policy = k_policy::preserve,
                  tile_order order = tile_order::row_major) {
    matmul_job j = make_job(s, 4, 8, 0x1000, 0x100000, 0x200000);
    j.run.k_tile = k_tile;
    j.run.policy = policy;
    j.run.order = order;
    if (j.uses_partial_buffer()) j.partial = make_layout(0x300000, s.m, s.p, 8);
    return j;
}

// The steps of the plan's first tile: the plan is tile-major, so they lead it.
std::vector<plan_step> first_tile_steps(const tile_plan& plan) {
    std::vector<plan_step> v;
    for (const plan_step s : plan) {
        if (s.where != &plan.tiles().front()) break;
        v.push_back(s);
    }
    return v;
}

std::vector<step_kind> kinds_of_first_tile(const tile_plan& plan) {
    std::vector<step_kind> v;
    for (const plan_step& s : first_tile_steps(plan))
        v.push_back(s.kind);
    return v;
}

// ---- tile plan ----

// R x C tiles: ceil(M/R) x ceil(P/C) of them, each chunk kc + R + C - 2 edges.
TEST(TilePlan, RectangularTilesAndEdges) {
    const tile_plan plan(job_of({7, 5, 11}, 2), 3, 4);  // chunks of 2, 2, 1
    EXPECT_EQ(plan.rows(), 3u);
    EXPECT_EQ(plan.cols(), 4u);
    ASSERT_EQ(plan.tiles().size(), 9u);  // ceil(7/3) x ceil(11/4) = 3 x 3
    std::uint64_t real = 0;
    for (const auto& t : plan.tiles()) {
        EXPECT_EQ(t.r0 % 3, 0u);
        EXPECT_EQ(t.c0 % 4, 0u);
        EXPECT_EQ(t.rows, std::min<std::uint64_t>(3, 7 - t.r0));
        EXPECT_EQ(t.cols, std::min<std::uint64_t>(4, 11 - t.c0));
        real += t.rows * t.cols;
    }
    EXPECT_EQ(real, 77u);  // every element of C once
    std::vector<std::uint64_t> edges;
    for (const plan_step& st : first_tile_steps(plan))
        if (st.kind == step_kind::advance) edges.push_back(st.edges);
    EXPECT_EQ(edges, (std::vector<std::uint64_t>{7, 7, 6}));  // kc + 3 + 4 - 2
    // 4x3 is not 3x4: the tiles turn.
    const tile_plan turned(job_of({7, 5, 11}), 4, 3);
    EXPECT_EQ(turned.tiles().size(), 8u);  // ceil(7/4) x ceil(11/3) = 2 x 4
    // The counting rules agree.
    const auto c = count_job({7, 5, 11}, array_shape{3, 4}, 2);
    EXPECT_EQ(c.tiles, 9u);
    EXPECT_EQ(c.k_chunks, 3u);
    EXPECT_EQ(c.advance_edges_per_tile, 20u);  // 7 + 7 + 6
    EXPECT_EQ(c.advance_edges, 180u);
    EXPECT_EQ(c.macs_padded, 9u * 12 * 5);
    EXPECT_EQ(c.outputs_masked, 9u * 12 - 77);
    // The square overloads are the R = C case.
    EXPECT_EQ(count_job({7, 5, 11}, 3, 2).advance_edges,
              count_job({7, 5, 11}, array_shape{3, 3}, 2).advance_edges);
    EXPECT_EQ(advance_edges_per_tile(3, 5), advance_edges_per_tile(3, 3, 5));
}

// A plan with its own rule for a chunk's advance edges (a fabric of arrays still visits R x C
// tiles, but steps fewer arrays on the tiles at C's edges): the steps are the default plan's but
// for the edges, which the rule gives per tile and chunk.
TEST(TilePlan, TakesARuleForAChunksAdvanceEdges) {
    const matmul_job job = job_of({7, 5, 11}, 2, k_policy::partials);
    const tile_plan custom(
        job, 3, 4, [](const tile& t, std::uint64_t kc) { return 100 + 2 * kc + 10 * t.rows + t.cols; });
    const tile_plan plain(job, 3, 4);
    EXPECT_EQ(custom.tiles().size(), plain.tiles().size());
    ASSERT_EQ(custom.size(), plain.size());
    for (std::size_t i = 0; i < custom.size(); ++i) {
        const plan_step a = custom[i], b = plain[i];
        EXPECT_EQ(a.kind, b.kind);
        EXPECT_EQ(a.where->index, b.where->index);
        EXPECT_EQ(a.kc, b.kc);
        EXPECT_EQ(a.target, b.target);
        if (a.kind == step_kind::advance) {
            EXPECT_EQ(a.edges, 100 + 2 * a.kc + 10 * a.where->rows + a.where->cols);
            EXPECT_EQ(b.edges, a.kc + 3 + 4 - 2);
        }
    }
    EXPECT_THROW(tile_plan(job, 3, 4, tile_plan::edge_rule{}), std::invalid_argument);
}

TEST(TilePlan, SeedExampleIsFourTilesOfClearLoadAdvanceDrain) {
    const tile_plan plan(job_of({3, 3, 3}), 2);
    ASSERT_EQ(plan.tiles().size(), 4u);  // ceil(3/2) x ceil(3/2)
    EXPECT_EQ(kinds_of_first_tile(plan), (std::vector<step_kind>{step_kind::clear, step_kind::load,
                                                                 step_kind::advance, step_kind::drain}));
    EXPECT_EQ(plan.size(), 16u);
    const plan_step adv = plan[2];
    EXPECT_EQ(adv.edges, 5u);  // K + 2(N-1) = 3 + 2
    EXPECT_EQ(adv.terms, 3u);
    EXPECT_EQ(adv.k0, 0u);
    EXPECT_EQ(adv.kc, 3u);
    // Steps 4..7 belong to the second tile, whose origin is (0,2) with one real column.
    EXPECT_EQ(plan[5].where->c0, 2u);
    EXPECT_EQ(plan[5].where->cols, 1u);
    EXPECT_EQ(plan[5].where->rows, 2u);
}

TEST(TilePlan, PreservedChunksClearOnceAndDrainOnce) {
    const tile_plan plan(job_of({2, 5, 2}, 2), 2);  // chunks of 2, 2, 1
    EXPECT_EQ(plan.chunks(), 3u);
    EXPECT_EQ(
        kinds_of_first_tile(plan),
        (std::vector<step_kind>{step_kind::clear, step_kind::load, step_kind::advance, step_kind::load,
                                step_kind::advance, step_kind::load, step_kind::advance, step_kind::drain}));
    std::vector<std::uint64_t> terms, k0s, edges;
    for (const plan_step& st : first_tile_steps(plan)) {
        if (st.kind != step_kind::advance) continue;
        terms.push_back(st.terms);
        k0s.push_back(st.k0);
        edges.push_back(st.edges);
    }
    EXPECT_EQ(terms, (std::vector<std::uint64_t>{2, 4, 5}));  // the sum keeps growing
    EXPECT_EQ(k0s, (std::vector<std::uint64_t>{0, 2, 4}));
    EXPECT_EQ(edges, (std::vector<std::uint64_t>{4, 4, 3}));  // kc + 2(N-1)
    EXPECT_EQ(plan[7].target, drain_target::c);
    EXPECT_FALSE(plan[7].combine);
}

TEST(TilePlan, PartialSumsClearAndDrainEveryChunk) {
    const tile_plan plan(job_of({2, 5, 2}, 2, k_policy::partials), 2);
    std::vector<drain_target> targets;
    std::vector<bool> combine, fresh;
    const std::vector<plan_step> steps = first_tile_steps(plan);
    for (const plan_step& s : steps) {
        if (s.kind == step_kind::drain) {
            targets.push_back(s.target);
            combine.push_back(s.combine);
        }
        if (s.kind == step_kind::advance) {
            fresh.push_back(s.fresh);
            EXPECT_EQ(s.terms, s.kc);  // each partial starts from zero
        }
    }
    EXPECT_EQ(targets,
              (std::vector<drain_target>{drain_target::partial, drain_target::partial, drain_target::c}));
    EXPECT_EQ(combine, (std::vector<bool>{false, true, true}));
    EXPECT_EQ(fresh, (std::vector<bool>{true, true, true}));
    EXPECT_EQ(steps.size(), 12u);
    EXPECT_EQ(plan.size(), 12u * plan.tiles().size());  // every tile takes the same steps
}

TEST(TilePlan, FollowsTheTileOrderAndAddsUpToTheCountingRule) {
    std::mt19937_64 rng(7);
    for (int c = 0; c < 100; ++c) {
        const problem_shape s{1 + rng() % 20, 1 + rng() % 20, 1 + rng() % 20};
        const std::size_t n = 1 + rng() % 6;
        const std::uint64_t kt = rng() % 4 == 0 ? 0 : 1 + rng() % s.k;
        const auto policy = rng() % 2 ? k_policy::partials : k_policy::preserve;
        const auto order = static_cast<tile_order>(rng() % 4);
        matmul_job job = job_of(s, kt, policy, order);
        job.run.order_seed = rng();
        const tile_plan plan(job, n);
        const auto tiles = plan_tiles(s.m, s.p, n, order, job.run.order_seed);
        std::uint64_t edges = 0, drains_to_c = 0;
        std::size_t t = 0;
        for (const plan_step st : plan) {
            if (st.kind == step_kind::clear && st.chunk == 0) {
                ASSERT_LT(t, tiles.size());
                EXPECT_EQ(st.where->r0, tiles[t].r0);
                EXPECT_EQ(st.where->c0, tiles[t].c0);
                ++t;
            }
            if (st.kind == step_kind::advance) edges += st.edges;
            if (st.kind == step_kind::drain && st.target == drain_target::c) ++drains_to_c;
        }
        EXPECT_EQ(t, tiles.size());
        EXPECT_EQ(edges, count_job(s, n, kt).advance_edges);
        EXPECT_EQ(drains_to_c, tiles.size());  // C is written once per tile
    }
}

// ---- feeder ----

// The feeder's streams as the array takes them in: after edge e, PE(i, 0) holds the A token that
// entered row i on edge e and PE(0, j) the B token that entered column j.
TEST(Feeder, StreamsAreSkewedByRowAndColumnWithBubblesOutside) {
    const std::size_t n = 3;
    const std::uint64_t kc = 4;
    const tile t{0, 0, 0, 2, 3};
    feeder<int32_format> f(n);
    f.plan(t);
    f.begin_chunk(kc);
    for (std::size_t i = 0; i < 2; ++i)  // row 2 is padding: left zero
        for (std::uint64_t k = 0; k < kc; ++k)
            f.a_row(i)[k] = std::int32_t(10 * (i + 1) + k);
    for (std::uint64_t k = 0; k < kc; ++k)
        for (std::size_t j = 0; j < n; ++j)
            f.b_row(k)[j] = std::int32_t(100 * (j + 1) + k);
    cycle_engine<int32_format> eng(n);
    const array_core<int32_format>& core = *eng.array();
    for (std::uint64_t e = 0; e < kc + 2 * (n - 1); ++e) {
        eng.advance(f, t, e, 1, nullptr);
        for (std::size_t i = 0; i < n; ++i) {
            // Row i's term k enters at edge k + i.
            const bool in = e >= i && e - i < kc;
            EXPECT_EQ(core.a(i, 0).valid, in) << "edge " << e << " row " << i;
            EXPECT_EQ(core.a(i, 0).value, in && i < 2 ? std::int32_t(10 * (i + 1) + (e - i)) : 0);
            EXPECT_EQ(core.b(0, i).valid, in) << "edge " << e << " column " << i;
            EXPECT_EQ(core.b(0, i).value, in ? std::int32_t(100 * (i + 1) + (e - i)) : 0);
        }
    }
}

TEST(Feeder, TablesDecideDelayAndValidity) {
    feeder<int32_format> f(2);
    f.plan(tile{});
    f.begin_chunk(1);
    f.a_row(0)[0] = 5;
    f.b_row(0)[1] = 6;
    f.tables().row_delay[0] = 3;
    f.tables().col_valid[1] = 0;
    cycle_engine<int32_format> eng(2);
    const array_core<int32_format>& core = *eng.array();
    eng.advance(f, tile{}, 0, 1, nullptr);
    EXPECT_FALSE(core.a(0, 0).valid);  // row 0 starts 3 edges late
    EXPECT_TRUE(core.b(0, 0).valid);
    eng.advance(f, tile{}, 1, 1, nullptr);
    EXPECT_FALSE(core.b(0, 1).valid);  // in its stream, but marked invalid
    EXPECT_EQ(core.b(0, 1).value, 0);  // and so it carries no value
    eng.advance(f, tile{}, 2, 2, nullptr);
    EXPECT_TRUE(core.a(0, 0).valid);
    EXPECT_EQ(core.a(0, 0).value, 5);
}

// ---- engines: stepped against computed, part against part ----

template <class Format>
typename Format::operand_type random_operand(std::mt19937_64& rng, bool extreme) {
    using T = typename Format::operand_type;
    if constexpr (std::is_same_v<Format, int8_format>) {
        return extreme ? T(rng() % 2 ? 127 : -128) : T(int(rng() % 255) - 127);
    } else if constexpr (std::is_same_v<Format, int32_format>) {
        return extreme ? T(rng() % 2 ? std::numeric_limits<std::int32_t>::max()
                                     : std::numeric_limits<std::int32_t>::min())
                       : T(std::int64_t(rng() % 2001) - 1000);
    } else {
        const float v = float(std::int64_t(rng() % 2001) - 1000) / 997.0f;
        return value_from<T>(extreme ? v * 1e30f : v);
    }
}

// Square N x N arrays, or (rectangular) R x C with R and C drawn apart.
template <class Format>
void engines_agree(std::uint64_t seed, bool rectangular = false) {
    std::mt19937_64 rng(seed);
    for (int c = 0; c < 40; ++c) {
        const std::size_t n = 1 + rng() % 9;
        const std::size_t rows = n, cols = rectangular ? 1 + rng() % 9 : n;
        const tile t{0, 0, 0, 1 + rng() % rows, 1 + rng() % cols};
        const bool extreme = rng() % 3 == 0;
        const auto mode = rng() % 2 ? overflow_mode::saturate : overflow_mode::wrap;
        cycle_engine<Format> cyc(rows, cols);
        functional_engine<Format> fun(rows, cols);
        cyc.set_overflow(mode);
        fun.set_overflow(mode);
        cyc.clear();
        fun.clear();
        feeder<Format> f(rows, cols);
        f.plan(t);
        std::uint64_t terms = 0;
        const int chunks = 1 + int(rng() % 3);
        for (int ch = 0; ch < chunks; ++ch) {  // chunks that continue the sum (k_policy::preserve)
            const std::uint64_t kc = 1 + rng() % 12;
            f.begin_chunk(kc);
            for (std::size_t i = 0; i < t.rows; ++i)
                for (std::uint64_t k = 0; k < kc; ++k)
                    f.a_row(i)[k] = random_operand<Format>(rng, extreme);
            for (std::uint64_t k = 0; k < kc; ++k)
                for (std::size_t j = 0; j < t.cols; ++j)
                    f.b_row(k)[j] = random_operand<Format>(rng, extreme);
            const std::uint64_t edges = advance_edges_per_tile(rows, cols, kc);
            const std::uint64_t split = rng() % (edges + 1);  // issued in two slices, as per quantum
            cyc.advance(f, t, 0, split, nullptr);
            cyc.advance(f, t, split, edges - split, nullptr);
            fun.advance(f, t, 0, split, nullptr);
            fun.advance(f, t, split, edges - split, nullptr);
            terms += kc;
            ASSERT_TRUE(cyc.complete(terms))
                << "array " << rows << "x" << cols << " kc=" << kc << " chunk " << ch << " rows " << t.rows
                << " cols " << t.cols << " consumed(0,0)=" << cyc.array()->consumed(0, 0)
                << " last=" << cyc.array()->consumed(rows - 1, cols - 1);
            ASSERT_TRUE(fun.complete(terms));
        }
        EXPECT_EQ(
            std::memcmp(cyc.accumulators(), fun.accumulators(), rows * cols * sizeof(*cyc.accumulators())), 0)
            << Format::name << " case " << c;
        EXPECT_EQ(cyc.edges(), fun.edges());
        EXPECT_EQ(cyc.macs(), fun.macs());
        EXPECT_EQ(cyc.macs_in(t.rows, t.cols), fun.macs_in(t.rows, t.cols));
        EXPECT_EQ(cyc.overflows_in(t.rows, t.cols), fun.overflows_in(t.rows, t.cols))
            << Format::name << " case " << c;
    }
}

TEST(Engines, CycleAndFunctionalAgreeBitForBitInt8) {
    engines_agree<int8_format>(1);
}
TEST(Engines, CycleAndFunctionalAgreeBitForBitInt32) {
    engines_agree<int32_format>(2);
}
TEST(Engines, CycleAndFunctionalAgreeBitForBitFp32) {
    engines_agree<fp32_format>(3);
}
TEST(Engines, CycleAndFunctionalAgreeBitForBitBf16) {
    engines_agree<bf16_format>(4);
}
TEST(Engines, RectangularArraysAgreeBitForBit) {
    engines_agree<int8_format>(11, true);
    engines_agree<int32_format>(12, true);
    engines_agree<fp32_format>(13, true);
    engines_agree<bf16_format>(14, true);
}

// R x C: the last term of a chunk of kc reaches PE(R-1, C-1) on edge (kc-1) + (R-1) + (C-1), so the
// array completes after exactly kc + R + C - 2 stepped edges and not one before; and C(i, j) is the
// dot product of A's row i and B's column j (worked out here, not by the model's kernel).
TEST(Engines, RectangularArrayCompletesAfterKcPlusRowsPlusColsMinusTwoEdges) {
    for (const auto& [rows, cols] :
         std::vector<std::pair<std::size_t, std::size_t>>{{1, 4}, {4, 1}, {3, 5}, {5, 3}, {2, 7}}) {
        const std::uint64_t kc = 6;
        cycle_engine<int32_format> e(rows, cols);
        EXPECT_EQ(e.rows(), rows);
        EXPECT_EQ(e.cols(), cols);
        feeder<int32_format> f(rows, cols);
        EXPECT_EQ(f.rows(), rows);
        EXPECT_EQ(f.cols(), cols);
        const tile t{0, 0, 0, rows, cols};
        f.plan(t);
        f.begin_chunk(kc);
        for (std::size_t i = 0; i < rows; ++i)
            for (std::uint64_t k = 0; k < kc; ++k)
                f.a_row(i)[k] = std::int32_t(i * 10 + k + 1);
        for (std::uint64_t k = 0; k < kc; ++k)
            for (std::size_t j = 0; j < cols; ++j)
                f.b_row(k)[j] = std::int32_t(j * 3) - std::int32_t(k);
        e.clear();
        const std::uint64_t edges = kc + rows + cols - 2;
        EXPECT_EQ(advance_edges_per_tile(rows, cols, kc), edges);
        e.advance(f, t, 0, edges - 1, nullptr);
        EXPECT_FALSE(e.complete(kc)) << rows << "x" << cols;
        const auto stuck = e.stuck(kc);
        ASSERT_EQ(stuck.size(), 1u) << rows << "x" << cols;  // only the far corner is still waiting
        EXPECT_EQ(stuck[0].row, rows - 1);
        EXPECT_EQ(stuck[0].col, cols - 1);
        e.advance(f, t, edges - 1, 1, nullptr);
        EXPECT_TRUE(e.complete(kc)) << rows << "x" << cols;
        EXPECT_EQ(e.edges(), edges);
        EXPECT_EQ(e.macs(), rows * cols * kc);
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) {
                std::int64_t want = 0;
                for (std::uint64_t k = 0; k < kc; ++k)
                    want += std::int64_t(i * 10 + k + 1) * (std::int64_t(j * 3) - std::int64_t(k));
                EXPECT_EQ(e.accumulators()[i * cols + j], want)
                    << rows << "x" << cols << " PE " << i << "," << j;
                EXPECT_EQ(e.array()->accumulator(i, j), want);
            }
    }
}

TEST(Engines, CycleEngineCallsBackAfterEveryEdge) {
    struct counter final : edge_callback {
        std::vector<std::uint64_t> seen;
        void after_edge(std::uint64_t e) override { seen.push_back(e); }
    } cb;
    cycle_engine<int32_format> e(2);
    feeder<int32_format> f(2);
    f.plan(tile{0, 0, 0, 2, 2});
    f.begin_chunk(3);
    e.clear();
    e.advance(f, tile{0, 0, 0, 2, 2}, 0, 2, &cb);
    e.advance(f, tile{0, 0, 0, 2, 2}, 2, 3, &cb);
    EXPECT_EQ(cb.seen, (std::vector<std::uint64_t>{0, 1, 2, 3, 4}));
    EXPECT_EQ(e.edges(), 5u);
    ASSERT_NE(e.array(), nullptr);
}

// One cycle engine runs an os job, a ws job and an os job again: the dataflow each job sets (once,
// by set_dataflow) decides which stepped grid clear() clears and the counters read, and array().
TEST(Engines, CycleEngineFollowsEachJobsDataflow) {
    cycle_engine<int32_format> e(2);
    feeder<int32_format> f(2);
    const tile t{0, 0, 0, 2, 2};
    f.plan(t);
    f.begin_chunk(3);
    const auto os_job = [&] {
        e.set_dataflow(dataflow_kind::os);
        e.clear();
        e.advance(f, t, 0, 5, nullptr);  // 3 + 2 + 2 - 2 edges
        EXPECT_EQ(e.edges(), 5u);
        EXPECT_EQ(e.macs(), 4u * 3);
        EXPECT_TRUE(e.complete(3));
        EXPECT_EQ(e.partial_overflows(), 0u);
        EXPECT_NE(e.array(), nullptr);
    };
    os_job();

    // A ws fold: T = 3 rows of A (L = 2 terms each) stream past the 2 x 2 identity block of B.
    const std::vector<std::int32_t> a{1, 2, 3, 4, 5, 6}, b{1, 0, 0, 1};
    std::vector<int32_format::accumulator_type> acc(3 * 2);
    engine<int32_format>::fold_type fold;
    fold.stream = a.data(), fold.stream_t = 2, fold.stream_i = 1;
    fold.weight = b.data(), fold.weight_i = 2, fold.weight_j = 1;
    fold.t = 3, fold.l = 2, fold.n = 2;
    fold.acc = acc.data(), fold.acc_t = 2, fold.acc_j = 1;
    e.set_dataflow(dataflow_kind::ws);
    e.clear();
    e.preload(fold, 0, 2, nullptr);
    e.stream(fold, 0, 5, nullptr);  // 3 + 2 + 2 - 2 edges
    EXPECT_EQ(e.edges(), 2u + 5);
    EXPECT_EQ(e.macs(), 4u * 3);  // every PE consumed T terms
    EXPECT_TRUE(e.complete(3));
    EXPECT_EQ(e.array(), nullptr);
    ASSERT_NE(e.stationary_array(), nullptr);
    EXPECT_EQ(acc, (std::vector<int32_format::accumulator_type>{1, 2, 3, 4, 5, 6}));

    os_job();  // the counters are the output-stationary array's again
}

TEST(Engines, FunctionalCountersFollowTheCountingRule) {
    functional_engine<int32_format> e(4);
    feeder<int32_format> f(4);
    const tile t{0, 0, 0, 3, 2};
    f.plan(t);
    f.begin_chunk(5);
    e.clear();
    e.advance(f, t, 0, 11, nullptr);  // 5 + 2*3
    EXPECT_EQ(e.edges(), 11u);
    EXPECT_EQ(e.macs(), 16u * 5);     // every PE consumes the chunk's terms, padding included
    EXPECT_EQ(e.macs_in(3, 2), 30u);  // 3 x 2 real outputs x 5 terms
    EXPECT_TRUE(e.complete(5));
    EXPECT_FALSE(e.complete(4));
    EXPECT_EQ(e.stuck(4).size(), 16u);
    EXPECT_EQ(e.array(), nullptr);  // nothing is stepped
}

// ---- DMA port, over a fake forward interface ----

class fake_target final : public tlm::tlm_fw_transport_if<> {
public:
    std::vector<unsigned char> mem = std::vector<unsigned char>(0x3000);
    bool dmi_allowed = true;
    bool grant = true;
    bool grant_beside = false;  // a grant that does not cover the requested address
    int dmi_requests = 0;
    int transports = 0;

    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) override {
        ++transports;
        delay += sc_core::sc_time(10, sc_core::SC_NS);
        const auto addr = t.get_address();
        if (addr + t.get_data_length() > mem.size() || addr >= 0x2000) {  // 0x2000.. is not memory
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        if (t.is_read())
            std::memcpy(t.get_data_ptr(), &mem[addr], t.get_data_length());
        else
            std::memcpy(&mem[addr], t.get_data_ptr(), t.get_data_length());
        t.set_dmi_allowed(dmi_allowed);
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
    // Two regions of 0x1000 each, granted separately, as two memories would.
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& d) override {
        ++dmi_requests;
        const std::uint64_t start = grant_beside ? 0x1800 : t.get_address() / 0x1000 * 0x1000;
        d.set_start_address(start);
        d.set_end_address(start + 0xfff);
        if (!grant) return false;
        d.set_dmi_ptr(&mem[start]);
        d.allow_read_write();
        d.set_read_latency(sc_core::sc_time(1, sc_core::SC_NS));
        d.set_write_latency(sc_core::sc_time(1, sc_core::SC_NS));
        return true;
    }
    tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload&, tlm::tlm_phase&,
                                       sc_core::sc_time&) override {
        return tlm::TLM_COMPLETED;
    }
    unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
};

struct dma_rig {
    dma_rig() {
        // A quantum far beyond these tests' time, so the keeper never needs a process to sync.
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_SEC));
        qk.reset();
        port.bind(target);
    }
    fake_target target;
    tlm_utils::tlm_quantumkeeper qk;
    dma_port port{qk, get_logger("parts_test.dma")};
};

TEST(DmaPort, UsesBTransportUntilDmiIsGrantedThenDmi) {
    dma_rig r;
    r.target.mem[0x10] = 42;
    unsigned char v = 0;
    ASSERT_TRUE(r.port.read(0x10, &v, 1, dma_stream::a).ok());
    EXPECT_EQ(v, 42);
    EXPECT_EQ(r.port.transport_accesses(), 1u);
    EXPECT_EQ(r.target.dmi_requests, 1);  // the dmi_allowed hint asked for a pointer
    EXPECT_EQ(r.qk.get_local_time(), sc_core::sc_time(10, sc_core::SC_NS));
    const unsigned char w = 7;
    ASSERT_TRUE(r.port.write(0x20, &w, 1, dma_stream::c).ok());
    EXPECT_EQ(r.target.mem[0x20], 7);
    EXPECT_EQ(r.port.dmi_accesses(), 1u);  // through the pointer: no transport
    EXPECT_EQ(r.target.transports, 1);
    EXPECT_EQ(r.qk.get_local_time(), sc_core::sc_time(11, sc_core::SC_NS));  // + DMI write latency
}

TEST(DmaPort, KeepsSeveralRangesAndDropsTheInvalidatedOne) {
    dma_rig r;
    unsigned char v;
    ASSERT_TRUE(r.port.read(0x0100, &v, 1, dma_stream::a).ok());
    ASSERT_TRUE(r.port.read(0x1100, &v, 1, dma_stream::b).ok());
    EXPECT_EQ(r.port.cached_ranges(), 2u);
    ASSERT_TRUE(r.port.read(0x0200, &v, 1, dma_stream::a).ok());
    ASSERT_TRUE(r.port.read(0x1200, &v, 1, dma_stream::b).ok());
    EXPECT_EQ(r.target.transports, 2);  // both later reads went through DMI
    r.port.invalidate(0x1000, 0x1003);
    EXPECT_EQ(r.port.cached_ranges(), 1u);
    ASSERT_TRUE(r.port.read(0x1200, &v, 1, dma_stream::b).ok());
    EXPECT_EQ(r.target.transports, 3);  // back to b_transport for the revoked range
    ASSERT_TRUE(r.port.read(0x0300, &v, 1, dma_stream::a).ok());
    EXPECT_EQ(r.target.transports, 3);  // the other range stayed
}

TEST(DmaPort, DoesNotAskAgainWhereATargetRefused) {
    dma_rig r;
    r.target.grant = false;
    unsigned char v;
    for (int i = 0; i < 5; ++i)
        ASSERT_TRUE(r.port.read(0x100 + i, &v, 1, dma_stream::a).ok());
    EXPECT_EQ(r.target.dmi_requests, 1);
    r.port.invalidate(0, 0xfff);  // the map changed: asking again is allowed
    r.target.grant = true;
    ASSERT_TRUE(r.port.read(0x100, &v, 1, dma_stream::a).ok());
    EXPECT_EQ(r.target.dmi_requests, 2);
    EXPECT_EQ(r.port.cached_ranges(), 1u);
}

TEST(DmaPort, IgnoresAGrantThatDoesNotCoverTheAddress) {
    dma_rig r;
    r.target.grant_beside = true;
    unsigned char v;
    ASSERT_TRUE(r.port.read(0x100, &v, 1, dma_stream::a).ok());
    EXPECT_EQ(r.port.cached_ranges(), 0u);
    ASSERT_TRUE(r.port.read(0x100, &v, 1, dma_stream::a).ok());
    EXPECT_EQ(r.target.transports, 2);
}

TEST(DmaPort, ReturnsErrorsAsValues) {
    dma_rig r;
    unsigned char buf[4] = {};
    const dma_status st = r.port.read(0x2000, buf, 4, dma_stream::b);
    EXPECT_FALSE(st.ok());
    EXPECT_EQ(st.response, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    EXPECT_NE(st.message.find("bus error while moving B"), std::string::npos) << st.message;
    EXPECT_NE(st.message.find("TLM_ADDRESS_ERROR_RESPONSE"), std::string::npos) << st.message;
    dma_port unbound(r.qk, get_logger("parts_test.unbound"));
    EXPECT_FALSE(unbound.read(0, buf, 1, dma_stream::a).ok());
}

// ---- output stage ----

TEST(OutputStage, WritesOnlyTheMaskedBlockOneRowAtATime) {
    dma_rig r;
    r.target.dmi_allowed = false;
    matmul_job job = make_job({3, 1, 3}, 4, 8, 0x100, 0x200, 0x400);
    const tile t{0, 0, 2, 3, 1};  // the tile at (0,2): 3 real rows, 1 real column
    plan_step s;
    s.kind = step_kind::drain;
    s.where = &t;
    s.last_chunk = true;
    std::vector<std::int64_t> acc(4 * 4);
    for (std::size_t i = 0; i < acc.size(); ++i)
        acc[i] = std::int64_t(i) + 1;
    output_stage<int32_format> out(4);
    drain_counts d;
    ASSERT_TRUE(out.drain(job, s, acc.data(), t.rows, t.cols, r.port, d).ok());
    EXPECT_EQ(d.real_outputs, 3u);
    EXPECT_EQ(r.target.transports, 3);  // one write per real row
    for (std::uint64_t i = 0; i < 3; ++i) {
        std::int64_t v;
        std::memcpy(&v, &r.target.mem[job.c.address(i, 2)], 8);
        EXPECT_EQ(v, std::int64_t(i * 4 + 1));  // PE(i, 0) of the tile
    }
    std::int64_t untouched;
    std::memcpy(&untouched, &r.target.mem[job.c.address(0, 1)], 8);
    EXPECT_EQ(untouched, 0);
}

TEST(OutputStage, CombinesPartialSumsAndRequantizes) {
    dma_rig r;
    matmul_job job = make_job({1, 4, 1}, 4, 1, 0x100, 0x200, 0x400);
    job.run.k_tile = 2;
    job.run.policy = k_policy::partials;
    job.partial = make_layout(0x800, 1, 1, 8);
    job.run.quant.enabled = true;
    job.run.quant.scale = 0.5;
    const tile t{0, 0, 0, 1, 1};
    plan_step first, last;
    first.kind = last.kind = step_kind::drain;
    first.where = last.where = &t;
    first.target = drain_target::partial;
    last.combine = true;
    last.last_chunk = true;
    output_stage<int32_format> out(1);
    drain_counts d;
    std::int64_t a = 300, b = 1;  // 300 + 1 = 301; 301 x 0.5 = 150.5 -> 150 (ties to even) -> 127 saturated
    ASSERT_TRUE(out.drain(job, first, &a, 1, 1, r.port, d).ok());
    std::int64_t stored;
    std::memcpy(&stored, &r.target.mem[0x800], 8);
    EXPECT_EQ(stored, 300);
    ASSERT_TRUE(out.drain(job, last, &b, 1, 1, r.port, d).ok());
    EXPECT_EQ(static_cast<std::int8_t>(r.target.mem[0x400]), 127);
    EXPECT_EQ(d.saturated_outputs, 1u);
    EXPECT_EQ(d.real_outputs, 1u);
}

TEST(OutputStage, EveryNanLeavesAsTheCanonicalQuietNan) {
    dma_rig r;
    matmul_job job = make_job({1, 1, 2}, 4, 4, 0x100, 0x200, 0x400);
    const tile t{0, 0, 0, 1, 2};
    plan_step s;
    s.kind = step_kind::drain;
    s.where = &t;
    s.last_chunk = true;
    std::uint32_t bits[2] = {0xffc00001u, 0x7f800001u};  // a negative quiet NaN, a signalling NaN
    float acc[2];
    std::memcpy(acc, bits, sizeof acc);
    output_stage<fp32_format> out(2);
    drain_counts d;
    ASSERT_TRUE(out.drain(job, s, acc, 1, 2, r.port, d).ok());
    std::uint32_t got[2];
    std::memcpy(got, &r.target.mem[0x400], sizeof got);
    EXPECT_EQ(got[0], 0x7fc00000u);
    EXPECT_EQ(got[1], 0x7fc00000u);
}

TEST(OutputStage, ABusErrorStopsTheDrainAndSaysWhere) {
    dma_rig r;
    matmul_job job = make_job({2, 1, 2}, 4, 8, 0x100, 0x200, 0x1ff0);  // row 1 of C lies beyond memory
    const tile t{0, 0, 0, 2, 2};
    plan_step s;
    s.kind = step_kind::drain;
    s.where = &t;
    s.last_chunk = true;
    std::vector<std::int64_t> acc(4, 1);
    output_stage<int32_format> out(2);
    drain_counts d;
    const dma_status st = out.drain(job, s, acc.data(), 2, 2, r.port, d);
    EXPECT_FALSE(st.ok());
    EXPECT_NE(st.message.find("moving C"), std::string::npos) << st.message;
    EXPECT_EQ(d.real_outputs, 2u);  // row 0 was written; row 1 was not
}

// ---- the testbench's fault policy ----

TEST(FaultPolicy, EachFaultChangesOnlyItsOwnHook) {
    plan_step last;
    last.last_chunk = true;
    plan_step early;
    const tile t{0, 4, 6, 1, 2};
    for (auto f : {verify::fault::none, verify::fault::clear_between_k, verify::fault::invalid_padding,
                   verify::fault::no_mask, verify::fault::global_skew, verify::fault::skip_advance,
                   verify::fault::extra_advance}) {
        verify::fault_policy<int32_format> p(f);
        feeder<int32_format> in(3);
        in.plan(t);
        p.feed(t, in.tables());
        EXPECT_EQ(in.tables().row_delay[1], f == verify::fault::global_skew ? 5u : 1u) << to_string(f);
        EXPECT_EQ(in.tables().col_valid[2], f == verify::fault::invalid_padding ? 0 : 1) << to_string(f);
        const std::uint64_t want = f == verify::fault::skip_advance    ? 9
                                   : f == verify::fault::extra_advance ? 11
                                                                       : 10;
        EXPECT_EQ(p.edges(last, 10), want) << to_string(f);
        EXPECT_EQ(p.edges(early, 10), 10u) << to_string(f);
        std::size_t rows = 1, cols = 2;
        p.drain_block(last, 3, 3, rows, cols);
        EXPECT_EQ(rows, f == verify::fault::no_mask ? 3u : 1u) << to_string(f);
        EXPECT_EQ(verify::parse_fault(to_string(f)), f);
    }
    EXPECT_TRUE(verify::needs_cycle_engine(verify::fault::extra_advance));
    EXPECT_FALSE(verify::needs_cycle_engine(verify::fault::no_mask));
}

}  // namespace

namespace {

TEST(JobResult, EdgesPerTileAreReportedOnlyWhenEveryTileAgrees) {
    using systolic::job_result;
    using systolic::tile_report;
    job_result r;
    EXPECT_FALSE(systolic::uniform_edges_per_tile(r));  // no tile ran
    tile_report t;
    t.advance_edges = 5;
    r.tiles = {t, t};
    EXPECT_EQ(systolic::uniform_edges_per_tile(r), 5u);
    r.tiles[1].advance_edges = 4;
    EXPECT_FALSE(systolic::uniform_edges_per_tile(r));
    EXPECT_STREQ(systolic::counts_kind(systolic::engine_kind::cycle), "stepped");
    EXPECT_STREQ(systolic::counts_kind(systolic::engine_kind::functional), "modelled");
}

}  // namespace

namespace {

TEST(DmaPort, ReadsABlockThroughDmiOrRowByRow) {
    for (bool grant : {true, false}) {
        dma_rig r;
        r.target.grant = grant;
        for (int i = 0; i < 64; ++i)
            r.target.mem[0x100 + i] = static_cast<unsigned char>(i);
        unsigned char warm;
        ASSERT_TRUE(r.port.read(0x100, &warm, 1, dma_stream::a).ok());  // the first access asks for DMI
        const int transports = r.target.transports;
        unsigned char out[3 * 5] = {};
        // Three rows of 4 bytes, 16 bytes apart, into rows 5 bytes apart.
        ASSERT_TRUE(r.port.read_block(0x100, 3, 4, 16, out, 5, dma_stream::b).ok());
        for (int row = 0; row < 3; ++row)
            for (int c = 0; c < 4; ++c)
                EXPECT_EQ(out[row * 5 + c], row * 16 + c) << grant;
        EXPECT_EQ(r.target.transports - transports, grant ? 0 : 3);
    }
    dma_rig r;
    unsigned char out[8];
    EXPECT_FALSE(
        r.port.read_block(0x1ff8, 2, 4, 0x10, out, 4, dma_stream::b).ok());  // the second row is not memory
}

}  // namespace

namespace {

TEST(DmaPort, AReadOnlyGrantIsNotAskedForAgainOnWrites) {
    struct read_only_target final : public tlm::tlm_fw_transport_if<> {
        fake_target inner;
        int requests = 0;
        void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& d) override {
            inner.b_transport(t, d);
        }
        bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& d) override {
            ++requests;
            const bool ok = inner.get_direct_mem_ptr(t, d);
            d.allow_read();
            return ok;
        }
        tlm::tlm_sync_enum nb_transport_fw(tlm::tlm_generic_payload& t, tlm::tlm_phase& p,
                                           sc_core::sc_time& d) override {
            return inner.nb_transport_fw(t, p, d);
        }
        unsigned int transport_dbg(tlm::tlm_generic_payload& t) override { return inner.transport_dbg(t); }
    } target;
    dma_rig r;
    r.port.bind(target);
    unsigned char v = 1;
    for (int i = 0; i < 5; ++i)
        ASSERT_TRUE(r.port.write(0x100 + i, &v, 1, dma_stream::c).ok());
    EXPECT_EQ(target.requests, 1);
    EXPECT_EQ(r.port.cached_ranges(), 1u);
    EXPECT_EQ(target.inner.transports, 5);  // writes still go through b_transport
    unsigned char got;
    ASSERT_TRUE(r.port.read(0x100, &got, 1, dma_stream::a).ok());
    EXPECT_EQ(target.inner.transports, 5);  // reads use the pointer
}

}  // namespace
