// The device under test as the verification environment sees it: start a job, an event when it
// ends, its result. The environment owns the checking (memory plan, reference, scoreboard, protocol
// checker); an adapter owns only what is particular to its device. controller_dut adapts a
// tile_controller on an array or a fabric; register_dut adapts the accelerator programmed over TLM;
// a platform's own device implements this interface itself.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <systemc>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/tiling.h"
#include "systolic/verify/fabric_outcome.h"
#include "systolic/verify/fault.h"

namespace systolic::verify {

// What the environment needs of a device under test: start a job, an event when it ends, its result.
class dut {
public:
    virtual ~dut() = default;
    // Starts the job. Called from a SystemC thread: a register DUT programs it over the bus.
    virtual void start(const matmul_job& job) = 0;
    // Notified when the job has ended (completed, failed or refused), after start().
    virtual const sc_core::sc_event& done_event() const = 0;
    virtual bool busy() const = 0;
    // The job's outcome and counters as the DUT reports them, once done. Thread-side (may read registers).
    virtual job_result result() = 0;
    // What a job of this shape must count on this DUT (count_job, or the fabric's rule). Qualified:
    // inside the class the member's own name would hide the type.
    virtual systolic::expected_counts expected_counts(const problem_shape& s, std::uint64_t k_tile,
                                                      dataflow_kind df) const = 0;
    // Per-tile advance edges where they differ from the array's rule (a fabric); empty otherwise.
    virtual std::function<std::uint64_t(const tile&)> tile_edges(std::uint64_t /*k*/,
                                                                 std::uint64_t /*k_tile*/) const {
        return {};
    }

    // Plants a known defect for the jobs started from now on (fault::none removes it). Only a DUT
    // whose controller offers the model's fault hooks can: the others answer false for any fault
    // but none, and the environment refuses such a job rather than check it unplanted.
    virtual bool inject(fault f) { return f == fault::none; }
    // How long the environment waits for done_event before it calls the job hung; zero: no limit of
    // the DUT's own (the environment's job_options may still set one).
    virtual sc_core::sc_time time_limit(const matmul_job& /*job*/) const { return sc_core::SC_ZERO_TIME; }
    // On a fabric of arrays: its links and passes during the last job, once done; nullopt otherwise.
    virtual std::optional<fabric_outcome> fabric_result() const { return std::nullopt; }
};

}  // namespace systolic::verify
