#include "systolic/qemu_pci/pci_config.h"

#include <stdexcept>
#include <string>

namespace systolic::qemu_pci {

namespace {

template <class Bytes>
void store(Bytes& b, std::uint32_t at, std::uint32_t value, unsigned len) {
    for (unsigned i = 0; i < len; ++i)
        b[at + i] = std::uint8_t(value >> (8 * i));
}

bool inside(std::uint32_t addr, unsigned len) {
    return (len == 1 || len == 2 || len == 4) && addr < config_size && config_size - addr >= len;
}

}  // namespace

pci_config::pci_config(const pci_identity& id, std::uint32_t bar0_size) : m_id(id), m_bar0_size(bar0_size) {
    if (bar0_size < 16 || (bar0_size & (bar0_size - 1)) != 0)
        throw std::invalid_argument(
            "pci_config: BAR0's size must be a power of two of at least 16 bytes, got " +
            std::to_string(bar0_size));
    store(m_writable, reg::command, command_memory | command_bus_master | command_intx_disable, 2);
    m_writable[reg::cache_line] = 0xff;
    m_writable[reg::latency] = 0xff;
    m_writable[reg::interrupt_line] = 0xff;
    // The address bits of a naturally aligned BAR of this size; the low four (memory, 32-bit,
    // not prefetchable) read 0.
    store(m_writable, reg::bar0, ~(bar0_size - 1) & ~std::uint32_t(0xf), 4);
    reset();
}

void pci_config::reset() {
    m_bytes.fill(0);
    store(m_bytes, reg::vendor, m_id.vendor, 2);
    store(m_bytes, reg::device, m_id.device, 2);
    m_bytes[reg::revision] = m_id.revision;
    store(m_bytes, reg::class_code, m_id.class_code, 3);
    m_bytes[reg::header_type] = 0x00;  // type 0, one function
    store(m_bytes, reg::subsystem_vendor, m_id.subsystem_vendor, 2);
    store(m_bytes, reg::subsystem, m_id.subsystem, 2);
    m_bytes[reg::interrupt_pin] = 1;  // INTA#
}

std::uint32_t pci_config::read(std::uint32_t addr, unsigned len) const {
    if (!inside(addr, len)) return 0;
    std::uint32_t v = 0;
    for (unsigned i = 0; i < len; ++i)
        v |= std::uint32_t(m_bytes[addr + i]) << (8 * i);
    return v;
}

void pci_config::write(std::uint32_t addr, std::uint32_t value, unsigned len) {
    if (!inside(addr, len)) return;
    for (unsigned i = 0; i < len; ++i) {
        const std::uint8_t mask = m_writable[addr + i], byte = std::uint8_t(value >> (8 * i));
        m_bytes[addr + i] = std::uint8_t((m_bytes[addr + i] & ~mask) | (byte & mask));
    }
}

bool pci_config::in_bar0(std::uint64_t gpa, unsigned len, std::uint32_t& offset) const {
    const std::uint64_t base = bar0_address();
    if (!memory_enabled() || gpa < base || gpa - base >= m_bar0_size || m_bar0_size - (gpa - base) < len)
        return false;
    offset = std::uint32_t(gpa - base);
    return true;
}

void pci_config::set_interrupt_pending(bool pending) {
    std::uint16_t status = std::uint16_t(read(reg::status, 2));
    status = pending ? std::uint16_t(status | status_interrupt) : std::uint16_t(status & ~status_interrupt);
    store(m_bytes, reg::status, status, 2);
}

}  // namespace systolic::qemu_pci
