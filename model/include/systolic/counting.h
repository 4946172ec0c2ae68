// The counting rules, in one place. The controller schedules with them, the scoreboard checks the
// measured counters against them, and docs/counting.md states them.
#pragma once

#include <cstdint>
#include <optional>

#include "systolic/feeder.h"
#include "systolic/job_names.h"

namespace systolic {

constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / b;
}

struct problem_shape {
    std::uint64_t m = 0;  // rows of A and C
    std::uint64_t k = 0;  // reduction length: columns of A, rows of B
    std::uint64_t p = 0;  // columns of B and C
};

// The array: R rows of C PEs. R is the tile's height (rows of A and C), C its width (columns of B
// and C). The square N x N array is R = C = N.
struct array_shape {
    std::uint64_t rows = 0;
    std::uint64_t cols = 0;
    constexpr std::uint64_t pes() const { return rows * cols; }
};
constexpr bool operator==(const array_shape& a, const array_shape& b) {
    return a.rows == b.rows && a.cols == b.cols;
}
constexpr bool operator!=(const array_shape& a, const array_shape& b) {
    return !(a == b);
}

// The figures for output stationary; ws and is differ as count_stationary_job says.
struct expected_counts {
    std::uint64_t tiles = 0;                   // ceil(M/R) x ceil(P/C)
    std::uint64_t k_chunks = 0;                // ceil(K/KT) reduction chunks per tile (1 without K-splitting)
    std::uint64_t advance_edges_per_tile = 0;  // K + chunks x (R + C - 2)
    std::uint64_t advance_edges = 0;           // tiles x (K + chunks x (R + C - 2))
    std::uint64_t preload_edges_per_tile = 0;  // 0: nothing is preloaded in output stationary
    std::uint64_t preload_edges = 0;
    std::uint64_t macs_padded = 0;     // tiles x R x C x K: every PE consumes K terms, padding included
    std::uint64_t macs_real = 0;       // M x K x P: the MACs of the real product
    std::uint64_t outputs_real = 0;    // M x P elements written to C
    std::uint64_t outputs_masked = 0;  // tiles x R x C - M x P PE results that are never written
    // A job that counts its actions (run_options::count_actions): the MACs of two nonzero operands,
    // the sum over k of A's nonzeros in column k times B's in row k, which the energy account's
    // mac_random must equal. Unset otherwise, or where the operands are not known.
    std::optional<std::uint64_t> macs_random;
};

// The feeder's skew rule: the last of kc terms reaches PE(R-1, C-1) at edge (kc-1) + (R-1) + (C-1);
// hence kc + R + C - 2 edges per tile, or per chunk.
constexpr std::uint64_t advance_edges_per_tile(std::uint64_t rows, std::uint64_t cols, std::uint64_t kc) {
    return skewed_edges(kc, rows, cols);
}
// The square N x N array: K + 2(N-1).
constexpr std::uint64_t advance_edges_per_tile(std::uint64_t n, std::uint64_t k) {
    return advance_edges_per_tile(n, n, k);
}

// K-splitting: the reduction of a tile runs as ceil(K/KT) chunks in k order, each KT long but the
// last, which may be shorter. k_tile == 0 (or >= K) means one chunk of K.
constexpr std::uint64_t effective_k_tile(std::uint64_t k, std::uint64_t k_tile) {
    return k_tile == 0 || k_tile > k ? k : k_tile;
}
constexpr std::uint64_t k_chunks(std::uint64_t k, std::uint64_t k_tile) {
    return k == 0 ? 1 : ceil_div(k, effective_k_tile(k, k_tile));
}
constexpr std::uint64_t chunk_length(std::uint64_t k, std::uint64_t k_tile, std::uint64_t chunk) {
    const std::uint64_t kt = effective_k_tile(k, k_tile);
    return chunk * kt + kt <= k ? kt : k - chunk * kt;
}

// Weight and input stationary (docs/dataflows.md). The stationary operand is B (ws) or A's
// transpose (is): its `extent` columns (P for ws, M for is) are cut into tiles of C, and its K rows
// into folds of L = min(KT, R) terms. Each fold of a tile preloads its L x C block in R edges, then
// streams the T = M (ws) or P (is) rows of the other operand through it in T + R + C - 2 edges.
struct stationary_geometry {
    std::uint64_t stream = 0;      // T: rows of A (ws) or columns of B (is) that stream past
    std::uint64_t extent = 0;      // stationary columns: P (ws) or M (is)
    std::uint64_t fold_terms = 0;  // L
};
constexpr stationary_geometry stationary_of(const problem_shape& s, array_shape a, std::uint64_t k_tile,
                                            dataflow_kind df) {
    const std::uint64_t kt = effective_k_tile(s.k, k_tile);
    return {df == dataflow_kind::is ? s.p : s.m, df == dataflow_kind::is ? s.m : s.p,
            kt < a.rows ? kt : a.rows};
}
// A fold's edges: R to preload the stationary block, then the stream and its skew.
constexpr std::uint64_t preload_edges_per_fold(array_shape a) {
    return a.rows;
}
constexpr std::uint64_t stream_edges_per_fold(array_shape a, std::uint64_t stream) {
    return skewed_edges(stream, a.rows, a.cols);
}

// Output stationary (the seeds' rules): the tiles of C, each reducing its K in chunks.
constexpr expected_counts count_job(const problem_shape& s, array_shape a, std::uint64_t k_tile = 0) {
    expected_counts c;
    c.tiles = ceil_div(s.m, a.rows) * ceil_div(s.p, a.cols);
    c.k_chunks = k_chunks(s.k, k_tile);
    c.advance_edges_per_tile = s.k + c.k_chunks * (a.rows + a.cols - 2);
    c.advance_edges = c.tiles * c.advance_edges_per_tile;
    c.macs_padded = c.tiles * a.rows * a.cols * s.k;
    c.macs_real = s.m * s.k * s.p;
    c.outputs_real = s.m * s.p;
    c.outputs_masked = c.tiles * a.rows * a.cols - c.outputs_real;
    return c;
}
// Weight or input stationary: a tile is T rows of the stream by C stationary columns, its chunks
// are the folds, and every PE of it consumes T terms per fold, padding included.
constexpr expected_counts count_stationary_job(const problem_shape& s, array_shape a, std::uint64_t k_tile,
                                               dataflow_kind df) {
    const stationary_geometry g = stationary_of(s, a, k_tile, df);
    expected_counts c;
    c.tiles = ceil_div(g.extent, a.cols);
    c.k_chunks = k_chunks(s.k, g.fold_terms);
    c.advance_edges_per_tile = c.k_chunks * stream_edges_per_fold(a, g.stream);
    c.advance_edges = c.tiles * c.advance_edges_per_tile;
    c.preload_edges_per_tile = c.k_chunks * preload_edges_per_fold(a);
    c.preload_edges = c.tiles * c.preload_edges_per_tile;
    c.macs_padded = c.tiles * c.k_chunks * a.rows * a.cols * g.stream;
    c.macs_real = s.m * s.k * s.p;
    c.outputs_real = s.m * s.p;
    c.outputs_masked = c.tiles * g.stream * a.cols - c.outputs_real;
    return c;
}
// Any dataflow.
constexpr expected_counts count_job(const problem_shape& s, array_shape a, std::uint64_t k_tile,
                                    dataflow_kind df) {
    return is_stationary(df) ? count_stationary_job(s, a, k_tile, df) : count_job(s, a, k_tile);
}

// The square N x N array.
constexpr expected_counts count_job(const problem_shape& s, std::uint64_t n, std::uint64_t k_tile = 0) {
    return count_job(s, array_shape{n, n}, k_tile);
}

}  // namespace systolic
