// The fabric engine on its own, without SystemC: a tile's operands in a feeder, every edge of the
// chunk stepped, then the sums against a sequential k-order reference (bit for bit, also for floats),
// the counted edges against the fabric rule, every PE's terms, and the link words against the
// halo counts of the index-space view (seed 000): Ti*Tk per A face, Tj*Tk per B face, Ti*Tj per C face.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "partition.h"
#include "systolic/counting.h"
#include "systolic/cycle_engine.h"
#include "systolic/fabric_engine.h"
#include "systolic/feeder.h"
#include "systolic/number_format.h"

namespace {

using namespace systolic;

template <class Format>
struct chunk_case {
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    std::uint64_t rows, cols, kc;       // real outputs and terms
    std::vector<operand_type> a, b;     // rows x kc, kc x cols
    std::vector<accumulator_type> ref;  // rows x cols, summed in k order from zero

    chunk_case(std::uint64_t r, std::uint64_t c, std::uint64_t k, std::uint64_t seed)
        : rows(r), cols(c), kc(k) {
        std::mt19937_64 rng(seed);
        auto draw = [&] {
            if constexpr (Format::is_integer)
                return operand_type(std::int64_t(rng() % 255) - 127);
            else
                return value_from<operand_type>(double(std::int64_t(rng() % 2001) - 1000) / 997.0);
        };
        for (std::uint64_t i = 0; i < r * k; ++i)
            a.push_back(draw());
        for (std::uint64_t i = 0; i < k * c; ++i)
            b.push_back(draw());
        ref.assign(r * c, accumulator_type{});
        for (std::uint64_t i = 0; i < r; ++i)
            for (std::uint64_t j = 0; j < c; ++j)
                for (std::uint64_t t = 0; t < k; ++t) {
                    bool ovf = false;
                    ref[i * c + j] = Format::template mac<overflow_mode::wrap>(ref[i * c + j], a[i * k + t],
                                                                               b[t * c + j], ovf);
                }
    }

    // Loads the chunk into a feeder of the fabric's tile size.
    void load(feeder<Format>& f, const tile& t) const {
        f.plan(t);
        f.begin_chunk(kc);
        for (std::uint64_t i = 0; i < rows; ++i)
            for (std::uint64_t k = 0; k < kc; ++k)
                f.a_row(i)[k] = a[i * kc + k];
        for (std::uint64_t k = 0; k < kc; ++k)
            for (std::uint64_t j = 0; j < cols; ++j)
                f.b_row(k)[j] = b[k * cols + j];
    }
};

struct fabric_case {
    fabric_shape shape;
    std::size_t n;
    std::uint64_t latency;
    std::uint64_t rows, cols, kc;
    unsigned threads;
};

std::string describe(const fabric_case& c) {
    return to_string(c.shape) + " of " + std::to_string(c.n) + "x" + std::to_string(c.n) +
           ", L=" + std::to_string(c.latency) + ", " + std::to_string(c.rows) + "x" + std::to_string(c.cols) +
           " real, kc=" + std::to_string(c.kc) + ", threads=" + std::to_string(c.threads);
}

struct halo_totals {
    std::uint64_t a = 0, b = 0, c = 0;
};

template <class Format>
halo_totals run_case(const fabric_case& fc, std::uint64_t seed) {
    const fabric_geometry g{fc.shape, fc.n, fc.latency};
    fabric_engine<Format> eng(g, fc.threads);
    feeder<Format> f(g.tile_rows(), g.tile_cols());
    const chunk_case<Format> cc(fc.rows, fc.cols, fc.kc, seed);
    const tile t{0, 0, 0, fc.rows, fc.cols};
    cc.load(f, t);
    eng.clear();
    const std::uint64_t edges = g.advance_edges(fc.rows, fc.cols, fc.kc);
    // In uneven slices, as the controller issues them (one quantum at a time).
    for (std::uint64_t e = 0; e < edges;) {
        const std::uint64_t count = std::min<std::uint64_t>(edges - e, 1 + (e * 7 + 3) % 11);
        eng.advance(f, t, e, count, nullptr);
        e += count;
    }
    const std::string what = std::string(Format::name) + " " + describe(fc);
    EXPECT_EQ(eng.edges(), edges) << what;
    EXPECT_TRUE(eng.complete(fc.kc)) << what;
    if (fc.kc > 0 && edges > 0) {  // one edge fewer leaves the last PE of the last array short
        fabric_engine<Format> short_eng(g, fc.threads);
        short_eng.clear();
        short_eng.advance(f, t, 0, edges - 1, nullptr);
        EXPECT_FALSE(short_eng.complete(fc.kc)) << what;
    }
    const auto* acc = eng.accumulators();
    std::uint64_t wrong = 0;
    for (std::uint64_t i = 0; i < fc.rows; ++i)
        for (std::uint64_t j = 0; j < fc.cols; ++j)
            if (std::memcmp(&acc[i * g.tile_cols() + j], &cc.ref[i * fc.cols + j], sizeof *acc) != 0) ++wrong;
    EXPECT_EQ(wrong, 0u) << what;
    EXPECT_EQ(eng.macs_in(fc.rows, fc.cols), fc.rows * fc.cols * fc.kc) << what;

    // Halo words: every cut between active arrays carries the real words of one block face.
    const std::uint64_t ra = g.active_rows(fc.rows), ca = g.active_cols(fc.cols), nb = g.blocks(fc.kc);
    std::uint64_t a = 0, b = 0, c = 0;
    for (const auto& l : eng.links())
        (l.kind == link_kind::a ? a : l.kind == link_kind::b ? b : c) += l.words;
    EXPECT_EQ(a, fc.rows * fc.kc * (ca - 1)) << what;
    EXPECT_EQ(b, fc.cols * fc.kc * (ra - 1)) << what;
    // Each block but the first starts from the last one's sums, on the next depth: one C face per
    // block boundary (one depth keeps its sums, and has no C links).
    EXPECT_EQ(c, fc.shape.depth > 1 ? fc.rows * fc.cols * (nb - 1) : 0) << what;
    return {a, b, c};
}

TEST(FabricEngine, SeedCaseIsOneWavefrontOf43Edges) {
    // 15^3 on a 3x3x3 fabric of 5x5 arrays: the wavefront of the whole cube, 15 + 15 + 15 - 2 steps.
    const fabric_geometry g{{3, 3, 3}, 5, 1};
    EXPECT_EQ(g.advance_edges(15, 15, 15), 43u);
    run_case<int32_format>({{3, 3, 3}, 5, 1, 15, 15, 15, 1}, 1);
}

// The halo words of systolic-partition --block N for the same M, K, P: +j (A), +i (B), +k (C).
halo_totals partition_halos(std::uint64_t m, std::uint64_t k, std::uint64_t p, std::uint64_t n) {
    partition_spec spec;
    spec.extent = {m, p, k};
    spec.block = {n, n, n};
    spec.deps = matmul_dependences();
    const auto counts = count_enumerated(spec, 0);
    halo_totals h;
    for (const auto& d : counts.deps) {
        h.a += d.face_words[2];  // +j
        h.b += d.face_words[0];  // +i
        h.c += d.face_words[4];  // +k
    }
    return h;
}

TEST(FabricEngine, SeedCaseLinksCarryThePartitionsHalos) {
    const halo_totals got = run_case<int8_format>({{3, 3, 3}, 5, 1, 15, 15, 15, 1}, 2);
    const halo_totals want = partition_halos(15, 15, 15, 5);
    EXPECT_EQ(want.a, 450u);
    EXPECT_EQ(got.a, want.a);
    EXPECT_EQ(got.b, want.b);
    EXPECT_EQ(got.c, want.c);
}

TEST(FabricEngine, OnePassLinksCarryThePartitionsHalos) {
    // Random jobs that one pass covers (M <= R*N, P <= C*N, K <= D*N), any latency and thread count.
    std::mt19937_64 rng(11);
    for (int i = 0; i < 40; ++i) {
        fabric_case fc;
        fc.shape = {1 + rng() % 3, 1 + rng() % 3, 1 + rng() % 3};
        fc.n = 1 + rng() % 4;
        fc.latency = 1 + rng() % 3;
        fc.rows = 1 + rng() % (fc.shape.rows * fc.n);
        fc.cols = 1 + rng() % (fc.shape.cols * fc.n);
        fc.kc = 1 + rng() % (fc.shape.depth * fc.n);
        fc.threads = 1 + unsigned(rng() % 2);
        const halo_totals got = run_case<int32_format>(fc, rng());
        const halo_totals want = partition_halos(fc.rows, fc.kc, fc.cols, fc.n);
        EXPECT_EQ(got.a, want.a) << describe(fc);
        EXPECT_EQ(got.b, want.b) << describe(fc);
        EXPECT_EQ(got.c, want.c) << describe(fc);
    }
}

TEST(FabricEngine, OneArrayIsTodaysRule) {
    const fabric_geometry g{{1, 1, 1}, 8, 3};
    EXPECT_EQ(g.advance_edges(8, 8, 100), advance_edges_per_tile(8, 100));
    EXPECT_EQ(g.advance_edges(3, 5, 7), advance_edges_per_tile(8, 7));
}

TEST(FabricEngine, RandomShapesMatchTheSequentialSum) {
    std::mt19937_64 rng(7);
    for (int i = 0; i < 120; ++i) {
        fabric_case fc;
        fc.shape = {1 + rng() % 3, 1 + rng() % 3, 1 + rng() % 3};
        fc.n = 1 + rng() % 5;
        fc.latency = 1 + rng() % 3;
        fc.rows = 1 + rng() % (fc.shape.rows * fc.n);
        fc.cols = 1 + rng() % (fc.shape.cols * fc.n);
        fc.kc = 1 + rng() % 40;
        fc.threads = 1 + unsigned(rng() % 2);
        const std::uint64_t seed = rng();
        with_format(dtype(std::size_t(i) % formats::size),
                    [&](auto format) { run_case<decltype(format)>(fc, seed); });
    }
}

}  // namespace

namespace {

TEST(FabricCounts, OneArrayCountsAsCountJob) {
    for (std::uint64_t n : {1u, 3u, 8u})
        for (std::uint64_t kt : {0u, 5u})
            for (problem_shape s :
                 {problem_shape{7, 11, 5}, problem_shape{16, 3, 24}, problem_shape{1, 1, 1}}) {
                const auto f = count_fabric_job(s, fabric_geometry{{1, 1, 1}, n, 1}, kt);
                const auto c = count_job(s, n, kt);
                EXPECT_EQ(f.counts.tiles, c.tiles);
                EXPECT_EQ(f.counts.advance_edges, c.advance_edges);
                EXPECT_EQ(f.counts.advance_edges_per_tile, c.advance_edges_per_tile);
                EXPECT_EQ(f.counts.macs_padded, c.macs_padded);
                EXPECT_EQ(f.counts.outputs_masked, c.outputs_masked);
            }
}

TEST(FabricCounts, EdgeTilesUseOnlyTheirActiveArrays) {
    // 12 x 9 outputs on a 2x2 fabric of 4x4 (tiles of 8 x 8): tiles (8,8) (8,1) (4,8) (4,1); the
    // short ones have one active array along their short side.
    const fabric_geometry g{{2, 2, 1}, 4, 1};
    const auto f = count_fabric_job({12, 10, 9}, g);
    EXPECT_EQ(f.counts.tiles, 4u);
    // kc + (Ra*N - 1) + (Ca*N - 1): 10+7+7, 10+7+3, 10+3+7, 10+3+3
    EXPECT_EQ(f.counts.advance_edges, 24u + 20u + 20u + 16u);
    EXPECT_EQ(f.counts.macs_padded, (64u + 32u + 32u + 16u) * 10u);
    EXPECT_EQ(f.passes, 4u * 3u);  // a pass covers D*N = 4 terms: K = 10 takes three
}

}  // namespace
