// An edge observer sees the array after every edge the cycle engine steps: every PE's tokens and
// valid bits, accumulator and term count (through the array_core; under ws and is, the stationary
// register, streamed token and partial sum through the stationary_core), the tile and chunk, and
// the simulated time of the edge. That time is the controller's own: kernel time plus the quantum
// keeper's local offset, since with temporal decoupling the kernel time stands still for a whole
// quantum. Edge e of a chunk happens at (time the advance step starts) + e clock periods.
// Waveform writers and tests build on it; with none set the controller does no per-edge work for it.
// An observer also hears, at step granularity, where each step of the plan (clear, load, advance,
// drain) begins and ends, and every DMA transfer (dma_port.h), each with the controller's own time;
// and where each job begins and ends, so that one observer can follow a controller through many jobs
// (an accelerator's, each with its own layout).
#pragma once

#include <cstdint>
#include <systemc>

#include "systolic/array_core.h"
#include "systolic/dma_port.h"
#include "systolic/job.h"
#include "systolic/stationary_core.h"
#include "systolic/tile_plan.h"

namespace systolic {

// The PEs are one of two kinds: an output-stationary array (dataflow os), or a stationary_core
// (ws and is); exactly one of the two pointers is set.
template <class Format>
struct edge_event {
    const plan_step& step;  // the advance (or, for ws and is, preload) step: tile, chunk, terms, edges
    std::uint64_t edge;     // 0 .. step.edges - 1 within the step
    sc_core::sc_time time;  // simulated time of this edge
    const array_core<Format>* array;            // the PEs after the edge (os)
    const stationary_core<Format>* stationary;  // the PEs after the edge (ws, is)
};

// A step of the plan beginning or ending (with either engine).
template <class Format>
struct step_event {
    const plan_step& step;
    sc_core::sc_time time;                      // when the step begins, or ends
    const array_core<Format>* array;            // the PEs (cycle engine, os), or null
    const stationary_core<Format>* stationary;  // the PEs (cycle engine, ws and is), or null
};

template <class Format>
class edge_observer : public dma_listener {
public:
    virtual ~edge_observer() = default;
    virtual void on_edge(const edge_event<Format>& e) = 0;
    // False: the controller need not call on_edge (an observer of steps only costs nothing per edge).
    virtual bool wants_edges() const { return true; }
    virtual void on_step_begin(const step_event<Format>&) {}
    // Not called for a step that failed (watchdog, bus error): the job ends there.
    virtual void on_step_end(const step_event<Format>&) {}
    // Before the job's first step, at its start time; and after its end (completed, failed or
    // aborted), with the controller's record of it (result.end: when it ended).
    virtual void on_job_begin(const matmul_job&, const sc_core::sc_time&) {}
    virtual void on_job_end(const job_result&) {}
    void on_transfer(const dma_transfer&) override {}
};

}  // namespace systolic
