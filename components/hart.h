// The platform's CPU: one RISC-V hart (hart_core.h, on Unicorn) as a SystemC initiator.
//  - RAM: each `ram` range is asked for DMI through initiator_socket and, when granted for reading
//    and writing over the whole range, mapped straight into the engine (instructions and data at JIT
//    speed, no transaction, the DMI latencies not added: the CPI covers them). An invalidation
//    unmaps it at the end of the current block and asks again; without a grant the range's accesses
//    are b_transports like a device's.
//  - Devices: every access to a `devices` range is a b_transport at the CPU's local time, so that
//    the protocol checker and the devices see it in order; the device's latency is added to that
//    time. A refused access (an error response) is a firmware fault.
//  - Time: each retired instruction takes cpi / clock_hz, kept with a quantum keeper. The hart runs
//    in slices of the instructions left in the global quantum (ended early when a device access
//    takes the local time past it), and synchronises between slices.
//  - Interrupts: irq_external (the accelerator) and irq_timer are the machine external and timer
//    interrupt lines, level-sensitive. They are looked at between slices, when the CPU's time is the
//    kernel's, and taken then (hart_core::take_interrupt): an interrupt is taken at most one slice,
//    one global quantum of simulated time, after its line rose. A wfi ends the slice; the hart then
//    sleeps until an interrupt that mie enables is pending.
// The hart stops for good at a fault (fault() says which) or at halt() (the finisher); either way
// the stop handler runs once, and the platform ends the simulation there.
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "hart_core.h"
#include "hart_trace.h"

namespace systolic::components {

class hart : public sc_core::sc_module, private hart_bus {
public:
    struct range {
        std::uint64_t base = 0, size = 0;  // 4 KiB multiples
        std::string name;
        // The name of the register at an offset, for the trace ("" : the offset is shown).
        std::function<std::string(std::uint64_t offset)> register_name;
    };
    struct config {
        isa arch = isa::rv32;
        double clock_hz = 1e9;
        double cpi = 1;
        std::vector<range> ram;
        std::vector<range> devices;
    };

    tlm_utils::simple_initiator_socket<hart> initiator_socket;
    sc_core::sc_in<bool> irq_external;
    sc_core::sc_in<bool> irq_timer;

    SC_HAS_PROCESS(hart);
    hart(const sc_core::sc_module_name& name, const config& cfg);

    const config& cfg() const { return m_cfg; }
    // Where the hart starts, before the simulation: pc = entry, a0 = the hart's id (0), a1 = 0.
    void reset(std::uint64_t entry);
    // Stops after the current block and for good (a finisher's write).
    void halt();
    void on_stop(std::function<void()> handler) { m_on_stop = std::move(handler); }
    // A CPU track on this timeline (null: none); before the simulation starts.
    void set_trace(observe::trace_file* trace);
    // Closes what the trace still has open (a handler) at the simulation's end.
    void finish_trace(const sc_core::sc_time& end);

    bool stopped() const { return m_stopped; }
    const std::optional<hart_fault>& fault() const { return m_fault; }
    // The CPU's time at the fault (its local time, which may be past the kernel's).
    const sc_core::sc_time& fault_time() const { return m_fault_time; }
    std::uint64_t retired() const { return m_core.retired(); }
    std::uint64_t interrupts_taken() const { return m_interrupts; }
    std::uint64_t device_accesses() const { return m_accesses; }
    // The CPU's own time: the kernel's plus the quantum keeper's offset.
    sc_core::sc_time local_time() const { return m_keeper.get_current_time(); }
    hart_core& core() { return m_core; }

private:
    struct ram_state {
        bool direct = false;  // mapped over DMI
        bool stale = false;   // its DMI was invalidated: remap between slices
    };

    void run();
    bool bus_read(std::uint64_t address, void* data, unsigned length) override;
    bool bus_write(std::uint64_t address, const void* data, unsigned length) override;
    bool transport(tlm::tlm_command cmd, std::uint64_t address, void* data, unsigned length);
    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end);

    void map_ram(std::size_t i);
    void remap_stale();
    std::uint64_t budget() const;
    void charge();
    std::uint64_t pending() const;
    void interrupts();
    void sleep();
    void stop_for_good();
    std::string device_text(std::uint64_t address) const;

    config m_cfg;
    hart_core m_core;
    std::shared_ptr<spdlog::logger> m_log;
    tlm_utils::tlm_quantumkeeper m_keeper;
    double m_ps_per_instruction;
    double m_ps_fraction = 0;     // of the time charged so far, below one picosecond
    std::uint64_t m_charged = 0;  // instructions of the current run already in the keeper
    std::vector<ram_state> m_ram;
    tlm::tlm_generic_payload m_payload;  // reused: one access at a time, and no allocation per access
    bool m_in_run = false, m_halt = false, m_stopped = false, m_in_handler = false;
    std::optional<hart_fault> m_fault;
    sc_core::sc_time m_fault_time;
    std::uint64_t m_interrupts = 0, m_accesses = 0;
    std::function<void()> m_on_stop;
    std::unique_ptr<hart_trace> m_trace;
    sc_core::sc_event m_never;
};

}  // namespace systolic::components
