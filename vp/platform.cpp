#include "platform.h"

#include <systolic/accelerator_regs.h>
#include <systolic/verify/passive_checker.h>

#include <utility>

namespace systolic::vp {

platform::platform(const sc_core::sc_module_name& name, const cpu::config& cc, const accelerator::config& ac,
                   std::vector<command> script, std::ostream& out)
    : sc_core::sc_module(name),
      bus("bus"),
      ram("ram", memory::config{0, cc.ram_size}),
      accel("accel", ac, cc.ram_base, cc.ram_size),
      cpu("cpu", cc, std::move(script), accel.checks().environments, out),
      cpu_checker("cpu_checker"),
      irq("irq") {
    cpu.initiator_socket.bind(cpu_checker.target_socket);
    cpu_checker.initiator_socket.bind(bus.target_socket);
    accel.dma.bind(bus.target_socket);
    cpu_checker.on_violation([this](const std::string& v) { violations.push_back(v); });
    bus.initiator_socket.bind(ram.target_socket);  // port 0
    bus.initiator_socket.bind(accel.regs);         // port 1
    bus.map(cc.ram_base, cc.ram_size, 0, "ram");
    bus.map(cc.regs_base, SYSTOLIC_REGS_SIZE, 1, "accel.regs");
    accel.irq.bind(irq);
    cpu.irq.bind(irq);
    SC_METHOD(dump_irq);
    sensitive << irq;
    dont_initialize();
}

void platform::trace_irq(observe::vcd_writer& w) {
    m_vcd = &w;
    m_irq_var = w.add_wire(std::string(name()) + ".irq", 1);
}

void platform::dump_irq() {
    if (!m_vcd) return;
    m_vcd->set_time(sc_core::sc_time_stamp().value());
    m_vcd->set(m_irq_var, irq.read());
}

}  // namespace systolic::vp
