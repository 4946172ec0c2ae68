// The DUT adapter for a tile_controller on one systolic array or on a fabric of arrays. It owns
// nothing of the bus (the platform binds the controller's initiator socket), only what the
// environment needs: start, done, result, the counting rule of the array or fabric, the fault
// hooks and the fabric's share of a job.
#pragma once

#include <vector>

#include "systolic/counting.h"
#include "systolic/fabric.h"
#include "systolic/format_instances.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_controller.h"
#include "systolic/verify/dut.h"
#include "systolic/verify/fault.h"

namespace systolic::verify {

template <class Format>
class controller_dut final : public dut {
public:
    // `access_time`: the memory's slowest access, which the time limit allows for each one.
    controller_dut(tile_controller<Format>& controller, systolic_array<Format>& array,
                   sc_core::sc_time access_time = sc_core::SC_ZERO_TIME);
    controller_dut(tile_controller<Format>& controller, fabric<Format>& fab,
                   sc_core::sc_time access_time = sc_core::SC_ZERO_TIME);

    void start(const matmul_job& job) override;
    const sc_core::sc_event& done_event() const override { return m_controller.done_event(); }
    bool busy() const override { return m_controller.busy(); }
    job_result result() override { return m_controller.result(); }
    systolic::expected_counts expected_counts(const problem_shape& s, std::uint64_t k_tile,
                                              dataflow_kind df) const override;
    std::function<std::uint64_t(const tile&)> tile_edges(std::uint64_t k,
                                                         std::uint64_t k_tile) const override;
    bool inject(fault f) override;
    // Generous: ten times what every clock and every memory access of the job would take.
    sc_core::sc_time time_limit(const matmul_job& job) const override;
    std::optional<fabric_outcome> fabric_result() const override;

    tile_controller<Format>& controller() const { return m_controller; }

private:
    tile_controller<Format>& m_controller;
    fabric<Format>* m_fabric = nullptr;  // null: one array
    array_shape m_shape;                 // the PEs the controller drives
    sc_core::sc_time m_access_time;
    fault_policy<Format> m_faults;
    // The fabric's counters run on from job to job: their values when the last job started.
    matmul_job m_job;
    std::vector<fabric_link> m_links_before;
    std::uint64_t m_passes_before = 0;
};

#define SYSTOLIC_CONTROLLER_DUT_EXTERN(F) extern template class controller_dut<F>;
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_CONTROLLER_DUT_EXTERN)
#undef SYSTOLIC_CONTROLLER_DUT_EXTERN

}  // namespace systolic::verify
