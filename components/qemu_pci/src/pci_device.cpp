#include "systolic/qemu_pci/pci_device.h"

#include <poll.h>
#include <spdlog/spdlog.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "systolic/log.h"

namespace systolic::qemu_pci {

namespace {

std::uint64_t all_ones(unsigned bytes) {
    return bytes >= 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * bytes)) - 1;
}

// Waits until fd is readable, for at most timeout_ms (-1: as long as it takes); true when it is.
bool readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    for (;;) {
        const int r = ::poll(&p, 1, timeout_ms);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw link_error(std::string("waiting for QEMU: ") + std::strerror(errno));
        return r > 0;
    }
}

}  // namespace

pci_device::pci_device(const sc_core::sc_module_name& name, unique_fd link, const config& cfg)
    : sc_core::sc_module(name),
      bar0("bar0"),
      dma("dma"),
      irq("irq"),
      m_link(std::move(link)),
      m_cfg(cfg),
      m_config(cfg.identity, cfg.bar0_size),
      m_log(get_logger(this->name())) {
    if (m_cfg.time == time_mode::free && m_cfg.quantum <= sc_core::SC_ZERO_TIME)
        throw std::invalid_argument("pci_device: time::free needs a quantum greater than zero");
    dma.register_b_transport(this, &pci_device::b_transport);
    dma.register_get_direct_mem_ptr(this, &pci_device::get_direct_mem_ptr);
    dma.register_transport_dbg(this, &pci_device::transport_dbg);
    SC_HAS_PROCESS(pci_device);
    SC_THREAD(serve);
    SC_METHOD(on_irq);
    sensitive << irq;
    dont_initialize();
}

pci_device::~pci_device() = default;

void pci_device::serve() {
    try {
        for (;;) {
            if (!wait_for_request()) break;
            std::optional<mpqemu_message> m = m_link.receive();
            if (!m) break;
            ++m_requests[std::size_t(m->cmd)];
            handle(*m);
        }
        m_log->debug("QEMU closed the link");
    } catch (const link_error& e) {
        m_failure = e.what();
        m_log->error("{}", m_failure);
    }
    sc_core::sc_stop();
}

// Runs the simulation until nothing is pending: what the last request started is done.
void pci_device::settle() {
    while (sc_core::sc_pending_activity()) {
        if (sc_core::sc_pending_activity_at_current_time())
            wait(sc_core::SC_ZERO_TIME);
        else
            wait(sc_core::sc_time_to_pending_activity());
    }
}

bool pci_device::wait_for_request() {
    if (m_cfg.time == time_mode::settle) {
        settle();
        // A guest's register accesses come in bursts: polling a while before sleeping spares each
        // access of a burst this thread's wake-up, which in a virtual machine costs tens of us.
        const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(200);
        while (std::chrono::steady_clock::now() < until)
            if (readable(m_link.fd(), 0)) return true;
        return readable(m_link.fd(), -1);
    }
    for (;;) {
        const bool busy = sc_core::sc_pending_activity();
        if (readable(m_link.fd(), busy ? 0 : -1)) return true;
        wait(m_cfg.quantum);
    }
}

void pci_device::handle(mpqemu_message& m) {
    m_log->trace("{} ({} bytes, {} fds)", to_string(m.cmd), m.payload.size(), m.fds.size());
    switch (m.cmd) {
        case mpqemu_cmd::sync_sysmem:
            m_ram.map(regions_of(m));
            dma->invalidate_direct_mem_ptr(0, ~std::uint64_t{0});
            return;
        case mpqemu_cmd::pci_cfgread: {
            const config_access c = config_access_of(m);
            m_link.reply(m_config.read(c.addr, unsigned(c.len)));
            return;
        }
        case mpqemu_cmd::pci_cfgwrite: {
            const config_access c = config_access_of(m);
            const bool master = m_config.bus_master();
            m_config.write(c.addr, c.value, unsigned(c.len));
            if (master && !m_config.bus_master()) dma->invalidate_direct_mem_ptr(0, ~std::uint64_t{0});
            deliver_interrupt();  // INTx Disable may have changed
            m_link.reply(0);
            return;
        }
        case mpqemu_cmd::bar_read:
        case mpqemu_cmd::bar_write: {
            const bool write = m.cmd == mpqemu_cmd::bar_write;
            const std::uint64_t value = bar_access_of_device(bar_access_of(m), write);
            // What the access started is done before the guest hears back (time::settle).
            if (m_cfg.time == time_mode::settle) settle();
            m_link.reply(value);
            return;
        }
        case mpqemu_cmd::set_irqfd:
            // KVM's INTx; under TCG QEMU never wires it, and the interrupt bridge delivers instead.
            m_log->debug("SET_IRQFD: INTx through KVM's irqfd is not used");
            return;
        case mpqemu_cmd::device_reset:
            m_config.reset();
            m_config.set_interrupt_pending(irq.read());
            dma->invalidate_direct_mem_ptr(0, ~std::uint64_t{0});
            deliver_interrupt();
            m_link.reply(0);
            return;
        case mpqemu_cmd::ret:
            break;
    }
    throw link_error(std::string("QEMU sent ") + to_string(m.cmd) + ", which only a device sends");
}

// A BAR access as a transaction on bar0: its value for a read. An access outside BAR0 (or with
// the memory space off) and one the device refuses read all-ones and write nothing, as a PCI
// master abort does.
std::uint64_t pci_device::bar_access_of_device(const bar_access& b, bool write) {
    std::uint32_t offset = 0;
    if (!b.memory || !m_config.in_bar0(b.addr, b.size, offset)) {
        ++m_refused;
        m_log->debug("BAR {} of {} bytes at 0x{:x}: outside BAR0", write ? "write" : "read", b.size, b.addr);
        return write ? 0 : all_ones(b.size);
    }
    unsigned char data[8];
    std::memcpy(data, &b.value, sizeof data);
    tlm::tlm_generic_payload t;
    t.set_command(write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    t.set_address(offset);
    t.set_data_ptr(data);
    t.set_data_length(b.size);
    t.set_streaming_width(b.size);
    t.set_byte_enable_ptr(nullptr);
    t.set_dmi_allowed(false);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    bar0->b_transport(t, delay);
    if (delay > sc_core::SC_ZERO_TIME) wait(delay);
    if (!t.is_response_ok()) {
        ++m_refused;
        m_log->debug("{}: {}", txn_to_string(t), t.get_response_string());
        return write ? 0 : all_ones(b.size);
    }
    std::uint64_t value = 0;
    if (!write) std::memcpy(&value, data, b.size);
    return value;
}

void pci_device::on_irq() {
    m_config.set_interrupt_pending(irq.read());
    deliver_interrupt();
}

void pci_device::deliver_interrupt() {
    const bool level = m_config.read(reg::status, 2) & status_interrupt && !m_config.intx_disabled();
    if (level == m_bridge_level) return;
    m_bridge_level = level;
    m_log->debug("interrupt {}", level ? "raised" : "lowered");
    if (m_bridge) m_bridge(level);
}

tlm::tlm_response_status pci_device::dma_status(const tlm::tlm_generic_payload& t,
                                                std::uint8_t*& host) const {
    if (t.get_byte_enable_ptr()) return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    if (t.get_streaming_width() < t.get_data_length()) return tlm::TLM_BURST_ERROR_RESPONSE;
    host = m_ram.find(t.get_address(), t.get_data_length());
    if (!host || t.get_data_length() == 0) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    return tlm::TLM_OK_RESPONSE;
}

void pci_device::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) {
    std::uint8_t* host = nullptr;
    // Without Bus Master Enable the function may not start a transaction on the bus.
    tlm::tlm_response_status status =
        m_config.bus_master() ? dma_status(t, host) : tlm::TLM_GENERIC_ERROR_RESPONSE;
    if (status == tlm::TLM_OK_RESPONSE) {
        if (t.is_read())
            std::memcpy(t.get_data_ptr(), host, t.get_data_length());
        else if (t.is_write())
            std::memcpy(host, t.get_data_ptr(), t.get_data_length());
        t.set_dmi_allowed(true);
    } else {
        m_log->debug("DMA {}: {}", txn_to_string(t),
                     m_config.bus_master() ? "outside guest RAM" : "bus mastering is off");
    }
    t.set_response_status(status);
}

bool pci_device::get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
    guest_memory::span s;
    if (!m_config.bus_master() || !m_ram.region_of(t.get_address(), s)) {
        dmi.set_start_address(t.get_address());
        dmi.set_end_address(t.get_address());
        return false;
    }
    dmi.set_dmi_ptr(s.host);
    dmi.set_start_address(s.gpa);
    dmi.set_end_address(s.gpa + s.size - 1);
    dmi.allow_read_write();
    dmi.set_read_latency(sc_core::SC_ZERO_TIME);
    dmi.set_write_latency(sc_core::SC_ZERO_TIME);
    return true;
}

// The device's debug view of the bus is what its DMA reaches (a checker that reads memory through it
// predicts the job's DMA from it): nothing without bus mastering.
unsigned int pci_device::transport_dbg(tlm::tlm_generic_payload& t) {
    std::uint8_t* host = m_config.bus_master() ? m_ram.find(t.get_address(), t.get_data_length()) : nullptr;
    if (!host) return 0;
    if (t.is_read())
        std::memcpy(t.get_data_ptr(), host, t.get_data_length());
    else if (t.is_write())
        std::memcpy(host, t.get_data_ptr(), t.get_data_length());
    return t.get_data_length();
}

}  // namespace systolic::qemu_pci
