// systolic-soc's platform: a RISC-V hart running firmware, the accelerator, RAM and three small
// devices on one router, at the addresses of <systolic/soc_map.h> (soc_regions.h):
//
//   cpu (hart) -> cpu_checker (protocol) -+-> bus : router -> ram                  SOC_RAM_BASE
//   accel.dma ----------------------------+                -> high_ram             SOC_HIGH_RAM_BASE
//                                                          -> accel.regs           SOC_ACCEL_BASE
//                                                          -> uart, timer, finisher
//   accel.irq -> cpu.irq_external, timer.irq -> cpu.irq_timer
//
// The parts are the shared components (components/): the accelerator behind its checkers
// (checked_accelerator.h), so every job the firmware starts is checked (C, the memory around it,
// the counters, refusals) and every DMA transaction too, and a protocol checker on the CPU's bus,
// so every transaction of the CPU is checked. The finisher's first write, or a fault of the hart,
// stops the hart and the simulation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <systemc>
#include <vector>

#include "accelerator_pricing.h"
#include "checked_accelerator.h"
#include "elf_loader.h"
#include "finisher.h"
#include "hart.h"
#include "router.h"
#include "systolic/memory.h"
#include "systolic/observe/vcd_writer.h"
#include "systolic/verify/protocol_checker.h"
#include "timer.h"
#include "uart.h"

namespace systolic::soc {

class platform : public sc_core::sc_module {
public:
    struct config {
        components::isa arch = components::isa::rv32;
        double cpu_clock_hz = 1e9;
        double cpi = 1;
        std::size_t array_size = 16;
        engine_kind engine = engine_kind::cycle;
        // The accelerator's ENERGY pricing (accelerator_pricing.h); empty: none.
        components::pricing price;
    };

    components::router bus;
    memory ram;
    memory high_ram;
    components::checked_accelerator accel;
    components::hart cpu;
    verify::protocol_checker cpu_checker;
    components::uart uart;
    components::timer timer;
    components::finisher finisher;
    sc_core::sc_signal<bool> accel_irq;
    sc_core::sc_signal<bool> timer_irq;

    SC_HAS_PROCESS(platform);
    platform(const sc_core::sc_module_name& name, const config& cfg);

    // The RAM ranges the CPU reaches: the main RAM, and on RV64 the RAM above 4 GiB too.
    static std::vector<components::memory_range> cpu_ram(components::isa arch);
    // Puts the firmware's segments into RAM and the hart at its entry; before the simulation.
    void load(const components::elf_image& image);

    // The finisher's code, once written, and the CPU's time of that write.
    const std::optional<std::uint32_t>& exit_code() const { return finisher.code(); }
    const sc_core::sc_time& finish_time() const { return m_finish_time; }
    // Transactions the protocol checkers have seen on the CPU's bus and the DMA path, and the
    // TLM-2.0 rules broken there (one line each).
    std::uint64_t bus_transactions_checked() const;
    std::vector<std::string> protocol_violations() const;
    // Jobs the passive checker checked (refusals included), and the failed ones, one line each.
    // Call finish_checks() once the simulation has stopped: a job still running then fails.
    std::uint64_t jobs_checked() const { return accel.jobs_checked(); }
    const std::vector<std::string>& job_failures() const { return accel.failures(); }
    // The jobs the accelerator refused or ended with ERR_DMA, rightly by the checker, one line each:
    // "job 2 (refused: unknown DTYPE 7): ERR_DTYPE".
    std::vector<std::string> accelerator_errors() const { return accel.accelerator_errors(); }
    void finish_checks() { accel.finish(); }

    // The interrupt lines in the VCD beside the accelerator's signals.
    void trace_irq(observe::vcd_writer& w);

private:
    static components::hart::config hart_config(const config& cfg);
    static accelerator::config accel_config(const config& cfg);
    void dump_irq();

    std::vector<std::string> m_cpu_violations;
    sc_core::sc_time m_finish_time;
    observe::vcd_writer* m_vcd = nullptr;
    observe::vcd_writer::id m_accel_irq_var = 0, m_timer_irq_var = 0;
};

}  // namespace systolic::soc
