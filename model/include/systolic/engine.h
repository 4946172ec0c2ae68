// An engine runs the advance phase of one chunk on the array and keeps the accumulators and the
// counters. Two implementations share this small interface:
//  - cycle_engine steps the array one advance edge at a time (array_core): its counters are what
//    the PEs did ("stepped");
//  - functional_engine computes the chunk's sums with a blocked loop nest in k order, bit for bit
//    the same, and takes its counters from the counting rules ("modelled").
// Weight and input stationary run folds instead (stationary_core.h): the cycle engine steps a
// fold's preload and stream edges on a stationary_core, the functional engine computes its sums with
// the same loop nest and counts. Plain C++: the controller drives it, and so can a unit test.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "systolic/action_counter.h"
#include "systolic/array_core.h"
#include "systolic/counting.h"
#include "systolic/feeder.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/number_format.h"
#include "systolic/stationary_core.h"
#include "systolic/tiling.h"

namespace systolic {

template <class Format>
class engine {
public:
    using accumulator_type = typename Format::accumulator_type;
    using fold_type = typename stationary_core<Format>::fold;

    virtual ~engine() = default;

    virtual engine_kind kind() const = 0;
    // The array: R rows of C PEs.
    std::size_t rows() const { return m_rows; }
    std::size_t cols() const { return m_cols; }

    virtual void set_overflow(overflow_mode mode) = 0;
    // Clear phase: accumulators, tokens and counters to zero.
    virtual void clear() = 0;
    // Accumulators (and overflow counts) only; a fault hook's tool.
    virtual void clear_accumulators() = 0;

    // Issues the edges [first, first + count) of a chunk whose streams the feeder holds; the tile
    // says which PEs hold real outputs. The cycle engine steps each edge and calls `after`; the
    // functional engine computes the whole chunk's sums on the call that issues edge 0 (count > 0) and
    // afterwards only counts.
    virtual void advance(const feeder<Format>& in, const tile& t, std::uint64_t first, std::uint64_t count,
                         edge_callback* after) = 0;

    // The R x C accumulators, row-major (row stride C).
    virtual const accumulator_type* accumulators() const = 0;

    // Counters since the last clear: advance edges, terms consumed by all PEs (the MACs with
    // padding), by the top-left rows x cols PEs (the real MACs), and overflowed accumulations there.
    virtual std::uint64_t edges() const = 0;
    virtual std::uint64_t macs() const = 0;
    virtual std::uint64_t macs_in(std::size_t rows, std::size_t cols) const = 0;
    virtual std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const = 0;

    // True when every PE has consumed exactly `terms` terms; otherwise the PEs that have not.
    virtual bool complete(std::uint64_t terms) const = 0;
    virtual std::vector<stuck_pe> stuck(std::uint64_t terms) const = 0;

    // Which dataflow the next chunks run, and so which state clear() and the counters mean; an
    // engine supports os, and ws and is where it overrides the fold calls below.
    virtual bool supports(dataflow_kind df) const { return df == dataflow_kind::os; }
    virtual void set_dataflow(dataflow_kind df) {
        if (!supports(df))
            throw std::invalid_argument(std::string("this array runs os only, not ") + to_string(df));
    }
    // Weight and input stationary: preload edges [first, first + count) of a fold (R in all), then
    // its stream edges (T + R + C - 2), each calling `after` when the engine steps edges. The
    // fold's sums are stored into, or combined with, its accumulators (fold_type::acc), which the
    // caller owns; additions of a fold to earlier folds that overflow are partial_overflows().
    virtual void preload(const fold_type&, std::uint64_t /*first*/, std::uint64_t /*count*/, edge_callback*) {
        throw std::invalid_argument("this array has no stationary dataflow");
    }
    virtual void stream(const fold_type&, std::uint64_t /*first*/, std::uint64_t /*count*/, edge_callback*) {
        throw std::invalid_argument("this array has no stationary dataflow");
    }
    virtual std::uint64_t partial_overflows() const { return 0; }
    // The stepped stationary array, for observers; null for engines that do not step one.
    virtual const stationary_core<Format>* stationary_array() const { return nullptr; }

    // Whether advance() reads the padding rows and columns of a chunk's streams (the stepped array
    // does; an engine that computes only the tile's real block does not, and may read the operands
    // where they are: feeder::view_chunk).
    virtual bool reads_padding() const { return true; }

    // The stepped array, for observers and PE modules; null for engines that do not step one.
    virtual const array_core<Format>* array() const { return nullptr; }

    // The advance edges a chunk of kc terms takes on tile t: kc + R + C - 2 for one array.
    virtual std::uint64_t advance_edges(const tile& /*t*/, std::uint64_t kc) const {
        return advance_edges_per_tile(m_rows, m_cols, kc);
    }

    // The energy account's counts (action_counter.h), chosen once per job after set_dataflow: with
    // `on`, the engine counts its PEs' actions and register toggles from zero; without, it does no
    // counting work at all (no counter exists, so no kernel tests a flag).
    void count_actions(bool on, dataflow_kind df) {
        m_counter = on ? std::make_unique<action_counter<Format>>(m_rows, m_cols, df) : nullptr;
        counter_changed();
    }
    // The PE actions and toggles counted since count_actions(true), into out; nothing when off.
    virtual void report_actions(action_counts& out) const {
        if (!m_counter) return;
        out.pe = m_counter->pe();
        out.toggles = m_counter->toggles();
    }

protected:
    engine(std::size_t rows, std::size_t cols) : m_rows(rows), m_cols(cols) {}
    // After count_actions: an engine whose kernels count hands them m_counter's tally (or none).
    virtual void counter_changed() {}
    std::size_t m_rows;
    std::size_t m_cols;
    std::unique_ptr<action_counter<Format>> m_counter;  // null unless the job counts
};

// What a tile controller drives: R x C PEs and the engines that run chunks on them (systolic_array,
// or a fabric of arrays).
template <class Format>
class engine_host {
public:
    virtual std::size_t rows() const = 0;
    virtual std::size_t cols() const = 0;
    // Throws std::invalid_argument for an engine the host does not have.
    virtual engine<Format>& engine_for(engine_kind kind) = 0;
    // A PE's name in watchdog messages: "pe_1_2", or "array_0_1_0.pe_1_2" in a fabric.
    virtual std::string pe_name(const stuck_pe& pe) const = 0;

protected:
    ~engine_host() = default;
};

SYSTOLIC_EXTERN_TEMPLATE(engine)

}  // namespace systolic
