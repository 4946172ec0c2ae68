// Plain C++ tests of the model core and the testbench checkers: counting rules (with K-splitting),
// tiling plan, the array's stepping rule and overflow counting, number formats, quantization,
// layouts, memory, job validation, scoreboard, reference GEMM and C's encoding. No SystemC
// simulation runs here. Expected values come from seeds 000/001/003 or are derived by hand in the
// comments; none is taken from the code under test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tlm>
#include <tuple>
#include <utility>
#include <vector>

#include "systolic/array_core.h"
#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/matrix_layout.h"
#include "systolic/memory_core.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tiling.h"
#include "systolic/token.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"
#include "systolic/verify/scoreboard.h"

namespace {

using systolic::array_core;
using systolic::bf16;
using systolic::bf16_format;
using systolic::count_job;
using systolic::fp32_format;
using systolic::int32_format;
using systolic::int8_format;
using systolic::k_policy;
using systolic::matrix_layout;
using systolic::memory_core;
using systolic::overflow_mode;
using systolic::plan_tiles;
using systolic::problem_shape;
using systolic::quantization;
using systolic::rounding_mode;
using systolic::tile;
using systolic::tile_order;
using systolic::token;

using core = array_core<int32_format>;
using tok = core::token_type;
using i8 = std::int8_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// One advance edge of c from token objects: R west and C north, as values and valid bits.
template <class Format>
void advance_tokens(array_core<Format>& c, const token<typename Format::operand_type>* west,
                    const token<typename Format::operand_type>* north) {
    const std::size_t rows = c.rows(), cols = c.cols();
    std::vector<typename Format::operand_type> value(rows + cols);
    std::vector<std::uint8_t> valid(rows + cols);
    for (std::size_t i = 0; i < rows; ++i) {
        value[i] = west[i].value;
        valid[i] = west[i].valid;
    }
    for (std::size_t j = 0; j < cols; ++j) {
        value[rows + j] = north[j].value;
        valid[rows + j] = north[j].valid;
    }
    c.advance(&value[0], &valid[0], &value[rows], &valid[rows]);
}

constexpr i64 kMax64 = std::numeric_limits<i64>::max();
constexpr i64 kMin64 = std::numeric_limits<i64>::min();
constexpr i32 kMax32 = std::numeric_limits<i32>::max();
constexpr i32 kMin32 = std::numeric_limits<i32>::min();

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

// The bytes of a vector of values, as memory holds them (the scoreboard and encode_c work on bytes).
template <class T>
std::vector<u8> bytes_of(const std::vector<T>& values) {
    std::vector<u8> out(values.size() * sizeof(T));
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

// Value printers for scoreboard messages: an int64 accumulator, and a signed int8 code.
std::string print_i64(const u8* p) {
    i64 v;
    std::memcpy(&v, p, sizeof v);
    return std::to_string(v);
}
std::string print_i8(const u8* p) {
    return std::to_string(static_cast<i8>(*p));
}

u32 bits_of(float f) {
    u32 u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
float float_of(u32 u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
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

// p = (2^31 - 1)^2 = 2^62 - 2^32 + 1 = 4611686014132420609. 2p = 9223372028264841218 is still
// below INT64_MAX = 9223372036854775807, 3p is above it: the third term overflows, once.
constexpr i64 kMaxProduct = i64{kMax32} * i64{kMax32};

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

// The seed job split K = 2 + 1 with partial sums: it needs an M x P accumulator buffer (72 bytes),
// here at 0x300, clear of A (0x0..0x23), B (0x100..0x123) and C (0x200..0x247).
systolic::matmul_job split_seed_job() {
    auto job = seed_job();
    job.k_tile = 2;
    job.policy = k_policy::partials;
    job.partial = systolic::make_layout(0x300, 3, 3, kAcc);
    return job;
}

TEST(JobValidation, ChunksAndPartialBufferUse) {
    auto job = seed_job();
    EXPECT_EQ(job.k_tile, 0u);
    EXPECT_EQ(job.policy, k_policy::preserve);
    EXPECT_EQ(job.overflow, overflow_mode::wrap);
    EXPECT_FALSE(job.quant.enabled);
    EXPECT_EQ(job.chunks(), 1u);
    EXPECT_FALSE(job.uses_partial_buffer());
    job.k_tile = 2;
    EXPECT_EQ(job.chunks(), 2u);
    EXPECT_FALSE(job.uses_partial_buffer());  // preserve keeps the sums in the PEs
    job.policy = k_policy::partials;
    EXPECT_TRUE(job.uses_partial_buffer());
    job.k_tile = 3;  // one chunk: nothing to combine
    EXPECT_EQ(job.chunks(), 1u);
    EXPECT_FALSE(job.uses_partial_buffer());
}

TEST(JobValidation, SplitJobWithPartialBufferPasses) {
    EXPECT_EQ(systolic::validate_job(split_seed_job(), kOp, kAcc), "");
    // Preserve needs no buffer, with or without a split; partials with one chunk neither.
    auto job = seed_job();
    job.k_tile = 2;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.policy = k_policy::partials;
    job.k_tile = 3;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.k_tile = 0;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
}

TEST(JobValidation, PartialsWithoutBufferRejected) {
    auto job = split_seed_job();
    job.partial = matrix_layout{};
    const auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("needs a partial-sum buffer"), std::string::npos) << err;
}

TEST(JobValidation, BadPartialBufferRejected) {
    auto job = split_seed_job();
    job.partial = systolic::make_layout(0x300, 3, 3, kOp);  // operand-sized, not accumulators
    auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("partial-sum buffer elements are 4 bytes"), std::string::npos) << err;
    job.partial = systolic::make_layout(0x300, 2, 3, kAcc);
    err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("partial-sum buffer layout is 2x3"), std::string::npos) << err;
    job.partial = systolic::make_layout(0x300, 3, 3, kAcc, 16);  // stride shorter than a row
    EXPECT_NE(systolic::validate_job(job, kOp, kAcc), "");
}

TEST(JobValidation, PartialBufferOverlapsRejected) {
    auto job = split_seed_job();
    job.partial.base = 0x240;  // C ends at 0x248
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps C");
    job.partial.base = 0x200 - 71;  // its last byte is C's first
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps C");
    job.partial.base = 0x200 - 72;  // touching, not overlapping
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.partial.base = 0x10;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps A");
    job.partial.base = 0x120;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps B");
}

// Quantized output: C holds one byte per element, whatever the accumulator.
systolic::matmul_job int8_out_seed_job() {
    auto job = systolic::make_job(problem_shape{3, 3, 3}, kOp, 1, 0x0, 0x100, 0x200);
    job.quant.enabled = true;
    job.quant.scale = 0.5;
    return job;
}

TEST(JobValidation, Int8OutputElementSize) {
    auto job = int8_out_seed_job();
    EXPECT_EQ(systolic::output_size(job.quant, kAcc), 1u);
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.quant.enabled = false;
    EXPECT_EQ(systolic::output_size(job.quant, kAcc), kAcc);
    auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("C elements are 1 bytes but the format needs 8"), std::string::npos) << err;
    // Accumulator-sized C with quantization on is wrong the other way.
    auto wide = seed_job();
    wide.quant.enabled = true;
    err = systolic::validate_job(wide, kOp, kAcc);
    EXPECT_NE(err.find("C elements are 8 bytes but the format needs 1"), std::string::npos) << err;
}

TEST(JobValidation, NonPositiveScaleRejected) {
    for (double scale : {0.0, -0.5, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
        auto job = int8_out_seed_job();
        job.quant.scale = scale;
        const auto err = systolic::validate_job(job, kOp, kAcc);
        EXPECT_NE(err.find("scale must be a positive finite number"), std::string::npos)
            << scale << ": " << err;
    }
    // Without quantization the scale is unused.
    auto job = seed_job();
    job.quant.scale = 0;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    auto tiny = int8_out_seed_job();
    tiny.quant.scale = 1e-30;
    EXPECT_EQ(systolic::validate_job(tiny, kOp, kAcc), "");
}

TEST(JobValidation, QuantizingPartialsNeedsAPartialBuffer) {
    auto job = int8_out_seed_job();
    job.quant.per_partial = true;
    auto err = systolic::validate_job(job, kOp, kAcc);  // no split at all
    EXPECT_NE(err.find("quantizing partials needs"), std::string::npos) << err;
    job.k_tile = 2;  // split, but preserved in the PEs
    err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("quantizing partials needs"), std::string::npos) << err;
    job.policy = k_policy::partials;
    job.k_tile = 3;  // partial sums, but only one chunk
    err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("quantizing partials needs"), std::string::npos) << err;
    job.k_tile = 2;
    job.partial = systolic::make_layout(0x300, 3, 3, kAcc);
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
}

TEST(JobValidation, KPolicyNames) {
    EXPECT_EQ(systolic::to_string(k_policy::preserve), "preserve");
    EXPECT_EQ(systolic::to_string(k_policy::partials), "partials");
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        const auto parsed = systolic::parse_k_policy(systolic::to_string(policy));
        ASSERT_TRUE(parsed.has_value());
        EXPECT_EQ(*parsed, policy);
    }
    for (const char* bad : {"", "partial", "Preserve", "keep"})
        EXPECT_FALSE(systolic::parse_k_policy(bad).has_value()) << "'" << bad << "'";
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

using board = systolic::verify::scoreboard;

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
    std::vector<std::uint8_t> before;
    std::vector<std::uint8_t> memory;

    explicit job_fixture(u64 memory_size = kMemSize) : before(memory_size, 0xee), memory(before) {
        result.status = systolic::job_status::completed;
        result.advance_edges = counts.advance_edges;
        result.macs_padded = counts.macs_padded;
        result.macs_real = counts.macs_real;
        systolic::tile_report t;
        t.where = plan_tiles(2, 2, 2, tile_order::row_major).at(0);
        t.advance_edges = counts.advance_edges_per_tile;
        result.tiles.push_back(t);
    }
    // Mirrors a write into the memory image, as the real memory would see it.
    void store(u64 addr, i64 v) { std::memcpy(memory.data() + (addr - kMemBase), &v, sizeof v); }
    const systolic::verify::scoreboard_summary& finish(board& sb) {
        return sb.finish(result, counts, memory.data(), kMemBase, before);
    }
};

// C's expected values in the memory image, as the DUT's writes leave them.
void write_all_of_c_in_memory(job_fixture& fx) {
    for (u64 r = 0; r < 2; ++r)
        for (u64 c = 0; c < 2; ++c)
            fx.store(kC.address(r, c), kExpected[r * 2 + c]);
}

void write_all_of_c(board& sb, job_fixture& fx) {
    for (u64 r = 0; r < 2; ++r)
        for (u64 c = 0; c < 2; ++c)
            observe(sb, kC.address(r, c), {kExpected[r * 2 + c]});
    write_all_of_c_in_memory(fx);
}

TEST(Scoreboard, FixtureMatchesCountingRule) {
    const job_fixture fx;
    EXPECT_EQ(fx.counts.tiles, 1u);
    EXPECT_EQ(fx.counts.advance_edges, 5u);  // K + 2(N-1) = 3 + 2
}

TEST(Scoreboard, CorrectWritesPass) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(1, 1), {5});
    observe(sb, kC.address(0, 0), {7, 2});  // one 16-byte write covering row 0
    observe(sb, kC.address(1, 0), {16});
    write_all_of_c_in_memory(fx);
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);
}

// C written by the DUT, but overwritten in memory before the job ended by something the monitor
// does not see: the element no longer holds what was written.
TEST(Scoreboard, ElementOverwrittenAfterItsWrite) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.store(kC.address(1, 0), 99);
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.overwritten, 1u);
    EXPECT_EQ(s.mismatches, 0u);
    EXPECT_TRUE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "C(1,0) holds 99 in memory, but 16 was written")) << joined(s.errors);
}

TEST(Scoreboard, WrongValue) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    write_txn t(kC.address(0, 0), {7}, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    sb.observe_write(t.gp);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write to C(0,0) failed")) << joined(sb.summary().errors);
}

TEST(Scoreboard, MemoryOutsideCChanged) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.memory[0x3f] = 0;  // last byte of the image, well past C
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "at 0x103f")) << joined(s.errors);
}

TEST(Scoreboard, WrongEdgeCount) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.result.advance_edges = 4;
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.edges_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "advance edges: expected 5")) << joined(s.errors);
}

// The MAC counters a DUT reports (MACS and MACS_REAL on the accelerator) against the counting rule.
TEST(Scoreboard, WrongMacCounts) {
    for (const bool padded : {true, false}) {
        board sb;
        job_fixture fx;
        sb.expect(kC, bytes_of(kExpected), print_i64);
        write_all_of_c(sb, fx);
        (padded ? fx.result.macs_padded : fx.result.macs_real) += 1;
        const auto& s = fx.finish(sb);
        EXPECT_FALSE(s.macs_ok);
        EXPECT_TRUE(s.edges_ok);
        EXPECT_FALSE(s.pass());
        const std::string want = padded
                                     ? "MACs with padding: expected " + std::to_string(fx.counts.macs_padded)
                                     : "real MACs: expected " + std::to_string(fx.counts.macs_real);
        EXPECT_TRUE(contains_text(s.errors, want)) << joined(s.errors);
    }
}

TEST(Scoreboard, WrongPerTileEdgeCount) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
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
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.result.status = systolic::job_status::watchdog;
    fx.result.error = "no progress";
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.completed);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "job did not complete (watchdog): no progress")) << joined(s.errors);
}

TEST(Scoreboard, ComparesWithAReferenceThatArrivesLate) {
    board sb;
    job_fixture fx;
    std::promise<std::vector<std::uint8_t>> late;
    sb.expect(kC, late.get_future().share(), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, kC.address(0, 0), {6});   // a second, wrong write of C(0,0)
    late.set_value(bytes_of(kExpected));  // the reference finishes after the writes
    const auto& s = fx.finish(sb);
    EXPECT_EQ(s.mismatches, 1u);
    EXPECT_EQ(s.duplicates, 1u);
    EXPECT_TRUE(contains_text(s.errors, "C(0,0) expected")) << joined(s.errors);
}

TEST(Scoreboard, NothingCheckedFails) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    const auto& s = fx.finish(sb);
    EXPECT_EQ(s.checked, 0u);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "nothing was checked")) << joined(s.errors);
}

TEST(Scoreboard, ExpectResetsTheSummary) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(0, 0), {6});
    EXPECT_EQ(fx.finish(sb).mismatches, 1u);  // values are compared when the job finishes
    sb.expect(kC, bytes_of(kExpected), print_i64);
    EXPECT_EQ(sb.summary().mismatches, 0u);
    EXPECT_EQ(sb.summary().checked, 0u);
    EXPECT_TRUE(sb.summary().errors.empty());
    write_all_of_c(sb, fx);
    EXPECT_TRUE(fx.finish(sb).pass()) << joined(sb.summary().errors);
}

TEST(Scoreboard, ErrorListIsBounded) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    for (int i = 0; i < 100; ++i)
        observe(sb, 0x1010, {0});
    EXPECT_EQ(sb.summary().out_of_range_writes, 100u);
    EXPECT_EQ(sb.summary().errors.size(), board::max_errors);
}

// The partial-sum buffer of a K-split job: 2x2 int64 at 0x1040 with a 24-byte stride, after C:
// P(0,*) at 0x1040/0x1048, padding 0x1050..0x1057, P(1,*) at 0x1058/0x1060, end 0x1068. The
// memory image for these cases spans 0x1000..0x107f.
constexpr u64 kMemWithPartialSize = 0x80;
const matrix_layout kPartial{0x1040, 2, 2, 8, 24};

// Writes to the partial-sum buffer are the job's own scratch traffic: counted as partial writes,
// never as writes to C, never out of range, and the bytes they change are not "outside C".
TEST(Scoreboard, PartialBufferWritesAreAllowed) {
    board sb;
    job_fixture fx(kMemWithPartialSize);
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    // Chunk 0's partials, the first row as one burst, then chunk 1 rewrites P(0,0).
    observe(sb, kPartial.address(0, 0), {1, 2});
    observe(sb, kPartial.address(1, 0), {3});
    observe(sb, kPartial.address(1, 1), {4});
    observe(sb, kPartial.address(0, 0), {-5});
    for (auto [addr, v] : {std::pair<u64, i64>{0x1040, -5}, {0x1048, 2}, {0x1058, 3}, {0x1060, 4}})
        fx.store(addr, v);
    write_all_of_c(sb, fx);
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.partial_writes, 5u);
    EXPECT_EQ(s.writes, 4u);
    EXPECT_EQ(s.checked, 4u);
    EXPECT_EQ(s.out_of_range_writes, 0u);
    EXPECT_EQ(s.duplicates, 0u);
    EXPECT_TRUE(s.untouched_ok);
    EXPECT_TRUE(s.errors.empty()) << joined(s.errors);
}

// The partial buffer's stride padding is not the buffer: a write there is out of range, and a
// changed byte there is memory outside C.
TEST(Scoreboard, PartialBufferPaddingIsOutOfRange) {
    board sb;
    job_fixture fx(kMemWithPartialSize);
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    write_all_of_c(sb, fx);
    observe(sb, 0x1050, {0});
    fx.store(0x1050, 0);
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_EQ(s.partial_writes, 0u);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1050")) << joined(s.errors);
    EXPECT_TRUE(contains_text(s.errors, "memory outside C changed at 0x1050")) << joined(s.errors);
}

// Past the partial buffer's end (0x1068) and halfway into one of its elements: out of range too.
TEST(Scoreboard, PartialBufferEdgesAreOutOfRange) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    observe(sb, 0x1068, {0});
    write_txn half(kPartial.address(1, 1), std::vector<unsigned char>{1, 2, 3, 4});
    sb.observe_write(half.gp);
    write_txn misaligned(kPartial.address(0, 0) + 4, std::vector<unsigned char>(8, 0));
    sb.observe_write(misaligned.gp);
    EXPECT_EQ(sb.summary().partial_writes, 0u);
    EXPECT_EQ(sb.summary().out_of_range_writes, 3u);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write outside C at 0x1068"))
        << joined(sb.summary().errors);
}

// A burst from the last element of a partial-buffer row on through the padding into the next row
// writes stride padding, so it must be out of range like any other padding write.
// DISABLED: the scoreboard only checks that the first and last bytes are on the buffer, so the
// 8 padding bytes in the middle of this write pass as three partial writes (see the report).
TEST(Scoreboard, PartialBufferBurstAcrossPaddingIsOutOfRange) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    observe(sb, kPartial.address(0, 1), {2, 99, 3});  // 0x1048..0x105f: P(0,1), padding, P(1,0)
    EXPECT_GE(sb.summary().out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write outside C at 0x1050"))
        << joined(sb.summary().errors);
}

// Without a partial layout, the same addresses are simply outside C.
TEST(Scoreboard, PartialWritesWithoutAPartialBufferAreOutOfRange) {
    board sb;
    job_fixture fx(kMemWithPartialSize);
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, kPartial.address(0, 0), {1});
    fx.store(kPartial.address(0, 0), 1);
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.partial_writes, 0u);
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1040")) << joined(s.errors);
}

// int8 output: one byte per element, 2x2 packed at 0x1000 (C(1,0) at 0x1002). The seeds' case at
// C(0,0): quantized once it is 4, with rounded partials 3; -128 vs 127 shows signed values.
TEST(Scoreboard, Int8OutputMismatchShowsSignedValues) {
    const matrix_layout c8{0x1000, 2, 2, 1, 2};
    const std::vector<i8> expected = {4, -128, 8, 2};
    board sb;
    job_fixture fx;
    sb.expect(c8, bytes_of(expected), print_i8);
    write_txn w00(0x1000, std::vector<unsigned char>{3});
    write_txn w01(0x1001, std::vector<unsigned char>{127});
    write_txn row1(0x1002, std::vector<unsigned char>{8, 2});
    for (auto* t : {&w00, &w01, &row1}) {
        sb.observe_write(t->gp);
        std::memcpy(fx.memory.data() + (t->gp.get_address() - kMemBase), t->bytes.data(), t->bytes.size());
    }
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.checked, 4u);
    EXPECT_EQ(s.writes, 4u);
    EXPECT_EQ(s.mismatches, 2u);
    EXPECT_EQ(s.out_of_range_writes, 0u);
    EXPECT_EQ(s.missing, 0u);
    EXPECT_TRUE(s.untouched_ok) << joined(s.errors);
    EXPECT_TRUE(contains_text(s.errors, "C(0,0) expected 4, got 3")) << joined(s.errors);
    EXPECT_TRUE(contains_text(s.errors, "C(0,1) expected -128, got 127")) << joined(s.errors);
}

TEST(Scoreboard, Int8OutputCorrectWritesPass) {
    const matrix_layout c8{0x1000, 2, 2, 1, 4};  // 2 bytes of padding after each row
    const std::vector<i8> expected = {-1, 0, 127, -128};
    board sb;
    job_fixture fx;
    sb.expect(c8, bytes_of(expected), print_i8);
    write_txn row0(0x1000, std::vector<unsigned char>{0xff, 0x00});
    write_txn row1(0x1004, std::vector<unsigned char>{0x7f, 0x80});
    for (auto* t : {&row0, &row1}) {
        sb.observe_write(t->gp);
        std::memcpy(fx.memory.data() + (t->gp.get_address() - kMemBase), t->bytes.data(), t->bytes.size());
    }
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);
    // In a new job, one byte into row 0's padding is out of range.
    sb.expect(c8, bytes_of(expected), print_i8);
    write_txn pad(0x1002, std::vector<unsigned char>{0});
    sb.observe_write(pad.gp);
    EXPECT_EQ(sb.summary().out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write outside C at 0x1002"))
        << joined(sb.summary().errors);
}

// ------------------------------------------------------------------------------------------------
// ReferenceGemm
// ------------------------------------------------------------------------------------------------

TEST(ReferenceGemm, SeedProduct) {
    const auto pr = systolic::verify::seed_example<int32_format>();
    EXPECT_EQ(pr.shape.m, 3u);
    EXPECT_EQ(pr.shape.k, 3u);
    EXPECT_EQ(pr.shape.p, 3u);
    const auto c = systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b);
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
    const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{4, 4, 4}, a, b);
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
    const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{2, 3, 1}, a, b);
    const std::vector<i64> want = {2 - 2 - 9, 0 + 4 + 3};
    EXPECT_EQ(c, want);
}

// The reference accumulates in 64 bits: 2 x INT32_MAX^2 is about 2^63 - 2^33, far beyond 32 bits.
TEST(ReferenceGemm, AccumulatesWide) {
    const std::vector<i32> a = {kMax32, kMax32};
    const std::vector<i32> b = {kMax32, kMax32};
    const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{1, 2, 1}, a, b);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0], 2 * i64{kMax32} * i64{kMax32});
}

TEST(ReferenceGemm, RandomProblemIsDeterministicAndInRange) {
    const problem_shape s{4, 5, 6};
    const auto p1 = systolic::verify::random_problem<int32_format>(s, 77, 10);
    const auto p2 = systolic::verify::random_problem<int32_format>(s, 77, 10);
    const auto p3 = systolic::verify::random_problem<int32_format>(s, 78, 10);
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

// ------------------------------------------------------------------------------------------------
// ReferenceGemm with K-splitting, overflow modes and number formats
// ------------------------------------------------------------------------------------------------

systolic::verify::reference_options split_options(u64 k_tile, k_policy policy,
                                                  overflow_mode overflow = overflow_mode::wrap,
                                                  quantization quant = {}) {
    systolic::verify::reference_options opt;
    opt.k_tile = k_tile;
    opt.policy = policy;
    opt.overflow = overflow;
    opt.quant = quant;
    return opt;
}

// Seeds: K = 3 split 2 + 1. C(0,0) = 1*1 + 2*0 + 3*2: chunk partials 1 and 6, combined 7. Integer
// sums in range do not depend on the split, so both policies give the seed's C.
TEST(ReferenceGemm, KSplitSeedProduct) {
    const std::vector<i64> want = {7, 2, 5, 16, 5, 14, 25, 8, 23};
    const auto pr = systolic::verify::seed_example<int32_format>();
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        for (u64 kt : {0ull, 1ull, 2ull, 3ull, 4ull}) {
            const auto c = systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b,
                                                                          split_options(kt, policy));
            EXPECT_EQ(c, want) << to_string(policy) << " KT=" << kt;
        }
    }
    const auto p8 = systolic::verify::seed_example<int8_format>();
    const auto c8 = systolic::verify::reference_gemm<int8_format>(p8.shape, p8.a, p8.b,
                                                                  split_options(2, k_policy::partials));
    EXPECT_EQ(c8, (std::vector<i32>{7, 2, 5, 16, 5, 14, 25, 8, 23}));
}

// Rounding each chunk's partial (scale 0.5, nearest-even) before combining. Chunk partials of the
// seed (terms 0-1, then term 2), A = [[1,2,3],[4,5,6],[7,8,9]], B = [[1,0,2],[0,1,0],[2,0,1]]:
//   C(0,*): (1,6) (2,0) (2,3)   -> 0+3=3, 1+0=1, 1+round(1.5)=1+2=3
//   C(1,*): (4,12) (5,0) (8,6)  -> 2+6=8, round(2.5)=2+0=2, 4+3=7
//   C(2,*): (7,18) (8,0) (14,9) -> round(3.5)=4+9=13, 4+0=4, 7+round(4.5)=7+4=11
TEST(ReferenceGemm, PerPartialQuantizationRoundsEachChunk) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.per_partial = true;
    const auto pr = systolic::verify::seed_example<int32_format>();
    const auto wide = systolic::verify::reference_gemm<int32_format>(
        pr.shape, pr.a, pr.b, split_options(2, k_policy::partials, {}, q));
    EXPECT_EQ(wide, (std::vector<i64>{3, 1, 3, 8, 2, 7, 13, 4, 11}));
    EXPECT_EQ(wide[0], 3);  // the seeds' case: round(0.5) + round(3.0) = 0 + 3
    // Encoded, only the zero point and the clip remain.
    const auto c = systolic::verify::encode_c<int32_format>(wide, q);
    EXPECT_EQ(c, bytes_of(std::vector<i8>{3, 1, 3, 8, 2, 7, 13, 4, 11}));
    // Quantizing once instead: round(C / 2) = 3.5->4, 1, 2.5->2, 8, 2.5->2, 7, 12.5->12, 4, 11.5->12.
    auto once = q;
    once.per_partial = false;
    const auto full = systolic::verify::reference_gemm<int32_format>(
        pr.shape, pr.a, pr.b, split_options(2, k_policy::partials, {}, once));
    EXPECT_EQ(full, (std::vector<i64>{7, 2, 5, 16, 5, 14, 25, 8, 23}));
    EXPECT_EQ(systolic::verify::encode_c<int32_format>(full, once),
              bytes_of(std::vector<i8>{4, 1, 2, 8, 2, 7, 12, 4, 12}));
}

// per_partial only means something with partial sums over more than one chunk.
TEST(ReferenceGemm, PerPartialIgnoredWithoutPartialSums) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.per_partial = true;
    const auto pr = systolic::verify::seed_example<int32_format>();
    for (auto opt : {split_options(2, k_policy::preserve, {}, q), split_options(3, k_policy::partials, {}, q),
                     split_options(0, k_policy::partials, {}, q)}) {
        const auto c = systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b, opt);
        EXPECT_EQ(c[0], 7) << to_string(opt.policy) << " KT=" << opt.k_tile;
    }
}

// Seed 000 with KT = 2 = N: C00 = A00 B00 + A01 B10 = [[1,3],[4,5]], chunk by chunk or preserved.
TEST(ReferenceGemm, BlockedExampleTopLeftWithKSplit) {
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
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{4, 4, 4}, a, b,
                                                                      split_options(2, policy));
        ASSERT_EQ(c.size(), 16u);
        EXPECT_EQ(c[0 * 4 + 0], 1) << to_string(policy);
        EXPECT_EQ(c[0 * 4 + 1], 3) << to_string(policy);
        EXPECT_EQ(c[1 * 4 + 0], 4) << to_string(policy);
        EXPECT_EQ(c[1 * 4 + 1], 5) << to_string(policy);
    }
}

// The overflow mode reaches the reference, and under saturation the order of combination matters.
// Terms p, p, p, -p (p = INT32_MAX^2): preserved with saturation, 2p, then 3p clamps to INT64_MAX,
// then INT64_MAX - p. Wrapping is modular, so the final sum is the exact 2p. Partial sums with
// KT = 2 give 2p and p - p = 0, combined 2p without touching the limit.
TEST(ReferenceGemm, OverflowModeAndCombinationOrder) {
    const std::vector<i32> a = {kMax32, kMax32, kMax32, kMax32};
    const std::vector<i32> b = {kMax32, kMax32, kMax32, -kMax32};
    const problem_shape s{1, 4, 1};
    using systolic::verify::reference_gemm;
    const auto sat = overflow_mode::saturate;
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(0, k_policy::preserve, sat))[0],
              kMax64 - kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(2, k_policy::preserve, sat))[0],
              kMax64 - kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(0, k_policy::preserve))[0],
              2 * kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(2, k_policy::partials, sat))[0],
              2 * kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(2, k_policy::partials))[0],
              2 * kMaxProduct);
    // Three p's alone: wrapped 3p - 2^64 = -4611686031312289789, saturated INT64_MAX.
    const std::vector<i32> a3 = {kMax32, kMax32, kMax32}, b3 = {kMax32, kMax32, kMax32};
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3)[0], -4611686031312289789);
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3, split_options(0, k_policy::preserve, sat))[0],
              kMax64);
    // Combining partials saturates too: 2p + p with KT = 2.
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3, split_options(2, k_policy::partials, sat))[0],
              kMax64);
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3, split_options(2, k_policy::partials))[0],
              -4611686031312289789);
}

// fp32 partial sums are chunk-wise: each chunk summed from zero in k order, then the chunks added in
// order. Written out here for one element with K = 7, KT = 3: ((p0 + p1) + p2) with p0 = terms
// 0..2, p1 = 3..5, p2 = term 6; preserved, one running sum over 0..6.
TEST(ReferenceGemm, Fp32PartialsFollowChunkOrder) {
    const problem_shape s{3, 7, 2};
    const auto pr = systolic::verify::random_problem<fp32_format>(s, 21);
    const std::size_t r = 2, col = 1;
    auto term = [&](std::size_t k) { return pr.a[r * s.k + k] * pr.b[k * s.p + col]; };
    float p0 = 0, p1 = 0, p2 = 0, run = 0;
    for (std::size_t k = 0; k < 3; ++k)
        p0 = p0 + term(k);
    for (std::size_t k = 3; k < 6; ++k)
        p1 = p1 + term(k);
    p2 = p2 + term(6);
    const float chunked = (p0 + p1) + p2;
    for (std::size_t k = 0; k < 7; ++k)
        run = run + term(k);
    const auto partials =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(3, k_policy::partials));
    const auto preserved =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(3, k_policy::preserve));
    EXPECT_EQ(bits_of(partials[r * s.p + col]), bits_of(chunked));
    EXPECT_EQ(bits_of(preserved[r * s.p + col]), bits_of(run));
    EXPECT_EQ(preserved, systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b));  // preserve = unsplit
}

// Rounding order is visible: over enough random fp32 data, partial sums and one running sum
// disagree in the last bits somewhere (same values, different association).
TEST(ReferenceGemm, Fp32PartialsCanDifferFromPreserved) {
    const problem_shape s{8, 64, 8};
    const auto pr = systolic::verify::random_problem<fp32_format>(s, 5);
    const auto partials =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(5, k_policy::partials));
    const auto preserved =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(5, k_policy::preserve));
    std::size_t differ = 0;
    for (std::size_t i = 0; i < partials.size(); ++i) {
        differ += bits_of(partials[i]) != bits_of(preserved[i]);
        EXPECT_NEAR(partials[i], preserved[i], 1e-4f) << i;
    }
    EXPECT_GT(differ, 0u);
}

// bf16 operands are rounded when the problem is made: 1 + 2^-8 -> 1, 1 + 3 x 2^-8 -> 1 + 2^-6. So
// [1 + 2^-8, 1 + 3 x 2^-8] . [1, 1] = 1 + 1 + 2^-6 = 2.015625, accumulated in fp32.
TEST(ReferenceGemm, Bf16OperandsAreRoundedOnLoad) {
    const auto pr =
        systolic::verify::make_problem<bf16_format>({1, 2, 1}, {1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8}, {1.0, 1.0});
    ASSERT_EQ(pr.a.size(), 2u);
    EXPECT_EQ(pr.a[0].bits, 0x3f80);
    EXPECT_EQ(pr.a[1].bits, 0x3f82);
    const auto c = systolic::verify::reference_gemm<bf16_format>(pr.shape, pr.a, pr.b);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0], 2.015625f);
    // The bf16 reference also keeps products in float: -1 + (1 + 2^-7)^2 = 2^-6 + 2^-14.
    const auto sq =
        systolic::verify::make_problem<bf16_format>({1, 2, 1}, {-1.0, 1.0 + 0x1p-7}, {1.0, 1.0 + 0x1p-7});
    EXPECT_EQ(systolic::verify::reference_gemm<bf16_format>(sq.shape, sq.a, sq.b)[0], 0x1p-6f + 0x1p-14f);
}

// No fused multiply-add in the reference either (see NumberFormat.Fp32MacRoundsTheProductThenAdds).
TEST(ReferenceGemm, Fp32ReferenceDoesNotFuse) {
    const double x = 1.0 + 0x1p-12;
    const auto pr = systolic::verify::make_problem<fp32_format>({1, 2, 1}, {-1.0, x}, {1.0, x});
    EXPECT_EQ(systolic::verify::reference_gemm<fp32_format>(pr.shape, pr.a, pr.b)[0], 0x1p-11f);
}

TEST(ReferenceGemm, MakeProblemConvertsValues) {
    const auto p8 = systolic::verify::make_problem<int8_format>({1, 2, 2}, {-128, 127}, {1, -1, 0, 5});
    EXPECT_EQ(p8.a, (std::vector<i8>{-128, 127}));
    EXPECT_EQ(p8.b, (std::vector<i8>{1, -1, 0, 5}));
    EXPECT_EQ(p8.shape.m, 1u);
    EXPECT_EQ(p8.shape.k, 2u);
    EXPECT_EQ(p8.shape.p, 2u);
    const auto pf = systolic::verify::make_problem<fp32_format>({1, 1, 1}, {0.1}, {-2.5});
    EXPECT_EQ(pf.a[0], 0.1f);
    EXPECT_EQ(pf.b[0], -2.5f);
}

TEST(ReferenceGemm, DefaultRanges) {
    EXPECT_EQ(systolic::verify::default_range<int8_format>(), 127.0);
    EXPECT_EQ(systolic::verify::default_range<int32_format>(), 1000.0);
    EXPECT_EQ(systolic::verify::default_range<fp32_format>(), 1.0);
    EXPECT_EQ(systolic::verify::default_range<bf16_format>(), 1.0);
}

// Random operands: integers within [-range, range], reals within [-range, range) (bf16 values may
// round up to exactly the range's end), the same for the same seed, every bf16 a rounded value.
TEST(ReferenceGemm, RandomProblemsOfEveryFormat) {
    const problem_shape s{5, 6, 7};
    const auto i8p = systolic::verify::random_problem<int8_format>(s, 3);
    bool saw_negative = false, saw_large = false;
    for (auto v : i8p.a) {
        EXPECT_TRUE(v >= -127 && v <= 127) << int{v};
        saw_negative = saw_negative || v < 0;
        saw_large = saw_large || v > 64 || v < -64;
    }
    EXPECT_TRUE(saw_negative);
    EXPECT_TRUE(saw_large);  // 30 draws from 255 values: the default range is the whole int8 range
    const auto i32p = systolic::verify::random_problem<int32_format>(s, 3);
    for (auto v : i32p.b)
        EXPECT_TRUE(v >= -1000 && v <= 1000) << v;

    const auto f1 = systolic::verify::random_problem<fp32_format>(s, 9);
    const auto f2 = systolic::verify::random_problem<fp32_format>(s, 9);
    EXPECT_EQ(f1.a, f2.a);
    EXPECT_EQ(f1.b, f2.b);
    bool fractional = false;
    for (auto v : f1.a) {
        EXPECT_TRUE(v >= -1.0f && v < 1.0f) << v;
        fractional = fractional || v != std::trunc(v);
    }
    EXPECT_TRUE(fractional);
    const auto big = systolic::verify::random_problem<fp32_format>(s, 9, 8.0);
    for (auto v : big.b)
        EXPECT_TRUE(v >= -8.0f && v < 8.0f) << v;

    const auto h = systolic::verify::random_problem<bf16_format>(s, 9);
    for (auto v : h.a) {
        const float f = v.to_float();
        EXPECT_TRUE(f >= -1.0f && f <= 1.0f) << f;
        EXPECT_EQ(bf16::from_float(f).bits, v.bits);
    }
}

// ------------------------------------------------------------------------------------------------
// EncodeC: C's bytes from the wide result
// ------------------------------------------------------------------------------------------------

// Without quantization C holds the accumulators themselves, little-endian bytes as memory has them.
TEST(EncodeC, AccumulatorsPassThroughAsBytes) {
    const std::vector<i64> wide = {7, -1, kMin64};
    const auto bytes = systolic::verify::encode_c<int32_format>(wide, quantization{});
    ASSERT_EQ(bytes.size(), 24u);
    EXPECT_EQ(bytes, bytes_of(wide));
    EXPECT_EQ(bytes[0], 7);
    for (int i = 1; i < 8; ++i)
        EXPECT_EQ(bytes[i], 0) << i;
    for (int i = 8; i < 16; ++i)
        EXPECT_EQ(bytes[i], 0xff) << i;
    EXPECT_EQ(bytes[23], 0x80);  // INT64_MIN's top byte

    const std::vector<float> f = {1.5f, -0.0f};
    const auto fb = systolic::verify::encode_c<fp32_format>(f, quantization{});
    EXPECT_EQ(fb,
              (std::vector<u8>{0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0x80}));  // 0x3fc00000, 0x80000000
    const auto i32b = systolic::verify::encode_c<int8_format>(std::vector<i32>{-2}, quantization{});
    EXPECT_EQ(i32b, (std::vector<u8>{0xfe, 0xff, 0xff, 0xff}));
}

// With quantization: one byte each, q = saturate(round(acc x scale) + zero_point).
TEST(EncodeC, Int8Requantization) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    // 7 -> 3.5 -> 4; 300 -> 150 -> 127; -300 -> -128; 5 -> 2.5 -> 2; -1 -> -0.5 -> 0; 254 -> 127.
    const std::vector<i32> wide = {7, 300, -300, 5, -1, 254};
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{4, 127, -128, 2, 0, 127}));
    q.zero_point = 3;  // after rounding, before the clip: 4+3, 150+3, -150+3 = -147, 2+3, 0+3, 127+3
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{7, 127, -128, 5, 3, 127}));
    q.zero_point = -3;  // -127 - 3 = -130 clips; -0.5 -> 0, - 3 = -3
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(std::vector<i32>{-254, -1, 254}, q),
              bytes_of(std::vector<i8>{-128, -3, 124}));
    q.zero_point = 0;
    q.rounding = rounding_mode::toward_zero;  // 3.5 -> 3, 2.5 -> 2, -0.5 -> 0
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{3, 127, -128, 2, 0, 127}));
    q.rounding = rounding_mode::nearest_away;  // 3.5 -> 4, 2.5 -> 3, -0.5 -> -1
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{4, 127, -128, 3, -1, 127}));
    // Floating-point accumulators quantize the same way; NaN becomes the zero point.
    quantization fq;
    fq.enabled = true;
    fq.zero_point = -2;
    const std::vector<float> f = {2.6f, -0.4f, std::nanf(""), 1e9f};
    EXPECT_EQ(systolic::verify::encode_c<fp32_format>(f, fq), bytes_of(std::vector<i8>{1, -2, -2, 127}));
}

// Per-partial: the wide values were already scaled and rounded chunk by chunk, so only the zero
// point and the clip remain. 5 stays 5 (requantizing would give round(2.5) = 2).
TEST(EncodeC, PerPartialOnlySaturatesAndAddsZeroPoint) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.per_partial = true;
    q.zero_point = 1;
    const std::vector<i64> wide = {3, 5, 126, 127, -129, -130, 200};
    EXPECT_EQ(systolic::verify::encode_c<int32_format>(wide, q),
              bytes_of(std::vector<i8>{4, 6, 127, 127, -128, -128, 127}));
}

}  // namespace
