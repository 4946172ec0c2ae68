// systolic-qemu's platform: the accelerator as the PCI function of a stock QEMU (docs/linux.md), its
// BAR0 (<systolic/qemu_map.h>) behind a protocol checker, its DMA into guest RAM:
//
//   QEMU -> pci (qemu_pci::pci_device).bar0 -> bar_checker (protocol) -> bar : router
//              -> accel.regs [passive checker] (SYSTOLIC_QEMU_ACCEL_OFFSET)
//              -> test_exit : finisher       (SYSTOLIC_QEMU_EXIT_OFFSET)
//   accel.dma [passive checker: monitor, protocol checker, scoreboards] -> pci.dma -> guest RAM
//   accel.irq -> pci.irq -> the interrupt bridge (the doorbell's MSI-X vector 0)
//
// The parts are the shared components: the checked accelerator, so every job the guest starts is
// checked (C, the memory around it, the counters, refusals) and every DMA transaction too; the
// router and the finisher, as in systolic-soc; the QEMU PCI component. QEMU and the interrupt
// bridge are the caller's (systolic_qemu.cpp), so that a test can stand in for them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <systemc>
#include <vector>

#include "accelerator_pricing.h"
#include "checked_accelerator.h"
#include "finisher.h"
#include "router.h"
#include "systolic/qemu_pci/pci_device.h"
#include "systolic/verify/fault_names.h"
#include "systolic/verify/protocol_checker.h"

namespace systolic::qemu {

class platform : public sc_core::sc_module {
public:
    struct config {
        std::size_t array_size = 16;
        engine_kind engine = engine_kind::cycle;
        verify::fault inject = verify::fault::none;  // a defect planted in the accelerator (--inject)
        components::pricing price;                   // the ENERGY registers' pricing; empty: none
        qemu_pci::time_mode time = qemu_pci::time_mode::settle;
        sc_core::sc_time quantum = sc_core::sc_time(1, sc_core::SC_US);  // time_mode::free's step
        std::uint64_t guest_ram = 0;  // bytes of guest RAM from address 0: where the checker looks around C
    };

    qemu_pci::pci_device pci;
    verify::protocol_checker bar_checker;
    components::router bar;
    components::checked_accelerator accel;
    components::finisher test_exit;
    sc_core::sc_signal<bool> accel_irq;

    // Serves `link` (QEMU's end of the socketpair is its proxy device's fd).
    platform(const sc_core::sc_module_name& name, qemu_pci::unique_fd link, const config& cfg);

    // The code the guest wrote to the test-exit register, if it did.
    const std::optional<std::uint32_t>& exit_code() const { return test_exit.code(); }
    // Transactions the protocol checkers saw on BAR0 and the DMA path, and the TLM-2.0 rules broken
    // there (one line each).
    std::uint64_t bus_transactions_checked() const;
    std::vector<std::string> protocol_violations() const;
    // Jobs the passive checker checked (refusals included), and the failed ones, one line each;
    // call finish_checks() once the simulation has stopped.
    std::uint64_t jobs_checked() const { return accel.jobs_checked(); }
    const std::vector<std::string>& job_failures() const { return accel.failures(); }
    std::vector<std::string> accelerator_errors() const { return accel.accelerator_errors(); }
    void finish_checks() { accel.finish(); }

private:
    static qemu_pci::pci_device::config pci_config(const config& cfg);
    static accelerator::config accel_config(const config& cfg);

    std::vector<std::string> m_bar_violations;
};

}  // namespace systolic::qemu
