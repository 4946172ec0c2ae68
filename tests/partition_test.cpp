// The index-space partition (tools/partition): hand-worked counts, the closed forms against
// enumeration on random shapes, blocks and dependences, and the block schedule against the
// controller's own tiling plan. Plain C++: no SystemC simulation.
#include <gtest/gtest.h>

#include <limits>
#include <random>

#include "partition.h"
#include "partition_report.h"
#include "systolic/counting.h"

namespace {

using namespace systolic;

constexpr std::uint64_t all_blocks = std::numeric_limits<std::uint64_t>::max();

partition_spec matmul(std::uint64_t m, std::uint64_t k, std::uint64_t p, index3 block) {
    partition_spec s;
    s.extent = {m, p, k};
    s.block = block;
    s.deps = matmul_dependences();
    return s;
}

std::size_t face(const char* name) {
    for (std::size_t f = 0; f < face_names.size(); ++f)
        if (std::string(face_names[f]) == name) return f;
    throw std::invalid_argument(name);
}

// Seed 000's picture: 15^3 in T = 5 blocks. Each dependence crosses two cuts of a 15 x 15 face.
TEST(Partition, Matmul15CubedIsThreeHalosAndNoCollective) {
    const auto s = matmul(15, 15, 15, {5, 5, 5});
    const auto c = count_enumerated(s, all_blocks);
    ASSERT_EQ(c.deps.size(), 3u);
    for (std::size_t d = 0; d < 3; ++d) {
        SCOPED_TRACE(s.deps[d].name);
        EXPECT_EQ(c.deps[d].edges, 14u * 15 * 15);
        EXPECT_EQ(c.deps[d].halo, 2u * 15 * 15);
        EXPECT_EQ(c.deps[d].internal, 14u * 15 * 15 - 2 * 15 * 15);
        EXPECT_EQ(c.deps[d].long_range, 0u);
        EXPECT_EQ(c.deps[d].collective, 0u);
        EXPECT_EQ(c.deps[d].corner_halo, 0u);
        EXPECT_EQ(c.deps[d].boundary_inputs, 15u * 15);
    }
    // a moves along +j, b along +i, c along +k, each one layer deep.
    EXPECT_EQ(c.deps[0].face_words[face("+j")], 450u);
    EXPECT_EQ(c.deps[1].face_words[face("+i")], 450u);
    EXPECT_EQ(c.deps[2].face_words[face("+k")], 450u);
    EXPECT_EQ(c.deps[0].halo_depth, (index3{0, 1, 0}));
    EXPECT_EQ(c.deps[1].halo_depth, (index3{1, 0, 0}));
    EXPECT_EQ(c.deps[2].halo_depth, (index3{0, 0, 1}));
    ASSERT_EQ(c.blocks.size(), 27u);
    // The interior block (1,1,1) (index 13) receives a T^2 face of each: 3T^2 / T^3 = 3/T.
    EXPECT_EQ(c.blocks[13].index, (index3{1, 1, 1}));
    EXPECT_EQ(c.blocks[13].volume, 125u);
    EXPECT_EQ(c.blocks[13].halo_words(), 75u);
    EXPECT_EQ(c.blocks[0].halo_words(), 0u);  // the corner block reads only inputs
    EXPECT_EQ(wavefront_steps(s.block), 13u);
    EXPECT_EQ(wavefront_steps(s.extent), 43u);
}

// One row of 10 points in blocks of 3 ([0,3) [3,6) [6,9) [9,10)), reading 4 back along j:
// j = 4, 5, 7, 8 read the previous block, 3 and 2 layers deep; j = 6 and 9 skip a block; j < 4
// read from outside.
TEST(Partition, DeepOffsetIsHaloOrLongRangeByHand) {
    partition_spec s;
    s.extent = {1, 10, 1};
    s.block = {1, 3, 1};
    s.deps = {parse_dependence("far:0,-4,0")};
    for (const auto& c : {count_enumerated(s, all_blocks), count_closed_form(s, all_blocks)}) {
        EXPECT_EQ(c.deps[0].edges, 6u);
        EXPECT_EQ(c.deps[0].halo, 4u);
        EXPECT_EQ(c.deps[0].long_range, 2u);
        EXPECT_EQ(c.deps[0].internal, 0u);
        EXPECT_EQ(c.deps[0].boundary_inputs, 4u);
        EXPECT_EQ(c.deps[0].halo_depth, (index3{0, 3, 0}));
        EXPECT_EQ(c.deps[0].face_words[face("+j")], 4u);
        ASSERT_EQ(c.blocks.size(), 4u);
        EXPECT_EQ(c.blocks[3].volume, 1u);  // the short last block
        EXPECT_EQ(c.blocks[3].deps[0].long_range, 1u);
    }
}

// A positive diagonal offset: the source sits one block on along i and j at the cuts, a corner halo.
TEST(Partition, DiagonalOffsetGivesCornerHalos) {
    partition_spec s;
    s.extent = {4, 4, 1};
    s.block = {2, 2, 1};
    s.deps = {parse_dependence("diag:1,1,0")};
    const auto c = count_closed_form(s, all_blocks);
    // Consumers (i, j) < 3: 9 edges; (1,1) reads (2,2) across the corner; (1,0),(1,2) cross only i;
    // (0,1),(2,1) cross only j.
    EXPECT_EQ(c.deps[0].edges, 9u);
    EXPECT_EQ(c.deps[0].halo, 5u);
    EXPECT_EQ(c.deps[0].corner_halo, 1u);
    EXPECT_EQ(c.deps[0].face_words[face("-i")], 2u);
    EXPECT_EQ(c.deps[0].face_words[face("-j")], 2u);
    EXPECT_EQ(c, count_enumerated(s, all_blocks));
}

// reduce-k on 15^3, T = 5: each point reads 14 others on its k line, 4 in its own block.
TEST(Partition, ReduceKIsACollective) {
    auto s = matmul(15, 15, 15, {5, 5, 5});
    s.deps.push_back(parse_dependence("sum:reduce-k"));
    for (const auto& c : {count_enumerated(s, all_blocks), count_closed_form(s, all_blocks)}) {
        EXPECT_EQ(c.deps[3].edges, 3375u * 14);
        EXPECT_EQ(c.deps[3].internal, 3375u * 4);
        EXPECT_EQ(c.deps[3].collective, 3375u * 10);
        EXPECT_EQ(c.deps[3].halo, 0u);
        EXPECT_EQ(c.blocks[0].deps[3].collective, 125u * 10);
    }
}

dependence random_dependence(std::mt19937_64& rng, int index) {
    const std::string name = "d" + std::to_string(index);
    if (rng() % 6 == 0) return parse_dependence(name + ":reduce-" + std::string(1, "ijk"[rng() % 3]));
    dependence d;
    d.name = name;
    while (d.offset == offset3{0, 0, 0}) {
        for (auto& v : d.offset) {
            // Mostly short, sometimes longer than a block or than the whole axis.
            const std::int64_t reach = rng() % 4 == 0 ? 15 : 3;
            v = rng() % 2 == 0 ? 0 : std::int64_t(rng() % (2 * reach + 1)) - reach;
        }
    }
    return d;
}

// Counted, not asserted: the closed forms against enumeration, whole space and every block.
TEST(Partition, ClosedFormsAgreeWithEnumerationOnRandomSpaces) {
    std::mt19937_64 rng(9);
    int cases = 0;
    std::uint64_t long_range = 0, corner = 0, collective = 0, deep = 0;
    for (int n = 0; n < 300; ++n) {
        partition_spec s;
        for (int a = 0; a < 3; ++a) {
            s.extent[a] = 1 + rng() % 13;
            s.block[a] = 1 + rng() % (s.extent[a] + 2);  // sometimes larger than the extent
        }
        s.deps = matmul_dependences();
        const int extra = int(rng() % 4);
        for (int d = 0; d < extra; ++d)
            s.deps.push_back(random_dependence(rng, d));
        const auto enumerated = count_enumerated(s, all_blocks);
        const auto closed = count_closed_form(s, all_blocks);
        SCOPED_TRACE("case " + std::to_string(n) + ": M=" + std::to_string(s.extent[0]) +
                     " P=" + std::to_string(s.extent[1]) + " K=" + std::to_string(s.extent[2]) +
                     " T=" + std::to_string(s.block[0]) + "," + std::to_string(s.block[1]) + "," +
                     std::to_string(s.block[2]));
        ASSERT_EQ(enumerated.deps.size(), s.deps.size());
        for (std::size_t d = 0; d < s.deps.size(); ++d) {
            EXPECT_EQ(enumerated.deps[d], closed.deps[d]) << s.deps[d].name;
            long_range += enumerated.deps[d].long_range;
            corner += enumerated.deps[d].corner_halo;
            collective += enumerated.deps[d].collective;
            for (auto depth : enumerated.deps[d].halo_depth)
                deep += depth > 1;
        }
        EXPECT_EQ(enumerated.blocks, closed.blocks);
        EXPECT_EQ(enumerated.blocks.size(), block_grid(s)[0] * block_grid(s)[1] * block_grid(s)[2]);
        ++cases;
    }
    EXPECT_GE(cases, 200);
    // The random cases reach every class and deeper halos, so the agreement means something.
    EXPECT_GT(long_range, 0u);
    EXPECT_GT(corner, 0u);
    EXPECT_GT(collective, 0u);
    EXPECT_GT(deep, 0u);
}

// Larger spaces, still small enough to enumerate, with blocks that do not divide.
TEST(Partition, ClosedFormsAgreeOnLargerSpaces) {
    std::mt19937_64 rng(21);
    for (int n = 0; n < 6; ++n) {
        partition_spec s;
        for (int a = 0; a < 3; ++a) {
            s.extent[a] = 30 + rng() % 40;
            s.block[a] = 3 + rng() % 12;
        }
        s.deps = matmul_dependences();
        s.deps.push_back(random_dependence(rng, 0));
        EXPECT_EQ(count_enumerated(s, 64), count_closed_form(s, 64));
    }
}

// The sum over all blocks of each block's count is the whole space's count.
TEST(Partition, BlocksAddUpToTheWhole) {
    auto s = matmul(7, 5, 9, {3, 3, 2});
    s.deps.push_back(parse_dependence("far:0,-4,2"));
    const auto c = count_closed_form(s, all_blocks);
    for (std::size_t d = 0; d < s.deps.size(); ++d) {
        std::uint64_t halo = 0, edges = 0, inputs = 0, volume = 0;
        for (const auto& b : c.blocks) {
            halo += b.deps[d].halo;
            edges += b.deps[d].edges;
            inputs += b.deps[d].boundary_inputs;
            volume += b.volume;
        }
        EXPECT_EQ(halo, c.deps[d].halo);
        EXPECT_EQ(edges, c.deps[d].edges);
        EXPECT_EQ(edges + inputs, 7u * 5 * 9);
        EXPECT_EQ(volume, 7u * 5 * 9);
    }
}

// Far past enumeration: a 10^5 cube in blocks of 128. 781 cuts of a 10^5 x 10^5 face per axis.
TEST(Partition, LargeSpacesUseClosedForms) {
    const auto s = matmul(100000, 100000, 100000, {128, 128, 128});
    analysis_options opt;
    opt.max_blocks = 8;
    const auto r = analyse(s, opt);
    EXPECT_FALSE(r.enumerated);
    for (const auto& d : r.counts.deps) {
        EXPECT_EQ(d.halo, 781ull * 100000 * 100000);
        EXPECT_EQ(d.long_range + d.collective, 0u);
    }
    EXPECT_EQ(r.counts.blocks.size(), 8u);
    EXPECT_TRUE(analyse(matmul(15, 15, 15, {5, 5, 5}), {}).enumerated);
}

// The block schedule is the controller's: plan_tiles(M, P, Ti, Tj) in tiles of Ti rows by Tj
// columns (square, Ti = Tj = N, and rectangular), each tile's K chunks in k order, ceil(K / Tk) of them.
TEST(Partition, BlockOrderIsTheControllersTileOrder) {
    for (auto order :
         {tile_order::row_major, tile_order::col_major, tile_order::serpentine, tile_order::random}) {
        for (std::uint64_t seed : {1u, 7u, 12345u}) {
            for (const auto& [ti, tj] : {std::pair<std::uint64_t, std::uint64_t>{3, 3}, {2, 4}, {5, 3}}) {
                const std::uint64_t m = 13, k = 11, p = 10, kt = 4;
                const auto s = matmul(m, k, p, {ti, tj, kt});
                const auto visits = block_visit_order(s, order, seed, all_blocks);
                const auto tiles = plan_tiles(m, p, ti, tj, order, seed);
                const std::uint64_t chunks = k_chunks(k, kt);
                ASSERT_EQ(visits.size(), tiles.size() * chunks);
                for (std::size_t t = 0; t < tiles.size(); ++t)
                    for (std::uint64_t c = 0; c < chunks; ++c)
                        EXPECT_EQ(visits[t * chunks + c], (index3{tiles[t].r0 / ti, tiles[t].c0 / tj, c}))
                            << to_string(order) << " seed " << seed << " " << ti << "x" << tj;
            }
        }
    }
}

TEST(Partition, ParsesDependences) {
    const auto d = parse_dependence("x:+2,-3,0");
    EXPECT_EQ(d.name, "x");
    EXPECT_FALSE(d.collective);
    EXPECT_EQ(d.offset, (offset3{2, -3, 0}));
    const auto r = parse_dependence("sum:reduce-j");
    EXPECT_TRUE(r.collective);
    EXPECT_EQ(r.axis, 1);
    for (const char* bad : {"x", ":1,2,3", "x:1,2", "x:1,2,3,4", "x:1,a,3", "x:1,,3", "x:reduce-z",
                            "x:reduce-", "x y:1,2,3", "x:1.5,0,0"})
        EXPECT_THROW(parse_dependence(bad), std::invalid_argument) << bad;
}

TEST(Partition, RejectsWhatCannotBeCounted) {
    auto s = matmul(4, 4, 4, {2, 2, 2});
    EXPECT_NO_THROW(validate(s));
    s.block[1] = 0;
    EXPECT_THROW(validate(s), std::invalid_argument);
    s = matmul(4, 0, 4, {2, 2, 2});
    EXPECT_THROW(validate(s), std::invalid_argument);
    s = matmul(4, 4, 4, {2, 2, 2});
    s.deps.push_back(parse_dependence("a:1,0,0"));
    EXPECT_THROW(validate(s), std::invalid_argument);  // a second 'a'
    s = matmul(4, 4, 4, {2, 2, 2});
    s.deps.push_back(parse_dependence("z:0,0,0"));
    EXPECT_THROW(validate(s), std::invalid_argument);  // reads itself
    s = matmul(1u << 30, 1u << 30, 1u << 30, {2, 2, 2});
    EXPECT_THROW(validate(s), std::invalid_argument);  // 2^90 points
}

}  // namespace
