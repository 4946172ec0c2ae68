#include "platform.h"

#include <utility>

#include "systolic/accelerator_regs.h"
#include "systolic/qemu_map.h"

namespace systolic::qemu {

static_assert(SYSTOLIC_QEMU_ACCEL_SIZE >= SYSTOLIC_REGS_SIZE, "BAR0's first page must hold the registers");
static_assert(SYSTOLIC_QEMU_EXIT_SIZE == components::finisher::size &&
                  SYSTOLIC_QEMU_EXIT_OFFSET + SYSTOLIC_QEMU_EXIT_SIZE <= SYSTOLIC_QEMU_BAR0_SIZE,
              "the test-exit register's page is the finisher's, inside BAR0");
static_assert((SYSTOLIC_QEMU_BAR0_SIZE & (SYSTOLIC_QEMU_BAR0_SIZE - 1)) == 0,
              "a BAR's size is a power of two");

qemu_pci::pci_device::config platform::pci_config(const config& cfg) {
    qemu_pci::pci_device::config c;
    c.identity = {SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE, SYSTOLIC_PCI_CLASS};
    c.bar0_size = SYSTOLIC_QEMU_BAR0_SIZE;
    c.time = cfg.time;
    c.quantum = cfg.quantum;
    return c;
}

accelerator::config platform::accel_config(const config& cfg) {
    accelerator::config ac;
    ac.array_size = cfg.array_size;
    ac.engine = cfg.engine;
    ac.price = cfg.price;
    return ac;  // base 0: the router strips BAR0's offset
}

platform::platform(const sc_core::sc_module_name& name, qemu_pci::unique_fd link, const config& cfg)
    : sc_core::sc_module(name),
      pci("pci", std::move(link), pci_config(cfg)),
      bar_checker("bar_checker"),
      bar("bar"),
      accel("accel", accel_config(cfg), 0, cfg.guest_ram),
      test_exit("test_exit"),
      accel_irq("accel_irq") {
    pci.bar0.bind(bar_checker.target_socket);
    bar_checker.initiator_socket.bind(bar.target_socket);
    bar_checker.on_violation([this](const std::string& v) { m_bar_violations.push_back("BAR0: " + v); });
    bar.initiator_socket.bind(accel.regs);
    bar.initiator_socket.bind(test_exit.target_socket);
    bar.map(SYSTOLIC_QEMU_ACCEL_OFFSET, SYSTOLIC_QEMU_ACCEL_SIZE, 0, "accel");
    bar.map(SYSTOLIC_QEMU_EXIT_OFFSET, SYSTOLIC_QEMU_EXIT_SIZE, 1, "test_exit");
    accel.dma.bind(pci.dma);
    accel.irq.bind(accel_irq);
    pci.irq.bind(accel_irq);
    accel.inject(cfg.inject);
}

std::uint64_t platform::bus_transactions_checked() const {
    return bar_checker.checked() + accel.bus_transactions_checked();
}

std::vector<std::string> platform::protocol_violations() const {
    std::vector<std::string> all = m_bar_violations;
    for (const std::string& v : accel.protocol_violations())
        all.push_back(v);
    return all;
}

}  // namespace systolic::qemu
