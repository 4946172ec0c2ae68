// Plain C++ tests of the model core: counting rules (with K-splitting), tiling plan, the array's
// stepping rule and overflow counting, number formats, quantization, layouts and memory. No
// SystemC simulation runs here (the checkers' tests are checker_test.cpp). Expected values come
// from seeds 000/001/003 or are derived by hand in the comments; none is taken from the code under
// test.
#include "core_support.h"

namespace {

using namespace core_support;

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

// K-splitting on the seed: K = 3 in chunks of KT = 2 gives two chunks, of 2 and 1 terms. Each chunk
// refills the skew, so a tile takes K + chunks x 2(N-1) = 3 + 2 x 2 = 7 edges instead of 5.
TEST(Counting, KSplitSeedExample) {
    const auto c = count_job(problem_shape{3, 3, 3}, 2, 2);
    EXPECT_EQ(c.tiles, 4u);
    EXPECT_EQ(c.k_chunks, 2u);
    EXPECT_EQ(c.advance_edges_per_tile, 7u);
    EXPECT_EQ(c.advance_edges, 28u);
    // The MACs and outputs do not depend on the split.
    EXPECT_EQ(c.macs_padded, 48u);
    EXPECT_EQ(c.macs_real, 27u);
    EXPECT_EQ(c.outputs_real, 9u);
    EXPECT_EQ(c.outputs_masked, 7u);
    EXPECT_EQ(systolic::k_chunks(3, 2), 2u);
    EXPECT_EQ(systolic::chunk_length(3, 2, 0), 2u);
    EXPECT_EQ(systolic::chunk_length(3, 2, 1), 1u);
}

// KT = 0 or KT >= K: one chunk of K, the unsplit counts.
TEST(Counting, KTileOfZeroOrAtLeastKIsOneChunk) {
    for (u64 kt : {0ull, 3ull, 4ull, 1000ull}) {
        const auto c = count_job(problem_shape{3, 3, 3}, 2, kt);
        EXPECT_EQ(c.k_chunks, 1u) << "KT=" << kt;
        EXPECT_EQ(c.advance_edges_per_tile, 5u) << "KT=" << kt;
        EXPECT_EQ(c.advance_edges, 20u) << "KT=" << kt;
        EXPECT_EQ(systolic::effective_k_tile(3, kt), 3u) << "KT=" << kt;
        EXPECT_EQ(systolic::chunk_length(3, kt, 0), 3u) << "KT=" << kt;
    }
    EXPECT_EQ(count_job(problem_shape{3, 3, 3}, 2).k_chunks, 1u);
    EXPECT_EQ(systolic::effective_k_tile(3, 2), 2u);
}

// K = 10 in chunks of 4: 4, 4 and a short last chunk of 2. On N = 3: 10 + 3 x 4 = 22 edges.
TEST(Counting, ShortLastChunk) {
    EXPECT_EQ(systolic::k_chunks(10, 4), 3u);
    EXPECT_EQ(systolic::chunk_length(10, 4, 0), 4u);
    EXPECT_EQ(systolic::chunk_length(10, 4, 1), 4u);
    EXPECT_EQ(systolic::chunk_length(10, 4, 2), 2u);
    EXPECT_EQ(count_job(problem_shape{3, 10, 3}, 3, 4).advance_edges_per_tile, 22u);
    // K = 8 in chunks of 4 divides evenly: two full chunks.
    EXPECT_EQ(systolic::k_chunks(8, 4), 2u);
    EXPECT_EQ(systolic::chunk_length(8, 4, 1), 4u);
    // The chunk lengths always add up to K.
    for (u64 k = 1; k <= 12; ++k) {
        for (u64 kt = 0; kt <= 13; ++kt) {
            u64 sum = 0;
            for (u64 ch = 0; ch < systolic::k_chunks(k, kt); ++ch) {
                const u64 len = systolic::chunk_length(k, kt, ch);
                EXPECT_GE(len, 1u) << "K=" << k << " KT=" << kt << " chunk " << ch;
                sum += len;
            }
            EXPECT_EQ(sum, k) << "K=" << k << " KT=" << kt;
        }
    }
}

// KT = 1: every term is its own chunk, K x (1 + 2(N-1)) = K(2N-1) edges: 5 x 7 = 35 on N = 4.
TEST(Counting, OneTermChunks) {
    const auto c = count_job(problem_shape{4, 5, 4}, 4, 1);
    EXPECT_EQ(c.k_chunks, 5u);
    EXPECT_EQ(c.advance_edges_per_tile, 35u);
    EXPECT_EQ(c.macs_padded, 80u);
}

TEST(Counting, KSplitIsUsableAtCompileTime) {
    constexpr auto c = count_job(problem_shape{3, 3, 3}, 2, 2);
    static_assert(c.k_chunks == 2 && c.advance_edges == 28, "seed example split 2 + 1: 28 edges");
    static_assert(systolic::chunk_length(3, 2, 1) == 1, "short last chunk");
    EXPECT_EQ(c.advance_edges_per_tile, 7u);
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
        advance_tokens(c, w.data(), no.data());
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
        advance_tokens(c, w.data(), no.data());
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
        advance_tokens(c, west_valid, north_bubble);
    // N bubble edges flush the valid A tokens still in flight, so they never meet the B stream.
    const tok west_bubble[2] = {garbage, garbage};
    for (int e = 0; e < 2; ++e)
        advance_tokens(c, west_bubble, north_bubble);
    const tok north_valid[2] = {tok::of(3), tok::of(4)};
    for (int e = 0; e < 6; ++e)
        advance_tokens(c, west_bubble, north_valid);
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
    advance_tokens(c, zero, seven);
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

// One edge of a 1x1 array with two valid operands.
template <class Core>
void feed_one(Core& c, typename Core::operand_type a, typename Core::operand_type b) {
    using t = typename Core::token_type;
    const t west[1] = {t::of(a)};
    const t north[1] = {t::of(b)};
    advance_tokens(c, west, north);
}

TEST(ArrayCore, OverflowModeDefaultsToWrapAndIsKeptByClear) {
    core c(2);
    EXPECT_EQ(c.overflow(), overflow_mode::wrap);
    c.set_overflow(overflow_mode::saturate);
    EXPECT_EQ(c.overflow(), overflow_mode::saturate);
    c.clear();
    EXPECT_EQ(c.overflow(), overflow_mode::saturate);
    c.set_overflow(overflow_mode::wrap);
    EXPECT_EQ(c.overflow(), overflow_mode::wrap);
}

// Wrap: 3p - 2^64 = 13835058042397261827 - 18446744073709551616 = -4611686031312289789, one
// overflow. A fourth term brings it back into range without another: -4611686031312289789 + p
// = -17179869180 (= 4p - 2^64 = -2^34 + 4).
TEST(ArrayCore, CountsWrappingOverflows) {
    core c(1);
    ASSERT_EQ(c.overflow(), overflow_mode::wrap);
    feed_one(c, kMax32, kMax32);
    feed_one(c, kMax32, kMax32);
    EXPECT_EQ(c.accumulator(0, 0), 2 * kMaxProduct);
    EXPECT_EQ(c.overflows_in(1, 1), 0u);
    feed_one(c, kMax32, kMax32);
    EXPECT_EQ(c.accumulator(0, 0), -4611686031312289789);
    EXPECT_EQ(c.overflows_in(1, 1), 1u);
    feed_one(c, kMax32, kMax32);
    EXPECT_EQ(c.accumulator(0, 0), -17179869180);
    EXPECT_EQ(c.overflows_in(1, 1), 1u);
    EXPECT_EQ(c.consumed(0, 0), 4u);
}

// Saturate: the third term clamps at INT64_MAX, and the fourth overflows again (INT64_MAX + p).
TEST(ArrayCore, CountsSaturatingOverflows) {
    core c(1);
    c.set_overflow(overflow_mode::saturate);
    feed_one(c, kMax32, kMax32);
    feed_one(c, kMax32, kMax32);
    EXPECT_EQ(c.overflows_in(1, 1), 0u);
    feed_one(c, kMax32, kMax32);
    EXPECT_EQ(c.accumulator(0, 0), kMax64);
    EXPECT_EQ(c.overflows_in(1, 1), 1u);
    feed_one(c, kMax32, kMax32);
    EXPECT_EQ(c.accumulator(0, 0), kMax64);
    EXPECT_EQ(c.overflows_in(1, 1), 2u);
    // A negative term leaves the limit: INT64_MAX - p = 4611686022722355198.
    feed_one(c, kMax32, -kMax32);
    EXPECT_EQ(c.accumulator(0, 0), kMax64 - kMaxProduct);
    EXPECT_EQ(c.overflows_in(1, 1), 2u);
    EXPECT_EQ(c.consumed(0, 0), 5u);

    // Downwards: INT32_MIN x INT32_MAX = -(2^62 - 2^31), three of them are below -2^63.
    core d(1);
    d.set_overflow(overflow_mode::saturate);
    for (int t = 0; t < 3; ++t)
        feed_one(d, kMin32, kMax32);
    EXPECT_EQ(d.accumulator(0, 0), kMin64);
    EXPECT_EQ(d.overflows_in(1, 1), 1u);
}

// The int8 format on the array: 127 x 127 = 16129 per term. 133144 terms are 2147479576, still
// below INT32_MAX; the 133145th makes 2147495705 and wraps to 2147495705 - 2^32 = -2147471591.
TEST(ArrayCore, Int8FormatOverflowsItsInt32Accumulator) {
    array_core<int8_format> c(1);
    for (int t = 0; t < 133144; ++t)
        feed_one(c, 127, 127);
    EXPECT_EQ(c.accumulator(0, 0), 2147479576);
    EXPECT_EQ(c.overflows_in(1, 1), 0u);
    feed_one(c, 127, 127);
    EXPECT_EQ(c.accumulator(0, 0), -2147471591);
    EXPECT_EQ(c.overflows_in(1, 1), 1u);
    EXPECT_EQ(c.consumed(0, 0), 133145u);

    array_core<int8_format> s(1);
    s.set_overflow(overflow_mode::saturate);
    for (int t = 0; t < 133145; ++t)
        feed_one(s, 127, 127);
    EXPECT_EQ(s.accumulator(0, 0), kMax32);
    EXPECT_EQ(s.overflows_in(1, 1), 1u);
}

// Only PEs whose sums leave the range count, and overflows_in sums over the top-left block: on a
// 2x2 array with K = 3, row 0 of A is INT32_MAX (3p overflows) and row 1 is 1 (3 x INT32_MAX does
// not), so PE(0,0) and PE(0,1) overflow once each.
TEST(ArrayCore, OverflowsInCountsTheBlock) {
    for (auto mode : {overflow_mode::wrap, overflow_mode::saturate}) {
        tile_feed f;
        f.n = 2;
        f.k = 3;
        f.a = {kMax32, kMax32, kMax32, 1, 1, 1};
        f.b = {kMax32, kMax32, kMax32, kMax32, kMax32, kMax32};
        f.real_rows = f.real_cols = 2;
        core c(2);
        c.set_overflow(mode);
        f.run(c, 0, 5);
        ASSERT_TRUE(c.complete(3));
        EXPECT_EQ(c.overflows_in(1, 1), 1u) << to_string(mode);
        EXPECT_EQ(c.overflows_in(1, 2), 2u) << to_string(mode);
        EXPECT_EQ(c.overflows_in(2, 1), 1u) << to_string(mode);
        EXPECT_EQ(c.overflows_in(2, 2), 2u) << to_string(mode);
        EXPECT_EQ(c.overflows_in(0, 0), 0u) << to_string(mode);
        EXPECT_EQ(c.accumulator(1, 0), 3 * i64{kMax32});
        EXPECT_EQ(c.accumulator(1, 1), 3 * i64{kMax32});
        EXPECT_EQ(c.accumulator(0, 0), mode == overflow_mode::wrap ? -4611686031312289789 : kMax64);
        // clear() zeroes the overflow counts too.
        c.clear();
        EXPECT_EQ(c.overflows_in(2, 2), 0u);
    }
}

// clear_accumulators() between K chunks: accumulators and overflow counts go to zero, but the term
// counters, the tokens in flight and the edge count stay.
TEST(ArrayCore, ClearAccumulatorsKeepsTokensAndCounts) {
    core c(1);
    c.set_overflow(overflow_mode::saturate);
    for (int t = 0; t < 3; ++t)
        feed_one(c, kMax32, kMax32);
    ASSERT_EQ(c.overflows_in(1, 1), 1u);
    c.clear_accumulators();
    EXPECT_EQ(c.accumulator(0, 0), 0);
    EXPECT_EQ(c.overflows_in(1, 1), 0u);
    EXPECT_EQ(c.consumed(0, 0), 3u);
    EXPECT_EQ(c.macs(), 3u);
    EXPECT_EQ(c.edges(), 3u);
    EXPECT_TRUE(c.a(0, 0).valid);
    EXPECT_EQ(c.a(0, 0).value, kMax32);
    EXPECT_TRUE(c.b(0, 0).valid);
    EXPECT_EQ(c.b(0, 0).value, kMax32);
    EXPECT_EQ(c.overflow(), overflow_mode::saturate);
    feed_one(c, 2, 3);  // accumulation restarts from zero
    EXPECT_EQ(c.accumulator(0, 0), 6);
    EXPECT_EQ(c.consumed(0, 0), 4u);
}

// On a larger array the tokens in flight survive the clear: a 3x3 array, A = [[1,2],[3,4],[5,6]]
// and B = [[10,20,30],[40,50,60]] as in TokensMoveOnePePerEdge; after three edges PE(1,1) holds
// a = 3 and b = 20 (term 0). Clearing there and finishing the tile leaves only the terms consumed
// after the clear: PE(1,1) gets 4 x 50 = 200 alone.
TEST(ArrayCore, ClearAccumulatorsMidTile) {
    tile_feed f;
    f.n = 3;
    f.k = 2;
    f.a = {1, 2, 3, 4, 5, 6};
    f.b = {10, 20, 30, 40, 50, 60};
    f.real_rows = f.real_cols = 3;
    core c(3);
    f.run(c, 0, 3);
    ASSERT_EQ(c.accumulator(1, 1), 3 * 20);
    const u64 consumed_before = c.macs();
    c.clear_accumulators();
    EXPECT_EQ(c.macs(), consumed_before);
    EXPECT_EQ(c.a(1, 1).value, 3);
    EXPECT_TRUE(c.a(1, 1).valid);
    EXPECT_EQ(c.b(1, 1).value, 20);
    EXPECT_TRUE(c.b(1, 1).valid);
    f.run(c, 3, 6);
    EXPECT_TRUE(c.complete(2));
    EXPECT_EQ(c.accumulator(1, 1), 4 * 50);
    EXPECT_EQ(c.accumulator(0, 0), 0);                // both of PE(0,0)'s terms came before the clear
    EXPECT_EQ(c.accumulator(2, 2), 5 * 30 + 6 * 60);  // all of PE(2,2)'s came after
}

// The seed's last tile split K = 2 + 1, as the controller runs it: each chunk is its own skewed
// stream of KT + 2(N-1) edges. With partial sums the accumulators are cleared between chunks:
// chunk 0 gives 7*2 + 8*0 = 14, chunk 1 gives 9*1 = 9, and 14 + 9 = 23. Preserved accumulators see
// one sum: 23 at the end. Either way 7 = 3 + 2 x 2 edges and 3 terms per PE.
TEST(ArrayCore, SeedLastTileInTwoChunks) {
    tile_feed chunk0;
    chunk0.n = 2;
    chunk0.k = 2;
    chunk0.a = {7, 8, 0, 0};
    chunk0.b = {2, 0, 0, 0};
    chunk0.real_rows = chunk0.real_cols = 1;
    tile_feed chunk1;
    chunk1.n = 2;
    chunk1.k = 1;
    chunk1.a = {9, 0};
    chunk1.b = {1, 0};
    chunk1.real_rows = chunk1.real_cols = 1;
    for (bool partials : {true, false}) {
        core c(2);
        chunk0.run(c, 0, 4);
        ASSERT_TRUE(c.complete(2));
        EXPECT_EQ(c.accumulator(0, 0), 14);
        if (partials) c.clear_accumulators();
        chunk1.run(c, 0, 3);
        EXPECT_TRUE(c.complete(3));
        EXPECT_EQ(c.accumulator(0, 0), partials ? 9 : 23);
        EXPECT_EQ(c.edges(), count_job(problem_shape{3, 3, 3}, 2, 2).advance_edges_per_tile);
        EXPECT_EQ(c.macs(), 12u);
        for (std::size_t i = 0; i < 2; ++i) {
            for (std::size_t j = 0; j < 2; ++j) {
                if (i + j > 0) {
                    EXPECT_EQ(c.accumulator(i, j), 0) << i << "," << j;
                }
            }
        }
    }
}

// The zero-copy token layout against the fed sequence itself: after edge e, PE(i,j) holds the A
// token that entered row i at edge e - j and the B token that entered column j at edge e - i
// (bubbles before that). 5N edges on a 4x4 array take the A windows around their 2N-slot buffers
// several times and the B ring around N times over. Bubbles are mixed in; they carry zero.
TEST(ArrayCore, TokensFollowTheFedSequenceAcrossBufferWraps) {
    const std::size_t n = 4;
    const std::size_t edges = 5 * n;
    auto west_in = [](std::size_t e, std::size_t i) {
        return (e + i) % 3 == 0 ? tok::bubble() : tok::of(static_cast<i32>(100 * e + i + 1));
    };
    auto north_in = [](std::size_t e, std::size_t j) {
        return (e + 2 * j) % 4 == 0 ? tok::bubble() : tok::of(-static_cast<i32>(100 * e + j + 1));
    };
    core c(n);
    std::vector<i64> acc(n * n, 0);
    std::vector<u64> terms(n * n, 0);
    for (std::size_t e = 0; e < edges; ++e) {
        std::vector<tok> w(n), no(n);
        for (std::size_t i = 0; i < n; ++i)
            w[i] = west_in(e, i);
        for (std::size_t j = 0; j < n; ++j)
            no[j] = north_in(e, j);
        advance_tokens(c, w.data(), no.data());
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                const tok want_a = e >= j ? west_in(e - j, i) : tok::bubble();
                const tok want_b = e >= i ? north_in(e - i, j) : tok::bubble();
                const tok got_a = c.a(i, j), got_b = c.b(i, j);
                ASSERT_EQ(got_a.valid, want_a.valid) << "edge " << e << " a(" << i << "," << j << ")";
                ASSERT_EQ(got_a.value, want_a.value) << "edge " << e << " a(" << i << "," << j << ")";
                ASSERT_EQ(got_b.valid, want_b.valid) << "edge " << e << " b(" << i << "," << j << ")";
                ASSERT_EQ(got_b.value, want_b.value) << "edge " << e << " b(" << i << "," << j << ")";
                if (want_a.valid && want_b.valid) {
                    acc[i * n + j] += i64{want_a.value} * want_b.value;
                    ++terms[i * n + j];
                }
                ASSERT_EQ(c.accumulator(i, j), acc[i * n + j])
                    << "edge " << e << " PE(" << i << "," << j << ")";
                ASSERT_EQ(c.consumed(i, j), terms[i * n + j])
                    << "edge " << e << " PE(" << i << "," << j << ")";
            }
        }
    }
    EXPECT_EQ(c.edges(), edges);
    EXPECT_GT(c.macs(), 0u);
}

// The floating-point formats on the array (including any vectorised clone of its MAC loop) round
// the product before adding, like the format itself: -1 + (1 + 2^-12)^2 = 2^-11, not 2^-11 + 2^-24.
TEST(ArrayCore, FloatFormatsDoNotFuseMultiplyAdd) {
    const float x = 1.0f + 0x1p-12f;
    array_core<fp32_format> c(1);
    feed_one(c, -1.0f, 1.0f);
    feed_one(c, x, x);
    EXPECT_EQ(c.accumulator(0, 0), 0x1p-11f);
    EXPECT_EQ(c.overflows_in(1, 1), 0u);
    // bf16: -1 + (1 + 2^-7)^2 = 2^-6 + 2^-14, the product exact in float.
    array_core<bf16_format> h(1);
    feed_one(h, bf16::from_float(-1.0f), bf16::from_float(1.0f));
    feed_one(h, bf16{0x3f81}, bf16{0x3f81});
    EXPECT_EQ(h.accumulator(0, 0), 0x1p-6f + 0x1p-14f);
    EXPECT_EQ(h.consumed(0, 0), 2u);
}

// ------------------------------------------------------------------------------------------------
// NumberFormat
// ------------------------------------------------------------------------------------------------

// One multiply-accumulate (or add) of format F in mode M, with the overflow flag it reported. The
// flag starts out set, so a call that is in range must actively clear it.
template <class Acc>
struct step_result {
    Acc value;
    bool overflowed;
};

template <class F, overflow_mode M = overflow_mode::wrap>
constexpr step_result<typename F::accumulator_type> mac_step(typename F::accumulator_type acc,
                                                             typename F::operand_type a,
                                                             typename F::operand_type b) {
    bool overflowed = true;
    const auto v = F::template mac<M>(acc, a, b, overflowed);
    return {v, overflowed};
}

template <class F, overflow_mode M = overflow_mode::wrap>
constexpr step_result<typename F::accumulator_type> add_step(typename F::accumulator_type acc,
                                                             typename F::accumulator_type x) {
    bool overflowed = true;
    const auto v = F::template add<M>(acc, x, overflowed);
    return {v, overflowed};
}

template <class F>
constexpr typename F::accumulator_type wrap_mac(typename F::accumulator_type acc, typename F::operand_type a,
                                                typename F::operand_type b) {
    return mac_step<F>(acc, a, b).value;
}

// Constant evaluation rejects undefined behaviour, so these also prove that mac never overflows a
// signed type on the way.
static_assert(wrap_mac<int32_format>(kMax64, 1, 1) == kMin64, "wraps upward");
static_assert(wrap_mac<int32_format>(kMin64, -1, 1) == kMax64, "wraps downward");
static_assert(wrap_mac<int32_format>(0, kMin32, kMin32) == (i64{1} << 62), "largest product is exact");
static_assert(mac_step<int32_format, overflow_mode::saturate>(kMax64, 1, 1).value == kMax64,
              "saturates upward");
static_assert(mac_step<int8_format>(std::numeric_limits<i32>::max(), 1, 1).overflowed,
              "int8 wrap reports it");
static_assert(!mac_step<int8_format>(0, -128, -128).overflowed, "int8 product fits the accumulator");

TEST(NumberFormat, Int32MacIsExactInRange) {
    EXPECT_EQ(wrap_mac<int32_format>(0, 3, 4), 12);
    EXPECT_EQ(wrap_mac<int32_format>(10, -3, 4), -2);
    EXPECT_EQ(wrap_mac<int32_format>(0, kMax32, kMax32), i64{kMax32} * i64{kMax32});
    EXPECT_EQ(wrap_mac<int32_format>(0, kMin32, kMax32), -(i64{1} << 31) * i64{kMax32});
    EXPECT_EQ(wrap_mac<int32_format>(0, kMin32, kMin32), i64{1} << 62);
}

TEST(NumberFormat, Int32MacWrapsModulo2To64) {
    volatile i64 max = kMax64;  // runtime values, not constant-folded
    volatile i64 min = kMin64;
    EXPECT_EQ(wrap_mac<int32_format>(max, 1, 1), kMin64);
    EXPECT_EQ(wrap_mac<int32_format>(min, -1, 1), kMax64);
    EXPECT_EQ(wrap_mac<int32_format>(min, 1, -1), kMax64);
    // INT64_MAX + 2^62 = 2^63 - 1 + 2^62 -> minus 2^64 = -2^63 + 2^62 - 1.
    EXPECT_EQ(wrap_mac<int32_format>(max, kMin32, kMin32), kMin64 + (i64{1} << 62) - 1);
    // Four times 2^62 is 2^64, which wraps back to where it started.
    i64 acc = 5;
    for (int i = 0; i < 4; ++i)
        acc = wrap_mac<int32_format>(acc, kMin32, kMin32);
    EXPECT_EQ(acc, 5);
}

TEST(NumberFormat, Int32Names) {
    EXPECT_STREQ(int32_format::name, "int32");
    EXPECT_STREQ(int32_format::accumulator_name, "int64");
}

TEST(NumberFormat, OtherFormatNames) {
    EXPECT_STREQ(int8_format::name, "int8");
    EXPECT_STREQ(int8_format::accumulator_name, "int32");
    EXPECT_STREQ(int8_format::operand_descr, "|i1");
    EXPECT_STREQ(int8_format::accumulator_descr, "<i4");
    EXPECT_STREQ(int32_format::operand_descr, "<i4");
    EXPECT_STREQ(int32_format::accumulator_descr, "<i8");
    EXPECT_STREQ(fp32_format::name, "fp32");
    EXPECT_STREQ(fp32_format::accumulator_name, "fp32");
    EXPECT_STREQ(bf16_format::name, "bf16");
    EXPECT_STREQ(bf16_format::accumulator_name, "fp32");
    EXPECT_STREQ(bf16_format::operand_descr, "<f4");  // read from float32 files, rounded on load
    EXPECT_TRUE(int8_format::is_integer);
    EXPECT_TRUE(int32_format::is_integer);
    EXPECT_FALSE(fp32_format::is_integer);
    EXPECT_FALSE(bf16_format::is_integer);
}

// int8 operands, int32 accumulator. INT32_MAX - 1 + 127*127 = 2147483646 + 16129 = 2147499775,
// which is 2^32 too many: wrapped, 2147499775 - 4294967296 = -2147467521.
TEST(NumberFormat, Int8MacWraps) {
    const i32 near_max = kMax32 - 1;
    const auto up = mac_step<int8_format>(near_max, 127, 127);
    EXPECT_EQ(up.value, -2147467521);
    EXPECT_TRUE(up.overflowed);
    // INT32_MIN + 1 - 128*127 = -2147483647 - 16256 = -2147499903, plus 2^32 = 2147467393.
    const auto down = mac_step<int8_format>(kMin32 + 1, -128, 127);
    EXPECT_EQ(down.value, 2147467393);
    EXPECT_TRUE(down.overflowed);
}

TEST(NumberFormat, Int8MacSaturates) {
    constexpr auto sat = overflow_mode::saturate;
    const auto up = mac_step<int8_format, sat>(kMax32 - 1, 127, 127);
    EXPECT_EQ(up.value, kMax32);
    EXPECT_TRUE(up.overflowed);
    const auto down = mac_step<int8_format, sat>(kMin32 + 1, -128, 127);
    EXPECT_EQ(down.value, kMin32);
    EXPECT_TRUE(down.overflowed);
    // Already at the limit, a product of the same sign stays there and is reported again.
    const auto again = mac_step<int8_format, sat>(kMax32, 1, 1);
    EXPECT_EQ(again.value, kMax32);
    EXPECT_TRUE(again.overflowed);
    // A product of the other sign leaves the limit normally.
    const auto back = mac_step<int8_format, sat>(kMax32, -1, 1);
    EXPECT_EQ(back.value, kMax32 - 1);
    EXPECT_FALSE(back.overflowed);
}

TEST(NumberFormat, IntegerMacInRangeReportsNoOverflow) {
    for (auto mode : {overflow_mode::wrap, overflow_mode::saturate}) {
        const bool sat = mode == overflow_mode::saturate;
        auto i8mac = [sat](i32 acc, i8 a, i8 b) {
            return sat ? mac_step<int8_format, overflow_mode::saturate>(acc, a, b)
                       : mac_step<int8_format>(acc, a, b);
        };
        auto i32mac = [sat](i64 acc, i32 a, i32 b) {
            return sat ? mac_step<int32_format, overflow_mode::saturate>(acc, a, b)
                       : mac_step<int32_format>(acc, a, b);
        };
        // -128 x -128 = 16384: the largest int8 product, exact in the accumulator.
        auto r = i8mac(0, -128, -128);
        EXPECT_EQ(r.value, 16384);
        EXPECT_FALSE(r.overflowed);
        // Exactly reaching the ends of the range is not an overflow: 2147467518 + 127*127 = INT32_MAX.
        r = i8mac(kMax32 - 16129, 127, 127);
        EXPECT_EQ(r.value, kMax32);
        EXPECT_FALSE(r.overflowed);
        r = i8mac(kMin32 + 16256, -128, 127);  // -128*127 = -16256 lands on INT32_MIN exactly
        EXPECT_EQ(r.value, kMin32);
        EXPECT_FALSE(r.overflowed);
        auto w = i32mac(kMax64 - (i64{1} << 62), kMin32, kMin32);  // lands on INT64_MAX exactly
        EXPECT_EQ(w.value, kMax64);
        EXPECT_FALSE(w.overflowed);
        w = i32mac(-7, 3, 4);
        EXPECT_EQ(w.value, 5);
        EXPECT_FALSE(w.overflowed);
    }
}

TEST(NumberFormat, IntegerAddWrapsOrSaturates) {
    constexpr auto sat = overflow_mode::saturate;
    auto r = add_step<int8_format>(kMax32, 1);
    EXPECT_EQ(r.value, kMin32);
    EXPECT_TRUE(r.overflowed);
    r = add_step<int8_format>(kMin32, -1);
    EXPECT_EQ(r.value, kMax32);
    EXPECT_TRUE(r.overflowed);
    // -1 + INT32_MIN: both negative, the exact sum is one below the range.
    r = add_step<int8_format, sat>(-1, kMin32);
    EXPECT_EQ(r.value, kMin32);
    EXPECT_TRUE(r.overflowed);
    r = add_step<int8_format, sat>(kMax32, kMax32);
    EXPECT_EQ(r.value, kMax32);
    EXPECT_TRUE(r.overflowed);
    // Opposite signs never overflow, even at the extremes.
    r = add_step<int8_format, sat>(kMax32, kMin32);
    EXPECT_EQ(r.value, -1);
    EXPECT_FALSE(r.overflowed);
    r = add_step<int8_format>(kMax32, -1);
    EXPECT_EQ(r.value, kMax32 - 1);
    EXPECT_FALSE(r.overflowed);

    auto w = add_step<int32_format>(kMax64, 1);
    EXPECT_EQ(w.value, kMin64);
    EXPECT_TRUE(w.overflowed);
    w = add_step<int32_format, sat>(kMax64, 1);
    EXPECT_EQ(w.value, kMax64);
    EXPECT_TRUE(w.overflowed);
    w = add_step<int32_format, sat>(kMin64, kMin64);
    EXPECT_EQ(w.value, kMin64);
    EXPECT_TRUE(w.overflowed);
    w = add_step<int32_format, sat>(kMin64, kMax64);
    EXPECT_EQ(w.value, -1);
    EXPECT_FALSE(w.overflowed);
    w = add_step<int32_format>(0, 0);
    EXPECT_EQ(w.value, 0);
    EXPECT_FALSE(w.overflowed);
}

// The product is rounded to float, then added: no fused multiply-add. With a = b = 1 + 2^-12 the
// exact product is 1 + 2^-11 + 2^-24. Floats in [1, 2) are 2^-23 apart, so 2^-24 is exactly half
// a step: a tie, broken to the even neighbour. 1 + 2^-11 has fraction field 2^12 (even), 1 + 2^-11
// + 2^-23 has an odd one, so the product rounds to 1 + 2^-11, and adding -1 gives exactly 2^-11.
// A fused multiply-add would round only once: 2^-11 + 2^-24 (13 significant bits, exact).
TEST(NumberFormat, Fp32MacRoundsTheProductThenAdds) {
    const float x = 1.0f + 0x1p-12f;
    ASSERT_EQ(bits_of(x), 0x3f800800u);  // exactly representable
    const auto r = mac_step<fp32_format>(-1.0f, x, x);
    EXPECT_EQ(r.value, 0x1p-11f);
    EXPECT_NE(r.value, 0x1p-11f + 0x1p-24f);  // the fused result
    EXPECT_FALSE(r.overflowed);
    const auto s = mac_step<fp32_format, overflow_mode::saturate>(-1.0f, x, x);
    EXPECT_EQ(s.value, 0x1p-11f);
}

// Floats never report an integer overflow: they go to infinity, in either mode.
TEST(NumberFormat, FloatOverflowGoesToInfinityWithoutAFlag) {
    const float big = std::numeric_limits<float>::max();
    const auto r = add_step<fp32_format, overflow_mode::saturate>(big, big);
    EXPECT_TRUE(std::isinf(r.value));
    EXPECT_GT(r.value, 0.0f);
    EXPECT_FALSE(r.overflowed);
    const auto m = mac_step<fp32_format>(big, big, 2.0f);
    EXPECT_TRUE(std::isinf(m.value));
    EXPECT_FALSE(m.overflowed);
    const auto a = add_step<fp32_format>(1.5f, 2.25f);
    EXPECT_EQ(a.value, 3.75f);
    EXPECT_FALSE(a.overflowed);
}

// bf16 operands widen to float and multiply exactly (8 x 8 significant bits fit float's 24), so
// the product is not rounded to bf16: (1 + 2^-7)^2 = 1 + 2^-6 + 2^-14, minus 1 = 2^-6 + 2^-14.
TEST(NumberFormat, Bf16MacKeepsTheProductInFloat) {
    const bf16 x{0x3f81};  // 1 + 2^-7
    ASSERT_EQ(x.to_float(), 1.0f + 0x1p-7f);
    const auto r = mac_step<bf16_format>(-1.0f, x, x);
    EXPECT_EQ(r.value, 0x1p-6f + 0x1p-14f);
    EXPECT_FALSE(r.overflowed);
}

// bf16 keeps 7 fraction bits, so near 1 the representable values are 2^-7 apart.
TEST(NumberFormat, Bf16FromFloatRoundsToNearestEven) {
    EXPECT_EQ(bf16::from_float(1.0f).bits, 0x3f80);
    EXPECT_EQ(bf16::from_float(-2.0f).bits, 0xc000);
    EXPECT_EQ(bf16::from_float(0.0f).bits, 0x0000);
    EXPECT_EQ(bf16::from_float(-0.0f).bits, 0x8000);
    // 1 + 2^-8 is halfway between 1 (even fraction 0) and 1 + 2^-7 (odd fraction 1): down to 1.
    EXPECT_EQ(bf16::from_float(1.0f + 0x1p-8f).bits, 0x3f80);
    // 1 + 3 x 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6 (fraction 2, even): up.
    EXPECT_EQ(bf16::from_float(1.0f + 3 * 0x1p-8f).bits, 0x3f82);
    EXPECT_EQ(bf16::from_float(1.0f + 3 * 0x1p-8f).to_float(), 1.0f + 0x1p-6f);
    // Just off the tie, the nearer neighbour wins.
    EXPECT_EQ(bf16::from_float(1.0f + 0x1p-8f + 0x1p-20f).bits, 0x3f81);
    EXPECT_EQ(bf16::from_float(1.0f + 0x1p-8f - 0x1p-20f).bits, 0x3f80);
    EXPECT_EQ(bf16::from_float(1.0f + 0x1p-7f + 0x1p-9f).bits, 0x3f81);  // a quarter step: down
    // Negative values round the magnitude the same way; the sign is kept.
    EXPECT_EQ(bf16::from_float(-1.0f).bits, 0xbf80);
    EXPECT_EQ(bf16::from_float(-(1.0f + 0x1p-8f)).bits, 0xbf80);
    EXPECT_EQ(bf16::from_float(-(1.0f + 3 * 0x1p-8f)).bits, 0xbf82);
    EXPECT_EQ(bf16::from_float(-(1.0f + 3 * 0x1p-8f)).to_float(), -(1.0f + 0x1p-6f));
}

TEST(NumberFormat, Bf16FromFloatSpecialValues) {
    const float inf = std::numeric_limits<float>::infinity();
    EXPECT_EQ(bf16::from_float(inf).bits, 0x7f80);
    EXPECT_EQ(bf16::from_float(-inf).bits, 0xff80);
    EXPECT_TRUE(std::isinf(bf16::from_float(inf).to_float()));
    // The largest finite float, 0x7f7fffff: its upper half 0x7f7f is odd and the lower half 0xffff
    // is more than half, so it rounds up, carrying into the exponent: 0x7f80, infinity.
    EXPECT_EQ(bf16::from_float(std::numeric_limits<float>::max()).bits, 0x7f80);
    EXPECT_EQ(bf16::from_float(-std::numeric_limits<float>::max()).bits, 0xff80);
    // NaNs stay NaNs (quiet), even one whose payload is only in the low half, which plain rounding
    // would turn into infinity (0x7f800001 + 0x7fff = 0x7f808000, upper half 0x7f80).
    for (u32 nan_bits : {0x7fc00000u, 0x7f800001u, 0x7fbfffffu, 0xff800001u, 0xffc00000u}) {
        const bf16 h = bf16::from_float(float_of(nan_bits));
        EXPECT_TRUE(std::isnan(h.to_float())) << std::hex << nan_bits << " -> " << h.bits;
        EXPECT_EQ(h.bits & 0x0040, 0x0040) << std::hex << nan_bits << ": quiet bit";
        EXPECT_EQ(h.bits & 0x8000, (nan_bits >> 16) & 0x8000) << std::hex << nan_bits << ": sign kept";
    }
}

// Every bf16 is a float, so widening and rounding back gives the same bits; a NaN gives a NaN.
TEST(NumberFormat, Bf16RoundTripsThroughFloat) {
    for (u32 bits = 0; bits <= 0xffff; ++bits) {
        const bf16 h{static_cast<std::uint16_t>(bits)};
        const float f = h.to_float();
        ASSERT_EQ(bits_of(f), bits << 16);
        const bf16 back = bf16::from_float(f);
        if (std::isnan(f)) {
            ASSERT_TRUE(std::isnan(back.to_float())) << std::hex << bits;
        } else {
            ASSERT_EQ(back.bits, bits) << std::hex << bits;
            ASSERT_TRUE(back == h);
        }
    }
    EXPECT_EQ(bf16{0x3f80}.to_float(), 1.0f);
    EXPECT_EQ(bf16{0xc0a0}.to_float(), -5.0f);
    EXPECT_TRUE(bf16{0x3f80} != bf16{0x3f81});
}

TEST(NumberFormat, ValueFrom) {
    EXPECT_EQ(systolic::value_from<i8>(-5.0), -5);
    EXPECT_EQ(systolic::value_from<i32>(123456.0), 123456);
    EXPECT_EQ(systolic::value_from<float>(0.25), 0.25f);
    EXPECT_EQ(systolic::value_from<bf16>(1.0).bits, 0x3f80);
    EXPECT_EQ(systolic::value_from<bf16>(1.0 + 0x1p-8).bits, 0x3f80);      // tie to even
    EXPECT_EQ(systolic::value_from<bf16>(1.0 + 3 * 0x1p-8).bits, 0x3f82);  // tie to even
}

TEST(NumberFormat, OverflowModeNames) {
    EXPECT_EQ(systolic::to_string(overflow_mode::wrap), "wrap");
    EXPECT_EQ(systolic::to_string(overflow_mode::saturate), "saturate");
    for (auto mode : {overflow_mode::wrap, overflow_mode::saturate}) {
        const auto parsed = systolic::parse_overflow_mode(systolic::to_string(mode));
        ASSERT_TRUE(parsed.has_value());
        EXPECT_EQ(*parsed, mode);
    }
    for (const char* bad : {"", "Wrap", "SATURATE", "sat", "wrap ", "clip"})
        EXPECT_FALSE(systolic::parse_overflow_mode(bad).has_value()) << "'" << bad << "'";
}

// ------------------------------------------------------------------------------------------------
// Quantize
// ------------------------------------------------------------------------------------------------

struct rounding_case {
    double v;
    double even, away, zero;
};

TEST(Quantize, RoundToIntegerInAllModes) {
    const rounding_case cases[] = {
        {0.5, 0, 1, 0},    {1.5, 2, 2, 1},     {2.5, 2, 3, 2},     {-0.5, 0, -1, 0},   {-1.5, -2, -2, -1},
        {2.4999, 2, 2, 2}, {3.5, 4, 4, 3},     {-2.5, -2, -3, -2}, {-3.5, -4, -4, -3}, {0.0, 0, 0, 0},
        {7.0, 7, 7, 7},    {-7.0, -7, -7, -7}, {2.5001, 3, 3, 2},  {-0.4999, 0, 0, 0}, {-2.6, -3, -3, -2},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(systolic::round_to_integer(c.v, rounding_mode::nearest_even), c.even) << c.v;
        EXPECT_EQ(systolic::round_to_integer(c.v, rounding_mode::nearest_away), c.away) << c.v;
        EXPECT_EQ(systolic::round_to_integer(c.v, rounding_mode::toward_zero), c.zero) << c.v;
    }
    // Large integers are already integers (2^52 + 1 is odd, so a tie rule must not touch it).
    const double big = 0x1p52 + 1;
    EXPECT_EQ(systolic::round_to_integer(big, rounding_mode::nearest_even), big);
    EXPECT_EQ(systolic::round_to_integer(-big, rounding_mode::nearest_even), -big);
}

TEST(Quantize, SaturateInt8) {
    bool sat = true;
    EXPECT_EQ(systolic::saturate_int8(127, 0, &sat), 127);
    EXPECT_FALSE(sat);
    EXPECT_EQ(systolic::saturate_int8(-128, 0, &sat), -128);
    EXPECT_FALSE(sat);
    EXPECT_EQ(systolic::saturate_int8(128, 0, &sat), 127);
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::saturate_int8(-129, 0, &sat), -128);
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::saturate_int8(1e30, 0, &sat), 127);
    EXPECT_TRUE(sat);
    // The zero point is added before the clip: 120 + 10 = 130 clips, 120 - 10 = 110 does not.
    EXPECT_EQ(systolic::saturate_int8(120, 10, &sat), 127);
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::saturate_int8(120, -10, &sat), 110);
    EXPECT_FALSE(sat);
    // NaN maps to the zero point.
    EXPECT_EQ(systolic::saturate_int8(std::nan(""), 5, &sat), 5);
    EXPECT_FALSE(sat);
    EXPECT_EQ(systolic::saturate_int8(3, 0), 3);  // the flag is optional
}

TEST(Quantize, RequantizeSaturates) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    bool sat = true;
    EXPECT_EQ(systolic::requantize(254, q, &sat), 127);  // 127 exactly
    EXPECT_FALSE(sat);
    EXPECT_EQ(systolic::requantize(256, q, &sat), 127);  // 128
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::requantize(300, q, &sat), 127);
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::requantize(-256, q, &sat), -128);  // -128 exactly
    EXPECT_FALSE(sat);
    EXPECT_EQ(systolic::requantize(-258, q, &sat), -128);  // -129
    EXPECT_TRUE(sat);
    EXPECT_EQ(systolic::requantize(-1e12, q, &sat), -128);
    EXPECT_TRUE(sat);
}

// q = saturate(round(acc x scale) + zero_point): the zero point is added after rounding. acc = 5,
// scale 0.5: 2.5 rounds (to even) to 2, plus 3 is 5. Adding it first would round 5.5 up to 6.
TEST(Quantize, ZeroPointIsAddedAfterRounding) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.zero_point = 3;
    EXPECT_EQ(systolic::requantize(5, q), 5);
    q.zero_point = 1;  // 2 + 1 = 3; first would be 3.5 -> 4
    EXPECT_EQ(systolic::requantize(5, q), 3);
    q.rounding = rounding_mode::nearest_away;  // 2.5 -> 3, + 1
    EXPECT_EQ(systolic::requantize(5, q), 4);
    q.rounding = rounding_mode::toward_zero;  // -2.5 -> -2, + 1
    EXPECT_EQ(systolic::requantize(-5, q), -1);
    // The zero point can push an in-range value into saturation: 250 x 0.5 = 125, + 10 = 135.
    q.rounding = rounding_mode::nearest_even;
    q.zero_point = 10;
    bool sat = false;
    EXPECT_EQ(systolic::requantize(250, q, &sat), 127);
    EXPECT_TRUE(sat);
}

// The seeds' warning: C(0,0) = 7 split into partials 1 and 6, scale 0.5. Quantizing the complete
// sum once: round(3.5) = 4 (to even). Rounding each partial first: round(0.5) + round(3.0) = 0 + 3.
TEST(Quantize, RoundingPartialsDiffersFromRoundingOnce) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    EXPECT_EQ(systolic::requantize(1 + 6, q), 4);
    const double per_partial = systolic::round_to_integer(1 * q.scale, q.rounding) +
                               systolic::round_to_integer(6 * q.scale, q.rounding);
    EXPECT_EQ(per_partial, 3.0);
    EXPECT_EQ(systolic::saturate_int8(per_partial, q.zero_point), 3);
}

TEST(Quantize, RoundingModeNames) {
    const std::vector<std::pair<rounding_mode, std::string>> names = {
        {rounding_mode::nearest_even, "nearest-even"},
        {rounding_mode::nearest_away, "nearest-away"},
        {rounding_mode::toward_zero, "toward-zero"}};
    for (const auto& [mode, name] : names) {
        EXPECT_EQ(systolic::to_string(mode), name);
        const auto parsed = systolic::parse_rounding_mode(name);
        ASSERT_TRUE(parsed.has_value()) << name;
        EXPECT_EQ(*parsed, mode);
    }
    for (const char* bad : {"", "nearest_even", "Nearest-even", "even", "toward-zero ", "truncate"})
        EXPECT_FALSE(systolic::parse_rounding_mode(bad).has_value()) << "'" << bad << "'";
}

TEST(Quantize, DefaultsAreOff) {
    const quantization q;
    EXPECT_FALSE(q.enabled);
    EXPECT_EQ(q.scale, 1.0);
    EXPECT_EQ(q.zero_point, 0);
    EXPECT_EQ(q.rounding, rounding_mode::nearest_even);
    EXPECT_FALSE(q.per_partial);
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
    EXPECT_TRUE(l.range().end ==
                0x1038u);  // not base + rows * stride: the last row's padding is not the matrix
    EXPECT_TRUE(l.well_formed());
    EXPECT_FALSE((matrix_layout{0x1000, 2, 3, 8, 16}.well_formed()));  // stride shorter than a row
    EXPECT_FALSE((matrix_layout{0x1000, 0, 3, 8, 24}.well_formed()));
    EXPECT_TRUE((matrix_layout{0x1000, 0, 3, 8, 24}.range().empty()));
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
    EXPECT_TRUE(l.range().end == 0x50u);
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

}  // namespace
