// The counting rules, in one place. The controller schedules with them, the scoreboard checks the
// measured counters against them, and docs/architecture.md quotes them.
#pragma once

#include <cstdint>

namespace systolic {

constexpr std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / b;
}

struct problem_shape {
    std::uint64_t m = 0;  // rows of A and C
    std::uint64_t k = 0;  // reduction length: columns of A, rows of B
    std::uint64_t p = 0;  // columns of B and C
};

struct expected_counts {
    std::uint64_t tiles = 0;                   // ceil(M/N) x ceil(P/N)
    std::uint64_t k_chunks = 0;                // ceil(K/KT) reduction chunks per tile (1 without K-splitting)
    std::uint64_t advance_edges_per_tile = 0;  // K + chunks x 2(N-1)
    std::uint64_t advance_edges = 0;           // tiles x (K + chunks x 2(N-1))
    std::uint64_t macs_padded = 0;             // tiles x N^2 x K: every PE consumes K terms, padding included
    std::uint64_t macs_real = 0;               // M x K x P: the MACs of the real product
    std::uint64_t outputs_real = 0;            // M x P elements written to C
    std::uint64_t outputs_masked = 0;          // tiles x N^2 - M x P PE results that are never written
};

// A token entering row i at edge i reaches PE(i, j) j edges later, and the last of K terms
// reaches PE(N-1, N-1) at edge (K-1) + 2(N-1); hence K + 2(N-1) edges per tile, or per chunk.
constexpr std::uint64_t advance_edges_per_tile(std::uint64_t n, std::uint64_t k) {
    return k + 2 * (n - 1);
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

constexpr expected_counts count_job(const problem_shape& s, std::uint64_t n, std::uint64_t k_tile = 0) {
    expected_counts c;
    c.tiles = ceil_div(s.m, n) * ceil_div(s.p, n);
    c.k_chunks = k_chunks(s.k, k_tile);
    c.advance_edges_per_tile = s.k + c.k_chunks * 2 * (n - 1);
    c.advance_edges = c.tiles * c.advance_edges_per_tile;
    c.macs_padded = c.tiles * n * n * s.k;
    c.macs_real = s.m * s.k * s.p;
    c.outputs_real = s.m * s.p;
    c.outputs_masked = c.tiles * n * n - c.outputs_real;
    return c;
}

}  // namespace systolic
