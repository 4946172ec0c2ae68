// An edge observer sees the array after every advance edge of the cycle engine: every PE's tokens
// and valid bits, accumulator and term count (through the array_core), the tile and chunk, and
// the simulated time of the edge. That time is the controller's own: kernel time plus the quantum
// keeper's local offset, since with temporal decoupling the kernel time stands still for a whole
// quantum. Edge e of a chunk happens at (time the advance step starts) + e clock periods.
// Waveform writers and tests build on it; with none set the controller does no per-edge work for it.
#pragma once

#include <cstdint>
#include <systemc>

#include "systolic/array_core.h"
#include "systolic/tile_plan.h"

namespace systolic {

template <class Format>
struct edge_event {
    const plan_step& step;           // the advance step: tile (step.where), chunk, terms, edges
    std::uint64_t edge;              // 0 .. step.edges - 1 within the chunk
    sc_core::sc_time time;           // simulated time of this edge
    const array_core<Format>& array; // the PEs after the edge
};

template <class Format>
class edge_observer {
public:
    virtual ~edge_observer() = default;
    virtual void on_edge(const edge_event<Format>& e) = 0;
};

}  // namespace systolic
