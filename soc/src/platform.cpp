#include "platform.h"

#include <stdexcept>
#include <utility>

#include "soc_regions.h"
#include "systolic/accelerator_map.h"

namespace systolic::soc {

using namespace components;

namespace {

// Register names for the trace, from the declarations: the accelerator's map, and the devices'.
std::string accel_register(std::uint64_t offset) {
    for (const regmap::reg& r : regmap::registers)
        if (r.offset == offset) return r.name;
    return "";
}

}  // namespace

hart::config platform::hart_config(const config& cfg) {
    hart::config hc;
    hc.arch = cfg.arch;
    hc.clock_hz = cfg.cpu_clock_hz;
    hc.cpi = cfg.cpi;
    for (const memory_range& r : cpu_ram(cfg.arch))
        hc.ram.push_back({r.base, r.size, r.name, {}});
    for (const soc_region& r : soc_regions) {
        if (r.ram) continue;
        hart::range d{r.base, r.size, r.name, {}};
        if (r.base == SOC_ACCEL_BASE) d.register_name = accel_register;
        if (r.base == SOC_UART_BASE)
            d.register_name = [](std::uint64_t o) { return register_name(uart::registers, o); };
        if (r.base == SOC_TIMER_BASE)
            d.register_name = [](std::uint64_t o) { return register_name(timer::registers, o); };
        if (r.base == SOC_FINISHER_BASE)
            d.register_name = [](std::uint64_t o) { return register_name(finisher::registers, o); };
        hc.devices.push_back(std::move(d));
    }
    return hc;
}

accelerator::config platform::accel_config(const config& cfg) {
    accelerator::config ac;
    ac.array_size = cfg.array_size;
    ac.engine = cfg.engine;
    ac.price = cfg.price;
    return ac;  // base 0: the router strips the window's address
}

std::vector<memory_range> platform::cpu_ram(isa arch) {
    std::vector<memory_range> out;
    for (const soc_region& r : soc_regions)
        if (r.ram && (arch == isa::rv64 || r.base + r.size <= std::uint64_t{1} << 32))
            out.push_back({r.base, r.size, r.name});
    return out;
}

platform::platform(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      bus("bus"),
      ram("ram", memory::config{0, SOC_RAM_SIZE}),
      high_ram("high_ram", memory::config{0, SOC_HIGH_RAM_SIZE}),
      accel("accel", accel_config(cfg), SOC_RAM_BASE, SOC_RAM_SIZE),
      cpu("cpu", hart_config(cfg)),
      cpu_checker("cpu_checker"),
      uart("uart"),
      timer("timer"),
      finisher("finisher"),
      accel_irq("accel_irq"),
      timer_irq("timer_irq") {
    cpu.initiator_socket.bind(cpu_checker.target_socket);
    cpu_checker.initiator_socket.bind(bus.target_socket);
    cpu_checker.on_violation([this](const std::string& v) { m_cpu_violations.push_back(v); });
    accel.dma.bind(bus.target_socket);
    // In soc_regions' order, which is soc_port's.
    bus.initiator_socket.bind(ram.target_socket);
    bus.initiator_socket.bind(high_ram.target_socket);
    bus.initiator_socket.bind(accel.regs);
    bus.initiator_socket.bind(uart.target_socket);
    bus.initiator_socket.bind(timer.target_socket);
    bus.initiator_socket.bind(finisher.target_socket);
    for (unsigned port = 0; port < std::size(soc_regions); ++port)
        bus.map(soc_regions[port].base, soc_regions[port].size, port, soc_regions[port].name);
    accel.irq.bind(accel_irq);
    timer.irq.bind(timer_irq);
    cpu.irq_external.bind(accel_irq);
    cpu.irq_timer.bind(timer_irq);
    finisher.on_finish([this](std::uint32_t, const sc_core::sc_time& at) {
        m_finish_time = at;
        cpu.halt();
    });
    cpu.on_stop([] { sc_core::sc_stop(); });
    SC_METHOD(dump_irq);
    sensitive << accel_irq << timer_irq;
    dont_initialize();
}

void platform::load(const elf_image& image) {
    for (const elf_segment& s : image.segments) {
        memory& m = s.address >= SOC_HIGH_RAM_BASE ? high_ram : ram;
        const std::uint64_t offset =
            s.address - (s.address >= SOC_HIGH_RAM_BASE ? SOC_HIGH_RAM_BASE : SOC_RAM_BASE);
        std::vector<std::uint8_t> bytes = s.bytes;
        bytes.resize(s.size, 0);  // .bss and the like
        if (m.core().write(offset, bytes.data(), bytes.size()) != memory_core::status::ok)
            throw std::logic_error("platform::load: a segment outside RAM (parse_elf checks them)");
    }
    cpu.reset(image.entry);
}

std::uint64_t platform::bus_transactions_checked() const {
    return cpu_checker.checked() + accel.bus_transactions_checked();
}

std::vector<std::string> platform::protocol_violations() const {
    std::vector<std::string> all = m_cpu_violations;
    for (const std::string& v : accel.protocol_violations())
        all.push_back(v);
    return all;
}

void platform::trace_irq(observe::vcd_writer& w) {
    m_vcd = &w;
    m_accel_irq_var = w.add_wire(std::string(name()) + ".accel_irq", 1);
    m_timer_irq_var = w.add_wire(std::string(name()) + ".timer_irq", 1);
}

void platform::dump_irq() {
    if (!m_vcd) return;
    m_vcd->set_time(sc_core::sc_time_stamp().value());
    m_vcd->set(m_accel_irq_var, accel_irq.read());
    m_vcd->set(m_timer_irq_var, timer_irq.read());
}

}  // namespace systolic::soc
