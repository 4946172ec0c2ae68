// Plain C++ tests of the model core and the testbench checkers: counting rules, tiling plan, the
// array's stepping rule, number format, layouts, memory, job validation, scoreboard and reference
// GEMM. No SystemC simulation runs here. Expected values come from seeds 000/001/003 or are
// derived by hand in the comments; none is taken from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tlm>
#include <tuple>
#include <utility>
#include <vector>

#include "problem.h"
#include "reference_gemm.h"
#include "scoreboard.h"
#include "systolic/array_core.h"
#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/matrix_layout.h"
#include "systolic/memory_core.h"
#include "systolic/number_format.h"
#include "systolic/tiling.h"
#include "systolic/token.h"

namespace {

using systolic::array_core;
using systolic::count_job;
using systolic::int32_format;
using systolic::matrix_layout;
using systolic::memory_core;
using systolic::plan_tiles;
using systolic::problem_shape;
using systolic::tile;
using systolic::tile_order;

using core = array_core<int32_format>;
using tok = core::token_type;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u64 = std::uint64_t;

bool contains_text(const std::vector<std::string>& lines, const std::string& needle) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines)
        out += l + "\n";
    return out;
}

// ------------------------------------------------------------------------------------------------
// Counting
// ------------------------------------------------------------------------------------------------

TEST(Counting, CeilDiv) {
    EXPECT_EQ(systolic::ceil_div(3, 2), 2u);
    EXPECT_EQ(systolic::ceil_div(4, 2), 2u);
    EXPECT_EQ(systolic::ceil_div(1, 8), 1u);
    EXPECT_EQ(systolic::ceil_div(9, 3), 3u);
    EXPECT_EQ(systolic::ceil_div(10, 3), 4u);
}

// Seed 001/003: N=2, M=P=K=3. Four tiles of five edges each, 20 edges, 48 padded MACs, 27 real.
TEST(Counting, SeedExample) {
    const auto c = count_job(problem_shape{3, 3, 3}, 2);
    EXPECT_EQ(c.tiles, 4u);
    EXPECT_EQ(c.advance_edges_per_tile, 5u);
    EXPECT_EQ(c.advance_edges, 20u);
    EXPECT_EQ(c.macs_padded, 48u);
    EXPECT_EQ(c.macs_real, 27u);
    EXPECT_EQ(c.outputs_real, 9u);
    EXPECT_EQ(c.outputs_masked, 7u);  // 4 tiles x 4 PEs - 9 real outputs
    EXPECT_EQ(systolic::advance_edges_per_tile(2, 3), 5u);
}

TEST(Counting, SingleElementOnSinglePe) {
    const auto c = count_job(problem_shape{1, 1, 1}, 1);
    EXPECT_EQ(c.tiles, 1u);
    EXPECT_EQ(c.advance_edges_per_tile, 1u);
    EXPECT_EQ(c.advance_edges, 1u);
    EXPECT_EQ(c.macs_padded, 1u);
    EXPECT_EQ(c.macs_real, 1u);
    EXPECT_EQ(c.outputs_real, 1u);
    EXPECT_EQ(c.outputs_masked, 0u);
}

// One 8x8 tile covers a 3x5 result: 4 + 2*7 = 18 edges, 64*4 padded MACs, 3*4*5 real.
TEST(Counting, ArrayLargerThanProblem) {
    const auto c = count_job(problem_shape{3, 4, 5}, 8);
    EXPECT_EQ(c.tiles, 1u);
    EXPECT_EQ(c.advance_edges_per_tile, 18u);
    EXPECT_EQ(c.advance_edges, 18u);
    EXPECT_EQ(c.macs_padded, 256u);
    EXPECT_EQ(c.macs_real, 60u);
    EXPECT_EQ(c.outputs_real, 15u);
    EXPECT_EQ(c.outputs_masked, 49u);
}

// Dimensions divisible by N: no padding, so padded and real MACs agree and nothing is masked.
TEST(Counting, DivisibleDimensions) {
    const auto c = count_job(problem_shape{8, 5, 12}, 4);
    EXPECT_EQ(c.tiles, 6u);  // 2 x 3
    EXPECT_EQ(c.advance_edges_per_tile, 11u);
    EXPECT_EQ(c.advance_edges, 66u);
    EXPECT_EQ(c.macs_padded, 480u);
    EXPECT_EQ(c.macs_real, 480u);
    EXPECT_EQ(c.outputs_real, 96u);
    EXPECT_EQ(c.outputs_masked, 0u);
}

TEST(Counting, IsUsableAtCompileTime) {
    constexpr auto c = count_job(problem_shape{3, 3, 3}, 2);
    static_assert(c.advance_edges == 20, "seed example: 20 advance edges");
    EXPECT_EQ(c.tiles, 4u);
}

// ------------------------------------------------------------------------------------------------
// Tiling
// ------------------------------------------------------------------------------------------------

std::vector<std::pair<u64, u64>> origins(const std::vector<tile>& tiles) {
    std::vector<std::pair<u64, u64>> out;
    for (const auto& t : tiles)
        out.emplace_back(t.r0, t.c0);
    return out;
}

void expect_indices_are_positions(const std::vector<tile>& tiles) {
    for (std::size_t i = 0; i < tiles.size(); ++i)
        EXPECT_EQ(tiles[i].index, i);
}

TEST(Tiling, SeedOriginsInRowOrder) {
    const auto tiles = plan_tiles(3, 3, 2, tile_order::row_major);
    const std::vector<std::pair<u64, u64>> want = {{0, 0}, {0, 2}, {2, 0}, {2, 2}};
    EXPECT_EQ(origins(tiles), want);
    expect_indices_are_positions(tiles);
}

// Seed: the last tile (2,2) has a single real output; the others clip on one side or not at all.
TEST(Tiling, SeedClipping) {
    const auto tiles = plan_tiles(3, 3, 2, tile_order::row_major);
    ASSERT_EQ(tiles.size(), 4u);
    EXPECT_EQ(tiles[0].rows, 2u);
    EXPECT_EQ(tiles[0].cols, 2u);
    EXPECT_EQ(tiles[1].rows, 2u);
    EXPECT_EQ(tiles[1].cols, 1u);
    EXPECT_EQ(tiles[2].rows, 1u);
    EXPECT_EQ(tiles[2].cols, 2u);
    EXPECT_EQ(tiles[3].rows, 1u);
    EXPECT_EQ(tiles[3].cols, 1u);
}

// M=5, P=6, N=2: a 3x3 grid of tiles with row origins 0,2,4 and column origins 0,2,4.
TEST(Tiling, RowOrderOnThreeByThreeGrid) {
    const std::vector<std::pair<u64, u64>> want = {{0, 0}, {0, 2}, {0, 4}, {2, 0}, {2, 2},
                                                   {2, 4}, {4, 0}, {4, 2}, {4, 4}};
    EXPECT_EQ(origins(plan_tiles(5, 6, 2, tile_order::row_major)), want);
}

TEST(Tiling, ColumnOrderOnThreeByThreeGrid) {
    const auto tiles = plan_tiles(5, 6, 2, tile_order::col_major);
    const std::vector<std::pair<u64, u64>> want = {{0, 0}, {2, 0}, {4, 0}, {0, 2}, {2, 2},
                                                   {4, 2}, {0, 4}, {2, 4}, {4, 4}};
    EXPECT_EQ(origins(tiles), want);
    expect_indices_are_positions(tiles);
}

// Serpentine: left to right on even tile rows, right to left on odd ones.
TEST(Tiling, SnakeOrderOnThreeByThreeGrid) {
    const auto tiles = plan_tiles(5, 6, 2, tile_order::serpentine);
    const std::vector<std::pair<u64, u64>> want = {{0, 0}, {0, 2}, {0, 4}, {2, 4}, {2, 2},
                                                   {2, 0}, {4, 0}, {4, 2}, {4, 4}};
    EXPECT_EQ(origins(tiles), want);
    expect_indices_are_positions(tiles);
}

// M=5 leaves one real row in the bottom tile row; P=6 divides evenly so every tile has 2 columns.
TEST(Tiling, ClipsOnlyTheLastTileRow) {
    for (auto order :
         {tile_order::row_major, tile_order::col_major, tile_order::serpentine, tile_order::random}) {
        for (const auto& t : plan_tiles(5, 6, 2, order, 7)) {
            EXPECT_EQ(t.rows, t.r0 == 4 ? 1u : 2u) << to_string(order) << " tile " << t.index;
            EXPECT_EQ(t.cols, 2u) << to_string(order) << " tile " << t.index;
        }
    }
}

TEST(Tiling, EveryOrderIsAPermutationOfTheSameTiles) {
    using key = std::tuple<u64, u64, u64, u64>;  // r0, c0, rows, cols
    auto as_set = [](const std::vector<tile>& tiles) {
        std::set<key> s;
        for (const auto& t : tiles)
            s.emplace(t.r0, t.c0, t.rows, t.cols);
        return s;
    };
    struct dims {
        u64 m, p, n;
    };
    for (const dims d : {dims{5, 6, 2}, dims{3, 3, 2}, dims{7, 3, 3}, dims{1, 1, 1}, dims{10, 1, 4}}) {
        // The expected set, built independently: every multiple of N below M x every one below P.
        std::set<key> want;
        for (u64 r = 0; r < d.m; r += d.n)
            for (u64 c = 0; c < d.p; c += d.n)
                want.emplace(r, c, std::min(d.n, d.m - r), std::min(d.n, d.p - c));
        std::vector<std::pair<tile_order, u64>> plans = {
            {tile_order::row_major, 0}, {tile_order::col_major, 0}, {tile_order::serpentine, 0}};
        for (u64 seed : {0ull, 1ull, 2ull, 42ull, 0xdeadbeefull, ~0ull})
            plans.emplace_back(tile_order::random, seed);
        for (const auto& [order, seed] : plans) {
            const auto tiles = plan_tiles(d.m, d.p, d.n, order, seed);
            EXPECT_EQ(tiles.size(), want.size()) << to_string(order) << " seed " << seed;
            EXPECT_EQ(as_set(tiles), want) << to_string(order) << " seed " << seed;
            expect_indices_are_positions(tiles);
        }
    }
}

TEST(Tiling, RandomOrderIsDeterministicPerSeed) {
    for (u64 seed : {0ull, 1ull, 99ull, 123456789ull}) {
        EXPECT_EQ(origins(plan_tiles(5, 6, 2, tile_order::random, seed)),
                  origins(plan_tiles(5, 6, 2, tile_order::random, seed)))
            << "seed " << seed;
    }
}

TEST(Tiling, RandomOrderDependsOnSeed) {
    // 9 tiles have 9! orders; among a handful of seeds at least two must disagree, and at least one
    // must differ from plain row order (otherwise the shuffle does nothing).
    std::set<std::vector<std::pair<u64, u64>>> seen;
    bool differs_from_row = false;
    const auto row = origins(plan_tiles(5, 6, 2, tile_order::row_major));
    for (u64 seed = 0; seed < 8; ++seed) {
        const auto o = origins(plan_tiles(5, 6, 2, tile_order::random, seed));
        seen.insert(o);
        differs_from_row = differs_from_row || o != row;
    }
    EXPECT_GT(seen.size(), 1u);
    EXPECT_TRUE(differs_from_row);
}

TEST(Tiling, OrderNamesRoundTrip) {
    const std::vector<std::pair<tile_order, std::string>> names = {{tile_order::row_major, "row"},
                                                                   {tile_order::col_major, "col"},
                                                                   {tile_order::serpentine, "snake"},
                                                                   {tile_order::random, "random"}};
    for (const auto& [order, name] : names) {
        EXPECT_EQ(systolic::to_string(order), name);
        const auto parsed = systolic::parse_tile_order(name);
        ASSERT_TRUE(parsed.has_value()) << name;
        EXPECT_EQ(*parsed, order);
    }
}

TEST(Tiling, UnknownOrderNameRejected) {
    for (const char* bad : {"", "Row", "ROW", "rows", "serpentine", "column", "snake ", "rand"}) {
        EXPECT_FALSE(systolic::parse_tile_order(bad).has_value()) << "'" << bad << "'";
    }
}

TEST(Tiling, ZeroDimensionsThrow) {
    EXPECT_THROW(plan_tiles(0, 3, 2, tile_order::row_major), std::invalid_argument);
    EXPECT_THROW(plan_tiles(3, 0, 2, tile_order::row_major), std::invalid_argument);
    EXPECT_THROW(plan_tiles(3, 3, 0, tile_order::row_major), std::invalid_argument);
    EXPECT_THROW(plan_tiles(0, 0, 0, tile_order::random, 5), std::invalid_argument);
}

// ------------------------------------------------------------------------------------------------
// ArrayCore, driven by hand with the skew rule
// ------------------------------------------------------------------------------------------------

// A local tile: N x K operands of A (row-major) and K x N operands of B (row-major), with which
// rows of A and columns of B are real. Padding rows/columns are fed as valid zeros unless
// `invalid_padding` is set.
struct tile_feed {
    std::size_t n = 0;
    std::size_t k = 0;
    std::vector<i32> a;  // n x k
    std::vector<i32> b;  // k x n
    std::size_t real_rows = 0;
    std::size_t real_cols = 0;
    bool invalid_padding = false;

    // Row i of A carries term t on the west edge at edge i + t, column j of B on the north edge at
    // edge j + t; every other edge carries a bubble.
    tok west(std::size_t edge, std::size_t i) const {
        if (edge < i || edge - i >= k) return tok::bubble();
        if (invalid_padding && i >= real_rows) return tok::bubble();
        return tok::of(a[i * k + (edge - i)]);
    }
    tok north(std::size_t edge, std::size_t j) const {
        if (edge < j || edge - j >= k) return tok::bubble();
        if (invalid_padding && j >= real_cols) return tok::bubble();
        return tok::of(b[(edge - j) * n + j]);
    }
    void step(core& c, std::size_t edge) const {
        std::vector<tok> w(n), no(n);
        for (std::size_t i = 0; i < n; ++i)
            w[i] = west(edge, i);
        for (std::size_t j = 0; j < n; ++j)
            no[j] = north(edge, j);
        c.advance(w.data(), no.data());
    }
    // Runs edges [from, to).
    void run(core& c, std::size_t from, std::size_t to) const {
        for (std::size_t e = from; e < to; ++e)
            step(c, e);
    }
};

// Seed 001/003, last tile (origin (2,2)): A=[[7,8,9],[0,0,0]], B=[[2,0],[0,0],[1,0]], one real output.
tile_feed seed_last_tile() {
    tile_feed f;
    f.n = 2;
    f.k = 3;
    f.a = {7, 8, 9, 0, 0, 0};
    f.b = {2, 0, 0, 0, 1, 0};
    f.real_rows = 1;
    f.real_cols = 1;
    return f;
}

TEST(ArrayCore, ZeroSizeThrows) {
    EXPECT_THROW(core(0), std::invalid_argument);
}

TEST(ArrayCore, SeedLastTileAfterFiveEdges) {
    const auto f = seed_last_tile();
    core c(2);
    c.clear();
    f.run(c, 0, 5);  // K + 2(N-1) = 3 + 2 = 5
    EXPECT_EQ(c.edges(), 5u);
    // Local result [[23,0],[0,0]]: 7*2 + 8*0 + 9*1 = 23.
    EXPECT_EQ(c.accumulator(0, 0), 23);
    EXPECT_EQ(c.accumulator(0, 1), 0);
    EXPECT_EQ(c.accumulator(1, 0), 0);
    EXPECT_EQ(c.accumulator(1, 1), 0);
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j)
            EXPECT_EQ(c.consumed(i, j), 3u) << "PE(" << i << "," << j << ")";
    EXPECT_TRUE(c.complete(3));
    EXPECT_TRUE(c.stuck(3).empty());
    EXPECT_FALSE(c.complete(2));
    EXPECT_EQ(c.stuck(2).size(), 4u);
}

// After edges 0..3, PE(i,j) has seen terms t with i + j + t <= 3. PE(0,0), PE(0,1) and PE(1,0)
// have all three (t <= 3 and t <= 2); PE(1,1) only t = 0 and 1, so it is the one PE behind, with 2.
TEST(ArrayCore, SeedLastTileNotCompleteAfterFourEdges) {
    const auto f = seed_last_tile();
    core c(2);
    f.run(c, 0, 4);
    EXPECT_FALSE(c.complete(3));
    const auto stuck = c.stuck(3);
    ASSERT_EQ(stuck.size(), 1u);
    EXPECT_EQ(stuck[0].row, 1u);
    EXPECT_EQ(stuck[0].col, 1u);
    EXPECT_EQ(stuck[0].consumed, 2u);
    EXPECT_EQ(c.consumed(0, 0), 3u);
    EXPECT_EQ(c.consumed(0, 1), 3u);
    EXPECT_EQ(c.consumed(1, 0), 3u);
    // The fifth edge completes it.
    f.step(c, 4);
    EXPECT_TRUE(c.complete(3));
}

// Extra bubble edges after completion change nothing.
TEST(ArrayCore, BubblesAfterCompletionChangeNothing) {
    const auto f = seed_last_tile();
    core c(2);
    f.run(c, 0, 5 + 20);
    EXPECT_EQ(c.accumulator(0, 0), 23);
    EXPECT_TRUE(c.complete(3));
    EXPECT_EQ(c.macs(), 12u);
}

// The seed: padding travels as valid zeros so every PE consumes K. Padding fed as bubbles instead
// leaves row 1 (padding row of A) and column 1 (padding column of B) at zero terms forever.
TEST(ArrayCore, InvalidPaddingNeverCompletes) {
    auto f = seed_last_tile();
    f.invalid_padding = true;
    core c(2);
    f.run(c, 0, 5);
    EXPECT_FALSE(c.complete(3));
    f.run(c, 5, 200);  // many extra edges: west/north carry only bubbles now
    EXPECT_EQ(c.edges(), 200u);
    EXPECT_FALSE(c.complete(3));
    EXPECT_EQ(c.consumed(0, 0), 3u);
    EXPECT_EQ(c.consumed(0, 1), 0u);
    EXPECT_EQ(c.consumed(1, 0), 0u);
    EXPECT_EQ(c.consumed(1, 1), 0u);
    const auto stuck = c.stuck(3);
    ASSERT_EQ(stuck.size(), 3u);
    EXPECT_EQ(stuck[0].row, 0u);
    EXPECT_EQ(stuck[0].col, 1u);
    EXPECT_EQ(stuck[1].row, 1u);
    EXPECT_EQ(stuck[1].col, 0u);
    EXPECT_EQ(stuck[2].row, 1u);
    EXPECT_EQ(stuck[2].col, 1u);
    // The real output is still right; only the completion contract is broken.
    EXPECT_EQ(c.accumulator(0, 0), 23);
}

// macs(): N^2 x K = 4 x 3 = 12 padded terms; macs_in(1, 1): the one real output's 1 x 1 x 3 = 3.
TEST(ArrayCore, MacsOfSeedTile) {
    const auto f = seed_last_tile();
    core c(2);
    f.run(c, 0, 5);
    EXPECT_EQ(c.macs(), 12u);
    EXPECT_EQ(c.macs_in(1, 1), 3u);
    EXPECT_EQ(c.macs_in(1, 2), 6u);
    EXPECT_EQ(c.macs_in(2, 1), 6u);
    EXPECT_EQ(c.macs_in(2, 2), 12u);
    EXPECT_EQ(c.macs_in(0, 0), 0u);
}

// Token positions on a 3x3 array with K = 2, A=[[1,2],[3,4],[5,6]], B=[[10,20,30],[40,50,60]].
// After edges 0..e, PE(i,j) holds term e - i - j of row i of A and of column j of B.
TEST(ArrayCore, TokensMoveOnePePerEdge) {
    tile_feed f;
    f.n = 3;
    f.k = 2;
    f.a = {1, 2, 3, 4, 5, 6};
    f.b = {10, 20, 30, 40, 50, 60};
    f.real_rows = f.real_cols = 3;
    core c(3);

    f.step(c, 0);
    EXPECT_EQ(c.a(0, 0).value, 1);
    EXPECT_TRUE(c.a(0, 0).valid);
    EXPECT_EQ(c.b(0, 0).value, 10);
    EXPECT_TRUE(c.b(0, 0).valid);
    EXPECT_FALSE(c.a(0, 1).valid);
    EXPECT_FALSE(c.a(1, 0).valid);  // row 1 starts at edge 1
    EXPECT_FALSE(c.b(0, 1).valid);  // column 1 starts at edge 1
    EXPECT_FALSE(c.b(1, 0).valid);
    EXPECT_EQ(c.accumulator(0, 0), 10);
    EXPECT_EQ(c.consumed(0, 0), 1u);
    EXPECT_EQ(c.macs(), 1u);

    f.step(c, 1);
    EXPECT_EQ(c.a(0, 0).value, 2);
    EXPECT_EQ(c.a(0, 1).value, 1);
    EXPECT_TRUE(c.a(0, 1).valid);
    EXPECT_EQ(c.a(1, 0).value, 3);
    EXPECT_EQ(c.b(0, 0).value, 40);
    EXPECT_EQ(c.b(1, 0).value, 10);
    EXPECT_TRUE(c.b(1, 0).valid);
    EXPECT_EQ(c.b(0, 1).value, 20);
    EXPECT_FALSE(c.a(1, 1).valid);
    EXPECT_FALSE(c.b(1, 1).valid);
    EXPECT_FALSE(c.a(0, 2).valid);
    EXPECT_EQ(c.accumulator(0, 0), 1 * 10 + 2 * 40);
    EXPECT_EQ(c.accumulator(0, 1), 1 * 20);
    EXPECT_EQ(c.accumulator(1, 0), 3 * 10);
    EXPECT_EQ(c.consumed(1, 1), 0u);

    f.step(c, 2);
    EXPECT_FALSE(c.a(0, 0).valid);  // row 0 of A is done after K = 2 terms
    EXPECT_EQ(c.a(0, 0).value, 0);  // a bubble carries zero
    EXPECT_FALSE(c.b(0, 0).valid);
    EXPECT_EQ(c.a(0, 1).value, 2);
    EXPECT_EQ(c.a(0, 2).value, 1);
    EXPECT_TRUE(c.a(0, 2).valid);
    EXPECT_EQ(c.a(1, 0).value, 4);
    EXPECT_EQ(c.a(1, 1).value, 3);
    EXPECT_EQ(c.a(2, 0).value, 5);
    EXPECT_EQ(c.b(1, 0).value, 40);
    EXPECT_EQ(c.b(2, 0).value, 10);
    EXPECT_TRUE(c.b(2, 0).valid);
    EXPECT_EQ(c.b(1, 1).value, 20);
    EXPECT_EQ(c.b(0, 1).value, 50);
    EXPECT_EQ(c.b(0, 2).value, 30);
    EXPECT_FALSE(c.a(2, 2).valid);
    EXPECT_FALSE(c.b(2, 2).valid);
    EXPECT_EQ(c.accumulator(0, 0), 90);  // unchanged: no more terms for PE(0,0)
    EXPECT_EQ(c.consumed(0, 0), 2u);
    EXPECT_EQ(c.accumulator(1, 1), 3 * 20);
    EXPECT_EQ(c.accumulator(0, 2), 1 * 30);
    EXPECT_EQ(c.accumulator(2, 0), 5 * 10);

    // Finish the tile: K + 2(N-1) = 6 edges, C = A x B.
    f.run(c, 3, 6);
    EXPECT_TRUE(c.complete(2));
    const i64 want[3][3] = {{90, 120, 150}, {190, 260, 330}, {290, 400, 510}};
    for (std::size_t i = 0; i < 3; ++i)
        for (std::size_t j = 0; j < 3; ++j)
            EXPECT_EQ(c.accumulator(i, j), want[i][j]) << i << "," << j;
}

// The same movement as a property: after every edge, each PE holds what its west (A) or north (B)
// neighbour held before the edge, and the edge PEs hold the new inputs.
TEST(ArrayCore, ShiftPropertyOnEveryEdge) {
    const std::size_t n = 4;
    core c(n);
    std::mt19937 rng(5);
    std::uniform_int_distribution<i32> val(-50, 50);
    std::bernoulli_distribution valid(0.7);
    for (int edge = 0; edge < 30; ++edge) {
        std::vector<tok> prev_a(n * n), prev_b(n * n);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) {
                prev_a[i * n + j] = c.a(i, j);
                prev_b[i * n + j] = c.b(i, j);
            }
        std::vector<tok> w(n), no(n);
        for (auto& t : w)
            t = valid(rng) ? tok::of(val(rng)) : tok::bubble();
        for (auto& t : no)
            t = valid(rng) ? tok::of(val(rng)) : tok::bubble();
        c.advance(w.data(), no.data());
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                const tok want_a = j == 0 ? w[i] : prev_a[i * n + j - 1];
                const tok want_b = i == 0 ? no[j] : prev_b[(i - 1) * n + j];
                EXPECT_EQ(c.a(i, j).valid, want_a.valid) << "edge " << edge << " PE(" << i << "," << j << ")";
                EXPECT_EQ(c.a(i, j).value, want_a.value) << "edge " << edge << " PE(" << i << "," << j << ")";
                EXPECT_EQ(c.b(i, j).valid, want_b.valid) << "edge " << edge << " PE(" << i << "," << j << ")";
                EXPECT_EQ(c.b(i, j).value, want_b.value) << "edge " << edge << " PE(" << i << "," << j << ")";
            }
        }
    }
}

// A bubble never multiplies or counts, whatever value it carries and whatever the other operand is.
TEST(ArrayCore, BubbleNeverCounts) {
    core c(2);
    const tok garbage{99, false};
    const tok west_valid[2] = {tok::of(5), tok::of(6)};
    const tok north_bubble[2] = {garbage, garbage};
    for (int e = 0; e < 6; ++e)
        c.advance(west_valid, north_bubble);
    // N bubble edges flush the valid A tokens still in flight, so they never meet the B stream.
    const tok west_bubble[2] = {garbage, garbage};
    for (int e = 0; e < 2; ++e)
        c.advance(west_bubble, north_bubble);
    const tok north_valid[2] = {tok::of(3), tok::of(4)};
    for (int e = 0; e < 6; ++e)
        c.advance(west_bubble, north_valid);
    EXPECT_EQ(c.macs(), 0u);
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) {
            EXPECT_EQ(c.consumed(i, j), 0u);
            EXPECT_EQ(c.accumulator(i, j), 0);
        }
    EXPECT_TRUE(c.complete(0));
    EXPECT_FALSE(c.complete(1));
    EXPECT_EQ(c.edges(), 14u);
}

// A valid zero does count: the padding contract relies on it.
TEST(ArrayCore, ValidZeroCounts) {
    core c(1);
    const tok zero[1] = {tok::of(0)};
    const tok seven[1] = {tok::of(7)};
    c.advance(zero, seven);
    EXPECT_EQ(c.consumed(0, 0), 1u);
    EXPECT_EQ(c.accumulator(0, 0), 0);
    EXPECT_TRUE(c.complete(1));
}

TEST(ArrayCore, ClearResetsEverything) {
    const auto f = seed_last_tile();
    core c(2);
    f.run(c, 0, 3);  // mid-tile: tokens in flight, partial sums, partial counts
    ASSERT_GT(c.macs(), 0u);
    c.clear();
    EXPECT_EQ(c.edges(), 0u);
    EXPECT_EQ(c.macs(), 0u);
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) {
            EXPECT_FALSE(c.a(i, j).valid);
            EXPECT_EQ(c.a(i, j).value, 0);
            EXPECT_FALSE(c.b(i, j).valid);
            EXPECT_EQ(c.b(i, j).value, 0);
            EXPECT_EQ(c.accumulator(i, j), 0);
            EXPECT_EQ(c.consumed(i, j), 0u);
        }
    // A fresh tile after the clear gives the seed result, untouched by the aborted one.
    f.run(c, 0, 5);
    EXPECT_EQ(c.accumulator(0, 0), 23);
    EXPECT_TRUE(c.complete(3));
    EXPECT_EQ(c.edges(), 5u);
}

// Random N=5 tiles with random K against a naive triple loop.
TEST(ArrayCore, RandomTilesMatchTripleLoop) {
    const std::size_t n = 5;
    std::mt19937_64 rng(2024);
    std::uniform_int_distribution<i32> val(-1000, 1000);
    std::uniform_int_distribution<std::size_t> kdist(1, 17);
    core c(n);
    for (int trial = 0; trial < 20; ++trial) {
        tile_feed f;
        f.n = n;
        f.k = kdist(rng);
        f.a.resize(n * f.k);
        f.b.resize(f.k * n);
        for (auto& v : f.a)
            v = val(rng);
        for (auto& v : f.b)
            v = val(rng);
        f.real_rows = f.real_cols = n;
        c.clear();
        const std::size_t edges = f.k + 2 * (n - 1);
        f.run(c, 0, edges - 1);
        EXPECT_FALSE(c.complete(f.k)) << "trial " << trial << ": complete one edge early";
        f.step(c, edges - 1);
        ASSERT_TRUE(c.complete(f.k)) << "trial " << trial << " K=" << f.k;
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                i64 want = 0;
                for (std::size_t t = 0; t < f.k; ++t)
                    want += i64{f.a[i * f.k + t]} * f.b[t * n + j];
                EXPECT_EQ(c.accumulator(i, j), want) << "trial " << trial << " PE(" << i << "," << j << ")";
            }
        }
        EXPECT_EQ(c.macs(), n * n * f.k);
    }
}

// The whole seed job on the array: every order of the four tiles, padding as valid zeros, writes
// masked to the real outputs. C comes out as the seed's product, with the seed's counts.
TEST(ArrayCore, SeedJobThroughAllTileOrders) {
    const i32 A[3][3] = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
    const i32 B[3][3] = {{1, 0, 2}, {0, 1, 0}, {2, 0, 1}};
    const i64 want[3][3] = {{7, 2, 5}, {16, 5, 14}, {25, 8, 23}};
    const std::size_t n = 2, k = 3;
    for (auto order :
         {tile_order::row_major, tile_order::col_major, tile_order::serpentine, tile_order::random}) {
        i64 out[3][3] = {};
        int writes[3][3] = {};
        u64 edges = 0, macs = 0, macs_real = 0, masked = 0;
        core c(n);
        for (const auto& t : plan_tiles(3, 3, n, order, 11)) {
            tile_feed f;
            f.n = n;
            f.k = k;
            f.a.assign(n * k, 0);
            f.b.assign(k * n, 0);
            for (std::size_t i = 0; i < t.rows; ++i)
                for (std::size_t x = 0; x < k; ++x)
                    f.a[i * k + x] = A[t.r0 + i][x];
            for (std::size_t x = 0; x < k; ++x)
                for (std::size_t j = 0; j < t.cols; ++j)
                    f.b[x * n + j] = B[x][t.c0 + j];
            f.real_rows = t.rows;
            f.real_cols = t.cols;
            c.clear();
            f.run(c, 0, k + 2 * (n - 1));
            ASSERT_TRUE(c.complete(k));
            edges += c.edges();
            macs += c.macs();
            macs_real += c.macs_in(t.rows, t.cols);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j) {
                    if (i < t.rows && j < t.cols) {
                        out[t.r0 + i][t.c0 + j] = c.accumulator(i, j);
                        ++writes[t.r0 + i][t.c0 + j];
                    } else {
                        ++masked;
                    }
                }
        }
        for (std::size_t r = 0; r < 3; ++r)
            for (std::size_t col = 0; col < 3; ++col) {
                EXPECT_EQ(out[r][col], want[r][col]) << to_string(order) << " C(" << r << "," << col << ")";
                EXPECT_EQ(writes[r][col], 1) << to_string(order);
            }
        EXPECT_EQ(edges, 20u);
        EXPECT_EQ(macs, 48u);
        EXPECT_EQ(macs_real, 27u);
        EXPECT_EQ(masked, 7u);
    }
}

// ------------------------------------------------------------------------------------------------
// NumberFormat
// ------------------------------------------------------------------------------------------------

constexpr i64 kMax64 = std::numeric_limits<i64>::max();
constexpr i64 kMin64 = std::numeric_limits<i64>::min();
constexpr i32 kMax32 = std::numeric_limits<i32>::max();
constexpr i32 kMin32 = std::numeric_limits<i32>::min();

// Constant evaluation rejects undefined behaviour, so these also prove that mac never overflows a
// signed type on the way.
static_assert(int32_format::mac(kMax64, 1, 1) == kMin64, "wraps upward");
static_assert(int32_format::mac(kMin64, -1, 1) == kMax64, "wraps downward");
static_assert(int32_format::mac(0, kMin32, kMin32) == (i64{1} << 62), "largest product is exact");

TEST(NumberFormat, Int32MacIsExactInRange) {
    EXPECT_EQ(int32_format::mac(0, 3, 4), 12);
    EXPECT_EQ(int32_format::mac(10, -3, 4), -2);
    EXPECT_EQ(int32_format::mac(0, kMax32, kMax32), i64{kMax32} * i64{kMax32});
    EXPECT_EQ(int32_format::mac(0, kMin32, kMax32), -(i64{1} << 31) * i64{kMax32});
    EXPECT_EQ(int32_format::mac(0, kMin32, kMin32), i64{1} << 62);
}

TEST(NumberFormat, Int32MacWrapsModulo2To64) {
    volatile i64 max = kMax64;  // runtime values, not constant-folded
    volatile i64 min = kMin64;
    EXPECT_EQ(int32_format::mac(max, 1, 1), kMin64);
    EXPECT_EQ(int32_format::mac(min, -1, 1), kMax64);
    EXPECT_EQ(int32_format::mac(min, 1, -1), kMax64);
    // INT64_MAX + 2^62 = 2^63 - 1 + 2^62 -> minus 2^64 = -2^63 + 2^62 - 1.
    EXPECT_EQ(int32_format::mac(max, kMin32, kMin32), kMin64 + (i64{1} << 62) - 1);
    // Four times 2^62 is 2^64, which wraps back to where it started.
    i64 acc = 5;
    for (int i = 0; i < 4; ++i)
        acc = int32_format::mac(acc, kMin32, kMin32);
    EXPECT_EQ(acc, 5);
}

TEST(NumberFormat, Int32Names) {
    EXPECT_STREQ(int32_format::name, "int32");
    EXPECT_STREQ(int32_format::accumulator_name, "int64");
}

// ------------------------------------------------------------------------------------------------
// MatrixLayout
// ------------------------------------------------------------------------------------------------

// 2 x 3 int64 elements at 0x1000 with a 32-byte stride: row 0 is 0x1000..0x1017, padding
// 0x1018..0x101f, row 1 is 0x1020..0x1037, end 0x1038.
matrix_layout padded_layout() {
    return matrix_layout{0x1000, 2, 3, 8, 32};
}

TEST(MatrixLayout, AddressAndEnd) {
    const auto l = padded_layout();
    EXPECT_EQ(l.address(0, 0), 0x1000u);
    EXPECT_EQ(l.address(0, 2), 0x1010u);
    EXPECT_EQ(l.address(1, 0), 0x1020u);
    EXPECT_EQ(l.address(1, 2), 0x1030u);
    EXPECT_EQ(l.row_bytes(), 24u);
    EXPECT_EQ(l.end(), 0x1038u);  // not base + rows * stride: the last row's padding is not the matrix
    EXPECT_TRUE(l.well_formed());
    EXPECT_FALSE((matrix_layout{0x1000, 2, 3, 8, 16}.well_formed()));  // stride shorter than a row
    EXPECT_FALSE((matrix_layout{0x1000, 0, 3, 8, 24}.well_formed()));
    EXPECT_EQ((matrix_layout{0x1000, 0, 3, 8, 24}.end()), 0x1000u);
}

TEST(MatrixLayout, ElementAtElementStarts) {
    const auto l = padded_layout();
    for (u64 r = 0; r < 2; ++r) {
        for (u64 c = 0; c < 3; ++c) {
            const auto el = l.element_at(0x1000 + r * 32 + c * 8);
            ASSERT_TRUE(el.has_value()) << r << "," << c;
            EXPECT_EQ(el->row, r);
            EXPECT_EQ(el->col, c);
        }
    }
}

TEST(MatrixLayout, ElementAtRejectsEverythingElse) {
    const auto l = padded_layout();
    for (u64 addr : {0x1001ull, 0x1004ull, 0x1007ull, 0x1033ull, 0x1037ull}) {
        EXPECT_FALSE(l.element_at(addr).has_value()) << "mid-element 0x" << std::hex << addr;
    }
    for (u64 addr : {0x1018ull, 0x101cull, 0x101full}) {
        EXPECT_FALSE(l.element_at(addr).has_value()) << "stride padding 0x" << std::hex << addr;
    }
    for (u64 addr : {0x0ull, 0xff8ull, 0xfffull, 0x1038ull, 0x1040ull, ~0ull}) {
        EXPECT_FALSE(l.element_at(addr).has_value()) << "outside 0x" << std::hex << addr;
    }
}

TEST(MatrixLayout, PackedLayoutHasNoPadding) {
    const matrix_layout l{0x40, 2, 2, 4, 8};
    EXPECT_EQ(l.end(), 0x50u);
    const u64 starts[] = {0x40, 0x44, 0x48, 0x4c};
    for (std::size_t i = 0; i < 4; ++i) {
        const auto el = l.element_at(starts[i]);
        ASSERT_TRUE(el.has_value());
        EXPECT_EQ(el->row, i / 2);
        EXPECT_EQ(el->col, i % 2);
    }
    for (u64 addr = 0x40; addr < 0x50; ++addr)
        EXPECT_TRUE(l.covers(addr)) << std::hex << addr;
    EXPECT_FALSE(l.covers(0x3f));
    EXPECT_FALSE(l.covers(0x50));
}

TEST(MatrixLayout, Covers) {
    const auto l = padded_layout();
    for (u64 addr = 0x1000; addr < 0x1018; ++addr)
        EXPECT_TRUE(l.covers(addr)) << std::hex << addr;
    for (u64 addr = 0x1018; addr < 0x1020; ++addr)
        EXPECT_FALSE(l.covers(addr)) << std::hex << addr;
    for (u64 addr = 0x1020; addr < 0x1038; ++addr)
        EXPECT_TRUE(l.covers(addr)) << std::hex << addr;
    EXPECT_FALSE(l.covers(0xfff));
    EXPECT_FALSE(l.covers(0x1038));
    EXPECT_FALSE(l.covers(0x103f));  // would be row 1's padding
    EXPECT_FALSE(l.covers(0x1040));  // would be a row 2
    EXPECT_FALSE(l.covers(0));
}

// ------------------------------------------------------------------------------------------------
// MemoryCore
// ------------------------------------------------------------------------------------------------

std::vector<std::uint8_t> snapshot(const memory_core& m) {
    return {m.data(), m.data() + m.size()};
}

memory_core patterned_memory(u64 base, u64 size) {
    memory_core m(base, size);
    for (u64 i = 0; i < size; ++i)
        m.data()[i] = static_cast<std::uint8_t>(0xa0 + i);
    return m;
}

TEST(MemoryCore, InRangeReadWrite) {
    memory_core m(0x100, 16);
    EXPECT_EQ(m.base(), 0x100u);
    EXPECT_EQ(m.size(), 16u);
    const std::uint8_t src[4] = {1, 2, 3, 4};
    EXPECT_EQ(m.write(0x104, src, 4), memory_core::status::ok);
    EXPECT_EQ(m.data()[4], 1);
    EXPECT_EQ(m.data()[7], 4);
    EXPECT_EQ(m.data()[3], 0);
    EXPECT_EQ(m.data()[8], 0);
    std::uint8_t dst[6] = {};
    EXPECT_EQ(m.read(0x103, dst, 6), memory_core::status::ok);
    const std::uint8_t want[6] = {0, 1, 2, 3, 4, 0};
    EXPECT_EQ(std::memcmp(dst, want, 6), 0);
    // The very last bytes and the whole memory are in range.
    EXPECT_EQ(m.write(0x10f, src, 1), memory_core::status::ok);
    EXPECT_EQ(m.data()[15], 1);
    std::uint8_t all[16];
    EXPECT_EQ(m.read(0x100, all, 16), memory_core::status::ok);
    EXPECT_EQ(std::memcmp(all, m.data(), 16), 0);
}

TEST(MemoryCore, OutOfRangeWriteDoesNothing) {
    auto m = patterned_memory(0x100, 16);
    const auto before = snapshot(m);
    std::uint8_t src[32];
    std::memset(src, 9, sizeof src);
    EXPECT_EQ(m.write(0x0ff, src, 2), memory_core::status::address_error);  // starts before base
    EXPECT_EQ(m.write(0x10e, src, 4), memory_core::status::address_error);  // straddles the end
    EXPECT_EQ(m.write(0x10d, src, 8), memory_core::status::address_error);
    EXPECT_EQ(m.write(0x110, src, 1), memory_core::status::address_error);  // just past the end
    EXPECT_EQ(m.write(0x0, src, 8), memory_core::status::address_error);
    EXPECT_EQ(m.write(0x100, src, 17), memory_core::status::address_error);  // longer than the memory
    EXPECT_EQ(snapshot(m), before);
}

TEST(MemoryCore, OutOfRangeReadDoesNothing) {
    auto m = patterned_memory(0x100, 16);
    std::uint8_t dst[8];
    std::memset(dst, 0x55, sizeof dst);
    EXPECT_EQ(m.read(0x10e, dst, 4), memory_core::status::address_error);
    EXPECT_EQ(m.read(0x0fc, dst, 8), memory_core::status::address_error);
    for (auto b : dst)
        EXPECT_EQ(b, 0x55);
}

TEST(MemoryCore, BaseOffset) {
    memory_core m(0x8000'0000, 8);
    const std::uint32_t v = 0x11223344;
    EXPECT_EQ(m.write(0x8000'0004, &v, 4), memory_core::status::ok);
    std::uint32_t got = 0;
    std::memcpy(&got, m.data() + 4, 4);
    EXPECT_EQ(got, v);
    got = 0;
    EXPECT_EQ(m.read(0x8000'0004, &got, 4), memory_core::status::ok);
    EXPECT_EQ(got, v);
    EXPECT_EQ(m.write(0x4, &v, 4), memory_core::status::address_error);  // the offset, not the address
}

TEST(MemoryCore, ZeroLength) {
    memory_core m(0x100, 16);
    EXPECT_TRUE(m.contains(0x100, 0));
    EXPECT_TRUE(m.contains(0x110, 0));   // empty access at the end
    EXPECT_FALSE(m.contains(0x111, 0));  // beyond the end
    EXPECT_FALSE(m.contains(0x0ff, 0));  // before the base
    std::uint8_t b = 0;
    EXPECT_EQ(m.write(0x110, &b, 0), memory_core::status::ok);
    EXPECT_EQ(m.read(0x110, &b, 0), memory_core::status::ok);
}

TEST(MemoryCore, ContainsDoesNotOverflow) {
    memory_core m(0x100, 16);
    const u64 huge = std::numeric_limits<u64>::max();
    EXPECT_TRUE(m.contains(0x100, 16));
    EXPECT_FALSE(m.contains(0x100, 17));
    EXPECT_FALSE(m.contains(0x100, huge));
    EXPECT_FALSE(m.contains(0x108, huge - 3));  // addr + len wraps to 0x104: must not look in range
    EXPECT_FALSE(m.contains(huge, 1));
    EXPECT_FALSE(m.contains(huge, huge));
    EXPECT_FALSE(m.contains(huge - 7, 16));
    memory_core top(huge - 15, 16);  // a memory at the very top of the address space
    EXPECT_TRUE(top.contains(huge - 15, 16));
    EXPECT_TRUE(top.contains(huge, 1));
    EXPECT_FALSE(top.contains(huge, 2));
}

TEST(MemoryCore, ResizeZeroes) {
    auto m = patterned_memory(0x100, 16);
    m.resize(4);
    EXPECT_EQ(m.size(), 4u);
    for (u64 i = 0; i < 4; ++i)
        EXPECT_EQ(m.data()[i], 0);
    EXPECT_FALSE(m.contains(0x104, 1));
}

// ------------------------------------------------------------------------------------------------
// JobValidation
// ------------------------------------------------------------------------------------------------

constexpr u64 kOp = sizeof(i32);
constexpr u64 kAcc = sizeof(i64);

// 3x3x3: A is 36 bytes at 0x0, B 36 bytes at 0x100, C 72 bytes at 0x200.
systolic::matmul_job seed_job() {
    return systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200);
}

TEST(JobValidation, MakeJobLayouts) {
    const auto job = systolic::make_job(problem_shape{2, 3, 4}, kOp, kAcc, 0x10, 0x100, 0x200, 0, 32, 40);
    EXPECT_EQ(job.a.base, 0x10u);
    EXPECT_EQ(job.a.rows, 2u);
    EXPECT_EQ(job.a.cols, 3u);
    EXPECT_EQ(job.a.elem_size, 4u);
    EXPECT_EQ(job.a.row_stride, 12u);  // packed
    EXPECT_EQ(job.b.rows, 3u);
    EXPECT_EQ(job.b.cols, 4u);
    EXPECT_EQ(job.b.row_stride, 32u);
    EXPECT_EQ(job.c.rows, 2u);
    EXPECT_EQ(job.c.cols, 4u);
    EXPECT_EQ(job.c.elem_size, 8u);
    EXPECT_EQ(job.c.row_stride, 40u);
    EXPECT_EQ(job.order, tile_order::row_major);
}

TEST(JobValidation, WellFormedJobPasses) {
    EXPECT_EQ(systolic::validate_job(seed_job(), kOp, kAcc), "");
    // C right after A, touching but not overlapping (A is 0x0..0x23).
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x24),
                                     kOp, kAcc),
              "");
    // Padded strides are fine.
    EXPECT_EQ(
        systolic::validate_job(
            systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 16, 12, 32), kOp, kAcc),
        "");
}

TEST(JobValidation, ZeroDimensionsRejected) {
    for (const auto& s : {problem_shape{0, 3, 3}, problem_shape{3, 0, 3}, problem_shape{3, 3, 0}}) {
        const auto err =
            systolic::validate_job(systolic::make_job(s, kOp, kAcc, 0x0, 0x100, 0x200), kOp, kAcc);
        EXPECT_NE(err.find("dimensions must be positive"), std::string::npos) << err;
    }
}

TEST(JobValidation, WrongElementSizesRejected) {
    const auto job = seed_job();
    const auto op_err = systolic::validate_job(job, 2, kAcc);
    EXPECT_NE(op_err.find("A elements"), std::string::npos) << op_err;
    const auto acc_err = systolic::validate_job(job, kOp, 4);
    EXPECT_NE(acc_err.find("C elements"), std::string::npos) << acc_err;
}

TEST(JobValidation, LayoutShapeMismatchRejected) {
    auto job = seed_job();
    job.b.rows = 2;
    const auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("B layout"), std::string::npos) << err;
}

TEST(JobValidation, ShortStrideRejected) {
    const auto a = systolic::validate_job(
        systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 8, 0, 0), kOp, kAcc);
    EXPECT_NE(a.find("A row stride 8"), std::string::npos) << a;
    const auto b = systolic::validate_job(
        systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 0, 11, 0), kOp, kAcc);
    EXPECT_NE(b.find("B row stride 11"), std::string::npos) << b;
    const auto c = systolic::validate_job(
        systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 0, 0, 16), kOp, kAcc);
    EXPECT_NE(c.find("C row stride 16"), std::string::npos) << c;
}

TEST(JobValidation, COverlappingOperandsRejected) {
    // C starts inside A (A is 0x0..0x23).
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x20),
                                     kOp, kAcc),
              "C overlaps A");
    // C ends inside B (C is 72 bytes, B starts at 0x100).
    EXPECT_EQ(systolic::validate_job(
                  systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x100 - 71), kOp, kAcc),
              "C overlaps B");
    // C covering B entirely.
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x110, 0x100),
                                     kOp, kAcc),
              "C overlaps B");
    // C exactly on A.
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x0),
                                     kOp, kAcc),
              "C overlaps A");
}

TEST(JobValidation, AOverlappingBAllowed) {
    // Operands are only read, so sharing them is fine (A times itself, for example).
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x0, 0x200),
                                     kOp, kAcc),
              "");
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x10, 0x200),
                                     kOp, kAcc),
              "");
}

TEST(JobValidation, StatusNames) {
    EXPECT_STREQ(systolic::to_string(systolic::job_status::completed), "completed");
    EXPECT_STREQ(systolic::to_string(systolic::job_status::watchdog), "watchdog");
    EXPECT_STREQ(systolic::to_string(systolic::job_status::bus_error), "bus_error");
    EXPECT_STREQ(systolic::to_string(systolic::job_status::rejected), "rejected");
}

// ------------------------------------------------------------------------------------------------
// Scoreboard
// ------------------------------------------------------------------------------------------------

using board = systolic::tb::scoreboard<int32_format>;

// A 2x2 C of int64 at 0x1000 with a 24-byte stride: C(0,*) at 0x1000/0x1008, padding 0x1010..0x1017,
// C(1,*) at 0x1018/0x1020, end 0x1028. The memory image spans 0x1000..0x103f.
constexpr u64 kMemBase = 0x1000;
constexpr u64 kMemSize = 0x40;
const matrix_layout kC{0x1000, 2, 2, 8, 24};
const std::vector<i64> kExpected = {7, 2, 16, 5};

// One write transaction with its own data buffer.
struct write_txn {
    std::vector<unsigned char> bytes;
    tlm::tlm_generic_payload gp;

    write_txn(u64 addr, const std::vector<i64>& values, tlm::tlm_response_status rs = tlm::TLM_OK_RESPONSE)
        : bytes(values.size() * sizeof(i64)) {
        std::memcpy(bytes.data(), values.data(), bytes.size());
        init(addr, rs);
    }
    write_txn(u64 addr, std::vector<unsigned char> raw) : bytes(std::move(raw)) {
        init(addr, tlm::TLM_OK_RESPONSE);
    }

    void init(u64 addr, tlm::tlm_response_status rs) {
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(addr);
        gp.set_data_ptr(bytes.data());
        gp.set_data_length(static_cast<unsigned int>(bytes.size()));
        gp.set_streaming_width(static_cast<unsigned int>(bytes.size()));
        gp.set_byte_enable_ptr(nullptr);
        gp.set_response_status(rs);
    }
};

void observe(board& sb, u64 addr, const std::vector<i64>& values) {
    write_txn t(addr, values);
    sb.observe_write(t.gp);
}

// A completed one-tile job with the counts the rule gives for 2x2 with K=3 on a 2x2 array.
struct job_fixture {
    systolic::expected_counts counts = count_job(problem_shape{2, 3, 2}, 2);
    systolic::job_result result;
    std::vector<std::uint8_t> before = std::vector<std::uint8_t>(kMemSize, 0xee);
    std::vector<std::uint8_t> memory = before;

    job_fixture() {
        result.status = systolic::job_status::completed;
        result.advance_edges = counts.advance_edges;
        systolic::tile_report t;
        t.where = plan_tiles(2, 2, 2, tile_order::row_major).at(0);
        t.advance_edges = counts.advance_edges_per_tile;
        result.tiles.push_back(t);
    }
    // Mirrors a write into the memory image, as the real memory would see it.
    void store(u64 addr, i64 v) { std::memcpy(memory.data() + (addr - kMemBase), &v, sizeof v); }
    const systolic::tb::scoreboard_summary& finish(board& sb) {
        return sb.finish(result, counts, memory.data(), kMemBase, before);
    }
};

void write_all_of_c(board& sb, job_fixture& fx) {
    for (u64 r = 0; r < 2; ++r)
        for (u64 c = 0; c < 2; ++c) {
            const u64 addr = kC.address(r, c);
            observe(sb, addr, {kExpected[r * 2 + c]});
            fx.store(addr, kExpected[r * 2 + c]);
        }
}

TEST(Scoreboard, FixtureMatchesCountingRule) {
    const job_fixture fx;
    EXPECT_EQ(fx.counts.tiles, 1u);
    EXPECT_EQ(fx.counts.advance_edges, 5u);  // K + 2(N-1) = 3 + 2
}

TEST(Scoreboard, CorrectWritesPass) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);  // M x P
    EXPECT_EQ(s.writes, 4u);
    EXPECT_EQ(s.mismatches, 0u);
    EXPECT_EQ(s.out_of_range_writes, 0u);
    EXPECT_EQ(s.missing, 0u);
    EXPECT_EQ(s.duplicates, 0u);
    EXPECT_TRUE(s.untouched_ok);
    EXPECT_TRUE(s.edges_ok);
    EXPECT_TRUE(s.completed);
    EXPECT_TRUE(s.errors.empty()) << joined(s.errors);
}

// Keyed by global coordinates: a row-wide burst and any order give the same verdict.
TEST(Scoreboard, OrderAndBurstsDoNotMatter) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    observe(sb, kC.address(1, 1), {5});
    observe(sb, kC.address(0, 0), {7, 2});  // one 16-byte write covering row 0
    observe(sb, kC.address(1, 0), {16});
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);
}

TEST(Scoreboard, WrongValue) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    observe(sb, kC.address(0, 0), {6});
    observe(sb, kC.address(0, 1), {2});
    observe(sb, kC.address(1, 0), {16});
    observe(sb, kC.address(1, 1), {5});
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.mismatches, 1u);
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "C(0,0) expected 7, got 6")) << joined(s.errors);
}

TEST(Scoreboard, WriteToStridePadding) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    observe(sb, 0x1010, {0});
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1010")) << joined(s.errors);
}

TEST(Scoreboard, WritePastC) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    observe(sb, 0x1028, {0});  // one element past C(1,1)
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1028")) << joined(s.errors);
}

// A burst that runs off the end of row 0 into the padding: the first element counts, the second is out of
// range.
TEST(Scoreboard, BurstIntoPadding) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    observe(sb, kC.address(0, 1), {2, 99});
    const auto& s = sb.summary();
    EXPECT_EQ(s.writes, 2u);
    EXPECT_EQ(s.checked, 1u);
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1010")) << joined(s.errors);
}

// A write covering only half an element is out of range, not a partial value check.
TEST(Scoreboard, PartialElementWrite) {
    board sb;
    sb.expect(kC, kExpected);
    write_txn t(kC.address(0, 0), std::vector<unsigned char>{7, 0, 0, 0});
    sb.observe_write(t.gp);
    const auto& s = sb.summary();
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_EQ(s.checked, 0u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1000")) << joined(s.errors);
}

TEST(Scoreboard, DuplicateWrite) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    observe(sb, kC.address(1, 0), {16});  // right value, but twice
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.duplicates, 1u);
    EXPECT_EQ(s.mismatches, 0u);
    EXPECT_TRUE(contains_text(s.errors, "C(1,0) written 2 times")) << joined(s.errors);
}

TEST(Scoreboard, MissingElement) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    observe(sb, kC.address(0, 0), {7});
    observe(sb, kC.address(0, 1), {2});
    observe(sb, kC.address(1, 0), {16});
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.missing, 1u);
    EXPECT_EQ(s.checked, 3u);
    EXPECT_TRUE(contains_text(s.errors, "C(1,1) never written")) << joined(s.errors);
}

TEST(Scoreboard, FailedWriteResponse) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    write_txn t(kC.address(0, 0), {7}, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    sb.observe_write(t.gp);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write to C(0,0) failed")) << joined(sb.summary().errors);
}

TEST(Scoreboard, MemoryOutsideCChanged) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    fx.memory[0x12] = 0x42;  // 0x1012: stride padding
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "memory outside C changed at 0x1012")) << joined(s.errors);
}

TEST(Scoreboard, MemoryPastCChanged) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    fx.memory[0x3f] = 0;  // last byte of the image, well past C
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "at 0x103f")) << joined(s.errors);
}

TEST(Scoreboard, WrongEdgeCount) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    fx.result.advance_edges = 4;
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.edges_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "advance edges: expected 5")) << joined(s.errors);
}

TEST(Scoreboard, WrongPerTileEdgeCount) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    fx.result.tiles[0].advance_edges = 6;
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.edges_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "tile 0: 6 advance edges, expected 5")) << joined(s.errors);
}

TEST(Scoreboard, JobNotCompleted) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    write_all_of_c(sb, fx);
    fx.result.status = systolic::job_status::watchdog;
    fx.result.error = "no progress";
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.completed);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "job did not complete (watchdog): no progress")) << joined(s.errors);
}

TEST(Scoreboard, NothingCheckedFails) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    const auto& s = fx.finish(sb);
    EXPECT_EQ(s.checked, 0u);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "nothing was checked")) << joined(s.errors);
}

TEST(Scoreboard, ExpectResetsTheSummary) {
    board sb;
    job_fixture fx;
    sb.expect(kC, kExpected);
    observe(sb, kC.address(0, 0), {6});
    EXPECT_EQ(sb.summary().mismatches, 1u);
    sb.expect(kC, kExpected);
    EXPECT_EQ(sb.summary().mismatches, 0u);
    EXPECT_EQ(sb.summary().checked, 0u);
    EXPECT_TRUE(sb.summary().errors.empty());
    write_all_of_c(sb, fx);
    EXPECT_TRUE(fx.finish(sb).pass()) << joined(sb.summary().errors);
}

TEST(Scoreboard, ErrorListIsBounded) {
    board sb;
    sb.expect(kC, kExpected);
    for (int i = 0; i < 100; ++i)
        observe(sb, 0x1010, {0});
    EXPECT_EQ(sb.summary().out_of_range_writes, 100u);
    EXPECT_EQ(sb.summary().errors.size(), board::max_errors);
}

// ------------------------------------------------------------------------------------------------
// ReferenceGemm
// ------------------------------------------------------------------------------------------------

TEST(ReferenceGemm, SeedProduct) {
    const auto pr = systolic::tb::seed_example<int32_format>();
    EXPECT_EQ(pr.shape.m, 3u);
    EXPECT_EQ(pr.shape.k, 3u);
    EXPECT_EQ(pr.shape.p, 3u);
    const auto c = systolic::tb::reference_gemm<int32_format>(pr.shape, pr.a, pr.b);
    const std::vector<i64> want = {7, 2, 5, 16, 5, 14, 25, 8, 23};
    EXPECT_EQ(c, want);
}

// Seed 000: C00 = A00 B00 + A01 B10 = [[1,2],[3,4]] I + [[0,1],[1,0]] [[1,1],[0,1]] = [[1,3],[4,5]].
TEST(ReferenceGemm, BlockedExampleTopLeft) {
    // clang-format off
    const std::vector<i32> a = {
        1, 2,   0, 1,
        3, 4,   1, 0,
        -5, 9,  2, 7,
        8, -3,  6, 4,
    };
    const std::vector<i32> b = {
        1, 0,   3, -2,
        0, 1,   5, 6,
        1, 1,   -4, 8,
        0, 1,   7, 2,
    };
    // clang-format on
    const auto c = systolic::tb::reference_gemm<int32_format>(problem_shape{4, 4, 4}, a, b);
    ASSERT_EQ(c.size(), 16u);
    EXPECT_EQ(c[0 * 4 + 0], 1);
    EXPECT_EQ(c[0 * 4 + 1], 3);
    EXPECT_EQ(c[1 * 4 + 0], 4);
    EXPECT_EQ(c[1 * 4 + 1], 5);
}

// Non-square shapes and signs: [[1,-2,3],[0,4,-1]] (2x3) times [[2],[1],[-3]] (3x1).
TEST(ReferenceGemm, NonSquareShape) {
    const std::vector<i32> a = {1, -2, 3, 0, 4, -1};
    const std::vector<i32> b = {2, 1, -3};
    const auto c = systolic::tb::reference_gemm<int32_format>(problem_shape{2, 3, 1}, a, b);
    const std::vector<i64> want = {2 - 2 - 9, 0 + 4 + 3};
    EXPECT_EQ(c, want);
}

// The reference accumulates in 64 bits: 2 x INT32_MAX^2 is about 2^63 - 2^33, far beyond 32 bits.
TEST(ReferenceGemm, AccumulatesWide) {
    const std::vector<i32> a = {kMax32, kMax32};
    const std::vector<i32> b = {kMax32, kMax32};
    const auto c = systolic::tb::reference_gemm<int32_format>(problem_shape{1, 2, 1}, a, b);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0], 2 * i64{kMax32} * i64{kMax32});
}

TEST(ReferenceGemm, RandomProblemIsDeterministicAndInRange) {
    const problem_shape s{4, 5, 6};
    const auto p1 = systolic::tb::random_problem<int32_format>(s, 77, 10);
    const auto p2 = systolic::tb::random_problem<int32_format>(s, 77, 10);
    const auto p3 = systolic::tb::random_problem<int32_format>(s, 78, 10);
    EXPECT_EQ(p1.a, p2.a);
    EXPECT_EQ(p1.b, p2.b);
    EXPECT_TRUE(p1.a != p3.a || p1.b != p3.b);
    ASSERT_EQ(p1.a.size(), 20u);
    ASSERT_EQ(p1.b.size(), 30u);
    for (auto v : p1.a)
        EXPECT_TRUE(v >= -10 && v <= 10) << v;
    for (auto v : p1.b)
        EXPECT_TRUE(v >= -10 && v <= 10) << v;
}

}  // namespace
