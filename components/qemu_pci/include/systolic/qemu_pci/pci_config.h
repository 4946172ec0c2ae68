// A PCI function's type-0 configuration space as the device process serves it to QEMU's proxy: QEMU
// sizes the BARs by probing this space (all-ones written, the mask read back) and forwards every
// guest config read here, so the function's IDs, BAR0's size and address, and the command and status
// registers live here (docs/qemu.md). One 32-bit non-prefetchable memory BAR (BAR0); no I/O space,
// no capabilities, no expansion ROM. Plain C++.
#pragma once

#include <array>
#include <cstdint>

namespace systolic::qemu_pci {

// What the function says it is.
struct pci_identity {
    std::uint16_t vendor = 0, device = 0;
    std::uint32_t class_code =
        0;  // base class, subclass and programming interface (0x120000: an accelerator)
    std::uint8_t revision = 0;
    std::uint16_t subsystem_vendor = 0, subsystem = 0;
};

// The command register's bits the function implements; the others read 0.
inline constexpr std::uint16_t command_memory = 1u << 1;
inline constexpr std::uint16_t command_bus_master = 1u << 2;
inline constexpr std::uint16_t command_intx_disable = 1u << 10;
// The status register's interrupt bit (read-only: the function's INTx is pending).
inline constexpr std::uint16_t status_interrupt = 1u << 3;

// Offsets of the header's registers.
namespace reg {
inline constexpr std::uint32_t vendor = 0x00, device = 0x02, command = 0x04, status = 0x06, revision = 0x08,
                               class_code = 0x09, cache_line = 0x0c, latency = 0x0d, header_type = 0x0e,
                               bar0 = 0x10, subsystem_vendor = 0x2c, subsystem = 0x2e, interrupt_line = 0x3c,
                               interrupt_pin = 0x3d;
}  // namespace reg

inline constexpr std::uint32_t config_size = 256;  // conventional PCI (QEMU's pc and q35 alike)

class pci_config {
public:
    // bar0_size: a power of two of at least 16 bytes (throws std::invalid_argument otherwise).
    pci_config(const pci_identity& id, std::uint32_t bar0_size);

    // A read or write of len bytes (1, 2 or 4) at addr, little-endian. Outside the 256 bytes a read
    // gives 0 and a write does nothing (a PCIe extended-config access); so does an access that
    // would cross the end. Writes change only the writable bits: command's three, cache line,
    // latency timer, interrupt line and BAR0's address bits.
    std::uint32_t read(std::uint32_t addr, unsigned len) const;
    void write(std::uint32_t addr, std::uint32_t value, unsigned len);

    std::uint16_t command() const { return std::uint16_t(read(reg::command, 2)); }
    bool memory_enabled() const { return command() & command_memory; }
    bool bus_master() const { return command() & command_bus_master; }
    bool intx_disabled() const { return command() & command_intx_disable; }
    std::uint32_t bar0_address() const { return read(reg::bar0, 4) & ~std::uint32_t(0xf); }
    std::uint32_t bar0_size() const { return m_bar0_size; }
    // The offset into BAR0 of a guest-physical access of len bytes, if the memory space is on and
    // the access lies inside it.
    bool in_bar0(std::uint64_t gpa, unsigned len, std::uint32_t& offset) const;

    // The function's INTx state, shown in the status register's interrupt bit.
    void set_interrupt_pending(bool pending);
    // Back to the state after power-on (DEVICE_RESET): command, BAR0, interrupt line and status.
    void reset();

private:
    pci_identity m_id;
    std::uint32_t m_bar0_size;
    std::array<std::uint8_t, config_size> m_bytes{};
    std::array<std::uint8_t, config_size> m_writable{};
};

}  // namespace systolic::qemu_pci
