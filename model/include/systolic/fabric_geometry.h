// The shape of a fabric of arrays and its counting rules, in one place (docs/fabric.md). Plain C++:
// the fabric engine schedules with these rules, the scoreboard checks the counted edges against them.
//
// A fabric is R x C x D arrays of N x N PEs. One output tile of the fabric is (R*N) x (C*N); its
// K range is cut into blocks of N terms, block b going to the arrays at depth b mod D (the depth
// is a ring, so partial sums of a range longer than D*N stay in the accumulators). Array (r, c, d)
// hands A east to (r, c+1, d), B south to (r+1, c, d) and, once its block is summed, its N x N
// accumulators to the arrays of the next block, each over a link of L edges.
//
// Arrays that hold no real output of a tile (their rows or columns lie wholly outside C) and
// depths that get no block are idle for that tile: nothing is fed to them and they are not stepped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "systolic/counting.h"

namespace systolic {

struct fabric_shape {
    std::size_t rows = 1, cols = 1, depth = 1;  // R x C x D arrays
    std::size_t arrays() const { return rows * cols * depth; }
    bool single() const { return arrays() == 1; }
    bool operator==(const fabric_shape& o) const {
        return rows == o.rows && cols == o.cols && depth == o.depth;
    }
};

// "RxC" or "RxCxD", each at least 1 (D defaults to 1); nullopt for anything else.
std::optional<fabric_shape> parse_fabric_shape(std::string_view text);
std::string to_string(const fabric_shape& s);  // always "RxCxD"

struct fabric_geometry {
    fabric_shape shape;
    std::size_t n = 1;               // each array is N x N
    std::uint64_t link_latency = 1;  // L: edges from leaving one array to entering the next
    std::size_t tile_rows() const { return shape.rows * n; }  // the fabric's output tile
    std::size_t tile_cols() const { return shape.cols * n; }

    // The extra edges a link adds over a wire between neighbouring PEs of one array.
    std::uint64_t link_extra() const { return link_latency - 1; }
    // Edges between the starts of consecutive K blocks: N terms, plus the C link's extra latency
    // when the next block is on other arrays (D > 1).
    std::uint64_t block_stride() const { return n + (shape.depth > 1 ? link_extra() : 0); }

    // The arrays along rows / columns that hold real outputs of a tile with `real` rows / columns.
    std::size_t active_rows(std::uint64_t real) const { return std::size_t(ceil_div(real, n)); }
    std::size_t active_cols(std::uint64_t real) const { return std::size_t(ceil_div(real, n)); }
    // K blocks in a chunk of kc terms, and the passes they take (rounds of the depth ring).
    std::uint64_t blocks(std::uint64_t kc) const { return kc == 0 ? 0 : ceil_div(kc, n); }
    std::uint64_t passes(std::uint64_t kc) const { return ceil_div(blocks(kc), shape.depth); }

    // The advance edges of one chunk of kc terms on a tile with `rows` x `cols` real outputs. The last
    // term of block b reaches PE(i, j) of array (r, c) at edge
    //   b * stride + (r + c)(L - 1) + (r*N + i) + (c*N + j) + (terms of block b) - 1,
    // so the last PE of the last active array finishes after
    //   kc + (Ra*N - 1) + (Ca*N - 1) + (Ra + Ca - 2)(L - 1) + (blocks - 1)(stride - N)
    // edges (Ra x Ca active arrays). One array (1x1x1) gives kc + 2(N - 1), today's rule.
    std::uint64_t advance_edges(std::uint64_t rows, std::uint64_t cols, std::uint64_t kc) const {
        const std::uint64_t ra = active_rows(rows), ca = active_cols(cols), nb = blocks(kc);
        if (ra == 0 || ca == 0) return 0;
        return skewed_edges(kc, ra * n, ca * n) + (ra + ca - 2) * link_extra() +
               (nb > 0 ? (nb - 1) * (block_stride() - n) : 0);
    }

    // The advance edges of a whole tile with `rows` x `cols` real outputs: every K chunk's.
    std::uint64_t tile_edges(std::uint64_t rows, std::uint64_t cols, std::uint64_t k,
                             std::uint64_t k_tile) const {
        std::uint64_t e = 0;
        for (std::uint64_t c = 0; c < k_chunks(k, k_tile); ++c)
            e += advance_edges(rows, cols, chunk_length(k, k_tile, c));
        return e;
    }
    // Passes of a tile: its K chunks' rounds of the depth ring.
    std::uint64_t tile_passes(std::uint64_t k, std::uint64_t k_tile) const {
        std::uint64_t p = 0;
        for (std::uint64_t c = 0; c < k_chunks(k, k_tile); ++c)
            p += passes(chunk_length(k, k_tile, c));
        return p;
    }
};

// What a job on the fabric counts (count_job for one array is the 1x1x1 case): tiles of
// (R*N) x (C*N), the advance edges of all of them (tiles at C's bottom and right edges may have
// fewer active arrays, so fewer edges), every active array's PEs consuming their terms.
struct fabric_counts {
    expected_counts counts;    // advance_edges_per_tile: a tile of (R*N) x (C*N) real outputs
    std::uint64_t passes = 0;  // tiles x chunks x rounds of the depth ring
};

inline fabric_counts count_fabric_job(const problem_shape& s, const fabric_geometry& g,
                                      std::uint64_t k_tile = 0) {
    fabric_counts f;
    expected_counts& c = f.counts;
    const std::uint64_t tr = g.tile_rows(), tc = g.tile_cols();
    c.tiles = ceil_div(s.m, tr) * ceil_div(s.p, tc);
    c.k_chunks = k_chunks(s.k, k_tile);
    c.advance_edges_per_tile = g.tile_edges(tr, tc, s.k, k_tile);
    // Tiles fall into at most four classes of real extent: full, short at the bottom, short at the
    // right, and the corner.
    const std::uint64_t row_extent[2] = {tr, s.m % tr}, col_extent[2] = {tc, s.p % tc};
    const std::uint64_t row_count[2] = {s.m / tr, s.m % tr ? 1u : 0u},
                        col_count[2] = {s.p / tc, s.p % tc ? 1u : 0u};
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j) {
            const std::uint64_t tiles = row_count[i] * col_count[j];
            if (tiles == 0) continue;
            const std::uint64_t rows = row_extent[i], cols = col_extent[j];
            c.advance_edges += tiles * g.tile_edges(rows, cols, s.k, k_tile);
            c.macs_padded += tiles * (g.active_rows(rows) * g.n) * (g.active_cols(cols) * g.n) * s.k;
        }
    c.macs_real = s.m * s.k * s.p;
    c.outputs_real = s.m * s.p;
    c.outputs_masked = c.tiles * tr * tc - c.outputs_real;
    f.passes = c.tiles * g.tile_passes(s.k, k_tile);
    return f;
}

}  // namespace systolic
