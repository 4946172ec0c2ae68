// Hooks through which a testbench plants known defects in the controller, to prove that its
// checks catch them. The model only offers the points; the defects themselves live in the
// verification environment (systolic/verify/fault.h). A virtual platform never sets hooks. None is
// on the per-edge path.
#pragma once

#include <cstdint>

#include "systolic/action_counts.h"

#include "systolic/feeder.h"
#include "systolic/tile_plan.h"
#include "systolic/tiling.h"

namespace systolic {

template <class Format>
class engine;

template <class Format>
class fault_hooks {
public:
    virtual ~fault_hooks() = default;
    // The feed tables of a tile, after the correct ones were filled in.
    virtual void feed(const tile&, feed_tables&) {}
    // How many edges the advance or preload step `s` issues; `planned` is the plan's count.
    virtual std::uint64_t edges(const plan_step&, std::uint64_t planned) { return planned; }
    // Before the advance of a chunk that continues an earlier chunk's sums (no clear before it).
    virtual void continue_chunk(const plan_step&, engine<Format>&) {}
    // The block of PEs a drain writes, at most the array's array_rows x array_cols; the output
    // mask (the tile's real rows x cols) comes in.
    virtual void drain_block(const plan_step&, std::size_t /*array_rows*/, std::size_t /*array_cols*/,
                             std::size_t& /*rows*/, std::size_t& /*cols*/) {}
    // The energy account's counts as the job reports them, once it has ended.
    virtual void actions(action_counts&) {}
};

}  // namespace systolic
