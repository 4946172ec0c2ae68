// Any TLM-2.0 target and an interrupt line as a PCI function of a stock QEMU (docs/qemu.md): the
// SystemC shell over the link (mpqemu_link.h). QEMU's BAR0 accesses go out of `bar0` as
// transactions at offsets into BAR0; the device's DMA comes into `dma` at guest-physical addresses
// and reaches guest RAM (with DMI), only while the guest has enabled bus mastering; `irq` is the
// device's interrupt line, shown in the status register and handed to an interrupt bridge.
//
// Time: the protocol carries none. One thread serves the link: before it reads the next request it
// lets the simulation run until nothing is pending (time::settle, the default), so a register write
// that starts work is answered after that work is done, and every run gives the same times and
// counters; or (time::free) it advances the simulation a quantum at a time while no request is
// waiting, so the guest sees its device busy and its own wait paths run. When QEMU closes the link
// (it powered off or ended), the thread stops the simulation.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>

#include "systolic/names.h"
#include "systolic/qemu_pci/guest_memory.h"
#include "systolic/qemu_pci/mpqemu_link.h"
#include "systolic/qemu_pci/pci_config.h"

namespace spdlog {
class logger;
}

namespace systolic::qemu_pci {

enum class time_mode { settle, free };
inline constexpr enum_name<time_mode> time_mode_names[] = {
    {time_mode::settle, "settle", "each request is answered once the simulation has nothing pending"},
    {time_mode::free, "free",
     "requests are answered at once; the simulation runs a quantum at a time between them"},
};
static_assert(names_in_order(time_mode_names));

// Where the function's interrupt goes: called with the line's level on every change that the
// guest has not masked (INTx Disable), and with false when it masks a raised line.
using interrupt_bridge = std::function<void(bool level)>;

class pci_device : public sc_core::sc_module {
public:
    struct config {
        pci_identity identity;
        std::uint32_t bar0_size = 4096;
        time_mode time = time_mode::settle;
        sc_core::sc_time quantum = sc_core::sc_time(1, sc_core::SC_US);  // time::free's step
    };

    tlm_utils::simple_initiator_socket<pci_device> bar0;  // to the device's registers: offsets into BAR0
    tlm_utils::simple_target_socket<pci_device> dma;      // from the device: guest-physical addresses
    sc_core::sc_in<bool> irq;

    // Serves `link` (QEMU's end is its child's fd 3) from the start of the simulation.
    pci_device(const sc_core::sc_module_name& name, unique_fd link, const config& cfg);
    ~pci_device() override;

    void set_interrupt_bridge(interrupt_bridge bridge) { m_bridge = std::move(bridge); }

    const pci_config& config_space() const { return m_config; }
    const guest_memory& ram() const { return m_ram; }
    // What was served: requests by command, and BAR accesses the device refused (an error response).
    std::uint64_t requests(mpqemu_cmd c) const { return m_requests[std::size_t(c)]; }
    std::uint64_t refused_bar_accesses() const { return m_refused; }
    // The link's end as QEMU left it: empty when it closed cleanly, else the link_error's line.
    const std::string& link_failure() const { return m_failure; }

private:
    void serve();
    void settle();
    bool wait_for_request();
    void handle(mpqemu_message& m);
    std::uint64_t bar_access_of_device(const bar_access& b, bool write);
    void on_irq();
    void deliver_interrupt();
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay);
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi);
    unsigned int transport_dbg(tlm::tlm_generic_payload& t);
    tlm::tlm_response_status dma_status(const tlm::tlm_generic_payload& t, std::uint8_t*& host) const;

    mpqemu_link m_link;
    config m_cfg;
    pci_config m_config;
    guest_memory m_ram;
    interrupt_bridge m_bridge;
    bool m_bridge_level = false;
    std::uint64_t m_requests[std::size(mpqemu_cmd_names)] = {};
    std::uint64_t m_refused = 0;
    std::string m_failure;
    std::shared_ptr<spdlog::logger> m_log;
};

}  // namespace systolic::qemu_pci
