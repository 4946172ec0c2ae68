// The tile plan: from a job and an R x C array (R rows of C PEs), the steps the controller issues,
// in order. Output stationary, for each output tile (in the job's tile order) and each K chunk (in
// k order):
//   [clear] -> load -> advance x (chunk + R + C - 2) -> [drain]
// A chunk clears first when it starts a new sum (the first chunk, or every chunk under
// k_policy::partials) and drains when its sum leaves the array (every chunk under partials,
// otherwise only the last). Weight and input stationary (counting.h), for each tile of T x C
// outputs and each fold of L terms:
//   [clear] -> load -> preload x R -> advance x (T + R + C - 2) -> [drain]
// clearing before the first fold and draining after the last. Each step carries its operand
// ranges and output mask, so the parts that carry a step out need nothing else. Plain C++; the
// order never changes the result.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "systolic/job.h"
#include "systolic/names.h"
#include "systolic/tiling.h"

namespace systolic {

// The phases of a chunk; their names label the trace's and the waveform's phases. The plan never
// emits a stall: the controller reports one when the memory system makes the array wait.
// (preload comes last so that the phase values of output stationary's waveforms stay as they were.)
enum class step_kind { clear, load, advance, drain, stall, preload };
inline constexpr enum_name<step_kind> step_kind_names[] = {
    {step_kind::clear, "clear", "zero the accumulators"},
    {step_kind::load, "load", "read the chunk's A rows and B columns into the feeders"},
    {step_kind::advance, "advance", "step the array, one advance edge at a time"},
    {step_kind::drain, "drain", "write the sums to C or to the partial-sum buffer"},
    {step_kind::stall, "stall", "wait for operands or for room in the C buffer"},
    {step_kind::preload, "preload", "ws, is: shift the fold's stationary block into the PEs, a row per edge"},
};
static_assert(names_in_order(step_kind_names));
constexpr const char* to_string(step_kind kind) {
    return name_of(step_kind_names, kind);
}

// Where a drain sends the sums.
enum class drain_target {
    c,        // the final values: C (accumulators, or int8 codes)
    partial,  // the wide partial-sum buffer (k_policy::partials, every chunk but the last)
};

struct plan_step {
    step_kind kind = step_kind::clear;
    const tile* where = nullptr;  // the output tile: origin and real rows x cols (the output mask)
    std::uint64_t chunk = 0;      // K chunk index within the tile
    std::uint64_t k0 = 0;         // load: the terms k0 .. k0 + kc - 1 of the tile's A rows and B columns
    std::uint64_t kc = 0;
    // advance: the terms every PE holds after it (kc, or k0 + kc when preserved; ws, is: T per fold)
    std::uint64_t terms = 0;
    // advance: kc + R + C - 2 (or what the plan's edge rule says; ws, is: T + R + C - 2); preload: R
    std::uint64_t edges = 0;
    bool fresh = false;       // load/advance: this chunk starts a new sum (a clear came before it)
    bool last_chunk = false;  // the tile's last chunk
    drain_target target = drain_target::c;  // drain
    bool combine = false;                   // drain: add the partial sums of the earlier chunks first
};

class tile_plan {
public:
    // The advance edges of a chunk of kc terms on a tile (whose real extent may matter: a fabric
    // steps only the arrays that hold real outputs).
    using edge_rule = std::function<std::uint64_t(const tile& t, std::uint64_t kc)>;

    // Tiles of rows x cols, each chunk advancing kc + rows + cols - 2 edges (counting.h).
    tile_plan(const matmul_job& job, std::size_t rows, std::size_t cols);
    // The same tiles with another rule for a chunk's advance edges (an array that is not one
    // R x C grid, e.g. a fabric of arrays, still visits R x C tiles).
    tile_plan(const matmul_job& job, std::size_t rows, std::size_t cols, edge_rule edges);
    // The square N x N array.
    tile_plan(const matmul_job& job, std::size_t n);

    std::size_t rows() const { return m_rows; }
    std::size_t cols() const { return m_cols; }
    const std::vector<tile>& tiles() const { return m_tiles; }
    std::uint64_t chunks() const { return m_chunks; }
    dataflow_kind dataflow() const { return m_dataflow; }
    // Steps in all (every tile has the same steps).
    std::size_t size() const { return m_tiles.size() * m_tile_steps.size(); }
    // Step i of the whole job, tile-major.
    plan_step operator[](std::size_t i) const;

    class iterator {
    public:
        iterator(const tile_plan& p, std::size_t i) : m_plan(&p), m_i(i) {}
        plan_step operator*() const { return (*m_plan)[m_i]; }
        iterator& operator++() {
            ++m_i;
            return *this;
        }
        bool operator!=(const iterator& o) const { return m_i != o.m_i; }

    private:
        const tile_plan* m_plan;
        std::size_t m_i;
    };
    iterator begin() const { return {*this, 0}; }
    iterator end() const { return {*this, size()}; }

private:
    void plan_output_stationary(const matmul_job& job);
    void plan_stationary(const matmul_job& job);

    std::size_t m_rows;
    std::size_t m_cols;
    dataflow_kind m_dataflow;
    std::uint64_t m_chunks = 0;
    std::vector<tile> m_tiles;
    std::vector<plan_step> m_tile_steps;  // one tile's steps, without the tile (and its edges)
    edge_rule m_edges;
};

}  // namespace systolic
