// The index-space view of C = A*B (seed 000): the cube of points (i, j, k), cut into Ti x Tj x Tk
// blocks, with every dependence edge classified as inside a block, a halo to an adjacent block, a
// long-range edge that skips a block, or a collective (a point that reads a whole axis). Plain C++:
// no SystemC, no I/O. systolic-partition is a thin command line over it.
//
// Two independent ways to the same counts: count_enumerated visits every point and every edge;
// count_closed_form multiplies per-axis closed forms (a constant offset acts on each axis alone).
// The tests hold the two to agree; the tool uses the first for small spaces, the second for large.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "systolic/tiling.h"

namespace systolic {

// Axes in the order of the offsets: 0 = i (rows of C, extent M), 1 = j (columns of C, extent P),
// 2 = k (the reduction, extent K).
using index3 = std::array<std::uint64_t, 3>;
using offset3 = std::array<std::int64_t, 3>;

struct dependence {
    std::string name;
    // Uniform: point p reads p + offset. Collective: point p reads every other point on its line
    // along `axis` (a reduction or broadcast over the whole axis).
    bool collective = false;
    offset3 offset{};
    int axis = 2;
};

// Seed 000's recurrence: a(i,j,k) = a(i,j-1,k), b(i,j,k) = b(i-1,j,k), c(i,j,k) = c(i,j,k-1) + a*b.
std::vector<dependence> matmul_dependences();

// "NAME:di,dj,dk" or "NAME:reduce-i|reduce-j|reduce-k". Throws std::invalid_argument with a
// one-line reason for a malformed spec.
dependence parse_dependence(std::string_view spec);

struct partition_spec {
    index3 extent{};  // (M, P, K): i < M, j < P, k < K
    index3 block{};   // (Ti, Tj, Tk)
    std::vector<dependence> deps;
};

// Throws std::invalid_argument (one line) when an extent or block size is zero, two dependences
// share a name, an offset is zero, or the counts would not fit in 64 bits.
void validate(const partition_spec& spec);

// The number of blocks along each axis, ceil(extent / block).
index3 block_grid(const partition_spec& spec);
// Block b along `axis` covers [lo, hi); the last block is shorter when the block does not divide.
std::array<std::uint64_t, 2> block_range(const partition_spec& spec, int axis, std::uint64_t b);

enum class edge_class { internal, halo, long_range, collective };
inline constexpr enum_name<edge_class> edge_class_names[] = {
    {edge_class::internal, "internal", "source and consumer in the same block"},
    {edge_class::halo, "halo", "the source in a neighbouring block"},
    {edge_class::long_range, "long-range", "the source two or more blocks away"},
    {edge_class::collective, "collective", "a whole line along an axis (a reduction)"},
};
static_assert(names_in_order(edge_class_names));
constexpr const char* to_string(edge_class c) {
    return name_of(edge_class_names, c);
}
// The one rule for a uniform edge: by the block offset of its source from its consumer's block.
// All zero: inside; at most 1 on every axis: halo (a neighbour); 2 or more anywhere: long-range.
edge_class classify(const offset3& block_delta);

// Faces in the direction the data moves: "+j" is the word a block hands across its +j face to the
// next block along j (where a(i,j,k) = a(i,j-1,k) sends it).
constexpr std::array<const char*, 6> face_names = {"+i", "-i", "+j", "-j", "+k", "-k"};

struct dep_counts {
    std::uint64_t edges = 0;                    // dependence edges with both ends inside the index space
    std::uint64_t internal = 0;                 // both ends in the same block
    std::uint64_t halo = 0;                     // source in a neighbouring block (one word each)
    std::uint64_t corner_halo = 0;              // the halos whose neighbour differs on more than one axis
    std::uint64_t long_range = 0;               // source two or more blocks away on some axis
    std::uint64_t collective = 0;               // crossing edges of a whole-axis dependence
    std::uint64_t boundary_inputs = 0;          // points whose source lies outside the space (an input)
    std::array<std::uint64_t, 6> face_words{};  // single-axis halo words by face (face_names)
    index3 halo_depth{};  // per axis: how many layers deep the neighbour is read (max over halos)

    std::uint64_t crossing() const { return halo + long_range + collective; }
    bool operator==(const dep_counts& o) const;
};

struct block_counts {
    index3 index{};     // (I, J, K)
    index3 lo{}, hi{};  // the block's points: lo <= (i, j, k) < hi
    std::uint64_t volume = 0;
    std::vector<dep_counts> deps;  // the edges whose consumer is in this block, per dependence
    std::uint64_t halo_words() const;
    bool operator==(const block_counts& o) const;
};

struct partition_counts {
    std::vector<dep_counts> deps;      // per dependence, over the whole space
    std::vector<block_counts> blocks;  // the first `max_blocks` blocks, I-major then J then K
    bool operator==(const partition_counts& o) const;
};

// Work of an enumeration: one visit per point and uniform dependence, extent-of-axis visits per
// point and collective dependence.
std::uint64_t enumeration_work(const partition_spec& spec);

partition_counts count_enumerated(const partition_spec& spec, std::uint64_t max_blocks);
partition_counts count_closed_form(const partition_spec& spec, std::uint64_t max_blocks);

// A crossing edge, for drawing: consumer point, source point, class, dependence index.
struct crossing_edge {
    index3 to{};
    index3 from{};
    edge_class kind = edge_class::halo;
    std::size_t dep = 0;
};
// Every edge that crosses a block boundary, by enumeration. Throws std::length_error past `limit`.
std::vector<crossing_edge> list_crossing_edges(const partition_spec& spec, std::uint64_t limit);

// The block-level schedule: the order in which systolic-tb visits the blocks, output tiles in its
// tile order (plan_tiles on the I x J block grid), each tile's K chunks in k order.
std::vector<index3> block_visit_order(const partition_spec& spec, tile_order order, std::uint64_t seed,
                                      std::uint64_t limit);

// Wavefront tau = [1,1,1]: a box of extents x, y, z takes x + y + z - 2 steps.
constexpr std::uint64_t wavefront_steps(const index3& e) {
    return e[0] + e[1] + e[2] - 2;
}

}  // namespace systolic
