// The register-programmed accelerator, the model as a virtual platform sees it: software writes the
// job into 32-bit registers (`regs`), sets CTRL.START, and the accelerator reads A and B and writes C
// anywhere in the platform's address space through `dma`, then raises the level interrupt `irq`.
// The register map is declared once in accelerator_map.h (docs/registers.md, <systolic/accelerator_regs.h>).
//
// Inside, one systolic_array and one tile_controller per number format (docs/accelerator.md says
// why); the controller of the job's format runs it, so the time comes from its engine and DMA port,
// with annotated delays, a quantum keeper and DMI where the platform's memory grants it. Their
// initiator sockets meet in a funnel in front of `dma`, which also notes the address of a failed
// transaction for ERROR_ADDR. Bad programming is answered by a TLM error response or an ERROR code;
// a refused job touches no memory.
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/multi_passthrough_target_socket.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <cstdint>
#include <functional>
#include <memory>
#include <systemc>
#include <tlm>
#include <tuple>

#include "systolic/accelerator_job.h"
#include "systolic/action_counts.h"
#include "systolic/job.h"
#include "systolic/memory_system.h"
#include "systolic/number_format.h"
#include "systolic/register_block.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_controller.h"

namespace systolic {

class accelerator : public sc_core::sc_module {
public:
    struct config {
        std::size_t array_size = 4;  // N: an N x N array per number format
        sc_core::sc_time clock_period = sc_core::sc_time(1, sc_core::SC_NS);
        // The address, as `regs` sees it, of the first register. 0 when the interconnect strips the
        // block's platform address (as a router usually does); the platform address otherwise.
        std::uint64_t base = 0;
        sc_core::sc_time register_latency = sc_core::sc_time(1, sc_core::SC_NS);  // per register access
        engine_kind engine = engine_kind::cycle;
        std::uint64_t max_job_bytes = std::uint64_t{256} << 20;  // see ERR_SIZE
        // Scratchpads and DRAM bandwidth (docs/memory.md), the same for every job; a job whose tile
        // does not fit them is refused with ERR_SIZE, double buffering with K_POLICY_PARTIALS with
        // ERR_OPTION. The default: no scratchpads, no bandwidth limit.
        memory_config memory;
        // The ENERGY registers' pricing (docs/energy.md, "The ENERGY registers"): the energy in pJ of
        // a job's counted actions, given the job as decoded (its shape and memory configuration size
        // the scratchpads). Set, every job counts its actions (run_options::count_actions) and ENERGY
        // holds round(price(...)) at its end; empty (the default), nothing is counted and ENERGY reads
        // 0. A function, so that the model does not depend on the energy library: a platform builds
        // it from a table (components/accelerator_pricing.h). An exception from it leaves ENERGY at 0
        // with a warning in the log.
        std::function<double(const matmul_job&, const action_counts&)> price;
    };

    tlm_utils::simple_target_socket<accelerator> regs;
    tlm_utils::simple_initiator_socket<accelerator> dma;
    sc_core::sc_out<bool> irq;

    SC_HAS_PROCESS(accelerator);
    accelerator(const sc_core::sc_module_name& name, const config& cfg);
    ~accelerator() override;

    const config& cfg() const { return m_cfg; }
    // For platforms and tests that look inside: the registers (as software would read them), whether a
    // job is running, and the controller's record of the last job that ended.
    const register_block& registers() const { return m_regs; }
    bool busy() const { return m_busy; }
    const job_result& last_result() const { return m_last; }

    // Called at the end of every job that went to a controller (completed, failed, or stopped after
    // a soft reset), from inside the accelerator once its registers show the end and before its
    // interrupt line follows: a checker sees the memory and the registers as the job left them,
    // before software can. One hook; an empty one removes it.
    void on_job_end(std::function<void()> hook) { m_on_job_end = std::move(hook); }

    // The observer (edge_observer.h) of the controller that runs the jobs of `Format`: its edges,
    // steps, DMA transfers and job ends, at that controller's time (null: none). One per format, not
    // owned; an observer_fanout (<systolic/observe/observer_fanout.h>) attaches several.
    template <class Format>
    void set_observer(edge_observer<Format>* observer) {
        lane_of<Format>().ctrl->set_observer(observer);
    }
    // The array and the controller of `Format`, for observers that name and sample them.
    template <class Format>
    const systolic_array<Format>& array() const {
        return *lane_of<Format>().array;
    }
    template <class Format>
    const tile_controller<Format>& controller() const {
        return *lane_of<Format>().ctrl;
    }
    // A known defect to plant in the jobs of `Format` that follow (fault_hooks.h; testbench use, as
    // a platform's --inject; null: none). Not owned.
    template <class Format>
    void set_fault_hooks(fault_hooks<Format>* hooks) {
        lane_of<Format>().ctrl->set_fault_hooks(hooks);
    }

private:
    // One number format's array and controller. Torn down newest first: the controller, the PEs
    // (rows newest first), the array module.
    template <class Format>
    struct lane {
        using format = Format;
        std::unique_ptr<systolic_array<Format>> array;
        std::unique_ptr<tile_controller<Format>> ctrl;
        lane(const std::string& format, const config& cfg)
            : array(std::make_unique<systolic_array<Format>>(("array_" + format).c_str(), cfg.array_size)),
              ctrl(std::make_unique<tile_controller<Format>>(("ctrl_" + format).c_str(), *array,
                                                             controller_config(cfg))) {}
        ~lane() {
            ctrl.reset();
            array->destroy_pes_newest_first();
            array.reset();
        }
        static typename tile_controller<Format>::config controller_config(const config& cfg) {
            typename tile_controller<Format>::config c;
            c.clock_period = cfg.clock_period;
            return c;
        }
    };

    // One lane per format of the closed set, in its order.
    template <class List>
    struct lane_set;
    template <class... Formats>
    struct lane_set<type_list<Formats...>> {
        using type = std::tuple<std::unique_ptr<lane<Formats>>...>;
    };

    template <class F>
    void with_lane(dtype d, F&& f);
    template <std::size_t I>
    void reset_lanes_from();
    // The lane of `Format`; const, as array() and controller() give const views of it.
    template <class Format>
    lane<Format>& lane_of() const {
        return *std::get<std::unique_ptr<lane<Format>>>(m_lanes);
    }

    // regs
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
    tlm::tlm_response_status check_access(const tlm::tlm_generic_payload& trans, std::uint64_t& offset) const;

    // the funnel in front of dma
    void funnel_b_transport(int id, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int funnel_transport_dbg(int id, tlm::tlm_generic_payload& trans);
    bool funnel_get_direct_mem_ptr(int id, tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end);

    // register side effects
    void write_ctrl(std::uint32_t value);
    void start();
    void soft_reset();
    void refuse(regmap::error_code code, const std::string& message);
    void update_status();
    void update_irq() { m_irq_event.notify(sc_core::SC_ZERO_TIME); }

    // processes
    void run();
    void drive_irq();
    void finish(const job_result& r);
    std::uint64_t energy_of(const job_result& r) const;

    config m_cfg;
    std::shared_ptr<spdlog::logger> m_log;
    register_block m_regs;
    tlm_utils::multi_passthrough_target_socket<accelerator> m_funnel;
    typename lane_set<formats>::type m_lanes;

    sc_core::sc_time m_access_delay = sc_core::SC_ZERO_TIME;  // of the register write being handled
    bool m_busy = false;      // START accepted, and the job has not ended (or stopped after a reset)
    bool m_launched = false;  // the job has gone to its controller
    bool m_aborting = false;  // soft reset while busy: the job's end is not reported
    bool m_done = false;
    decoded_job m_pending;
    sc_core::sc_time m_start_time = sc_core::SC_ZERO_TIME;
    bool m_dma_failed = false;
    std::uint64_t m_dma_fail_address = 0;
    job_result m_last;
    std::function<void()> m_on_job_end;
    sc_core::sc_event m_start_event, m_irq_event;
};

}  // namespace systolic
