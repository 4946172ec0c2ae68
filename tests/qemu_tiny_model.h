// The tiny device of the QEMU PCI component's tests, as a SystemC model (its map is
// qemu_tiny_device.h): a few registers and a DMA engine that copies 64 bytes, each plus one, taking
// simulated time for each transfer.
#pragma once

#include <sys/mman.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <optional>
#include <stdexcept>
#include <systemc>
#include <tlm>

#include "mmio_device.h"
#include "qemu_tiny_device.h"
#include "systolic/qemu_pci/pci_device.h"

namespace systolic::test {

class tiny_device : public systolic::components::mmio_device {
public:
    tlm_utils::simple_initiator_socket<tiny_device> dma;
    std::optional<std::uint32_t> exit_code;
    unsigned copies = 0;

    explicit tiny_device(const sc_core::sc_module_name& name) : mmio_device(name, TINY_SIZE), dma("dma") {
        SC_HAS_PROCESS(tiny_device);
        SC_THREAD(copy);
    }

private:
    bool read(std::uint64_t offset, unsigned char* data, unsigned length, const sc_core::sc_time&) override {
        const std::uint32_t v = offset == TINY_ID        ? TINY_ID_VALUE
                                : offset == TINY_SCRATCH ? m_scratch
                                : offset == TINY_DMA_LO  ? std::uint32_t(m_dma)
                                : offset == TINY_DMA_HI  ? std::uint32_t(m_dma >> 32)
                                : offset == TINY_STATUS  ? m_status
                                                         : 0;
        if (length != 4 || offset % 4) return false;
        std::memcpy(data, &v, 4);
        return true;
    }
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time&) override {
        if (length != 4 || offset % 4) return false;
        std::uint32_t v;
        std::memcpy(&v, data, 4);
        switch (offset) {
            case TINY_SCRATCH:
                m_scratch = v;
                return true;
            case TINY_EXIT:
                exit_code = v;
                return true;
            case TINY_DMA_LO:
                m_dma = (m_dma & ~0xffffffffull) | v;
                return true;
            case TINY_DMA_HI:
                m_dma = (m_dma & 0xffffffffull) | std::uint64_t(v) << 32;
                return true;
            case TINY_GO:
                m_status = 0;
                m_go.notify(sc_core::SC_ZERO_TIME);
                return true;
            default:
                return false;
        }
    }
    // Takes simulated time (a bus transfer each way), which time::settle lets pass before the
    // guest's write of GO returns.
    void copy() {
        for (;;) {
            wait(m_go);
            std::uint8_t bytes[TINY_DMA_BYTES];
            bool ok = transfer(tlm::TLM_READ_COMMAND, m_dma, bytes);
            for (auto& b : bytes)
                b = std::uint8_t(b + 1);
            ok = ok && transfer(tlm::TLM_WRITE_COMMAND, m_dma + TINY_DMA_BYTES, bytes);
            ++copies;
            m_status = ok ? 1 : 2;
        }
    }
    bool transfer(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* bytes) {
        tlm::tlm_generic_payload t;
        t.set_command(cmd);
        t.set_address(address);
        t.set_data_ptr(bytes);
        t.set_data_length(TINY_DMA_BYTES);
        t.set_streaming_width(TINY_DMA_BYTES);
        t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time delay(100, sc_core::SC_NS);
        dma->b_transport(t, delay);
        wait(delay);
        return t.is_response_ok();
    }

    std::uint32_t m_scratch = 0, m_status = 0;
    std::uint64_t m_dma = 0;
    sc_core::sc_event m_go;
};

// The tiny device behind the QEMU PCI component's shell, wired as the tests wire it.
struct tiny_function {
    explicit tiny_function(qemu_pci::unique_fd link, qemu_pci::time_mode time = qemu_pci::time_mode::settle)
        : dev("dev", std::move(link), config(time)), tiny("tiny"), irq("irq") {
        dev.bar0.bind(tiny.target_socket);
        tiny.dma.bind(dev.dma);
        dev.irq(irq);
    }
    static qemu_pci::pci_device::config config(qemu_pci::time_mode time) {
        qemu_pci::pci_device::config cfg;
        cfg.identity = {TINY_VENDOR, TINY_DEVICE, 0xff0000, 1, TINY_VENDOR, TINY_DEVICE};
        cfg.bar0_size = 4096;
        cfg.time = time;
        return cfg;
    }
    qemu_pci::pci_device dev;
    tiny_device tiny;
    sc_core::sc_signal<bool> irq;
};

// A scripted QEMU's guest RAM: one shared memfd page, mapped here too, its first DMA block filled
// with (multiplier * i).
struct fake_guest_ram {
    explicit fake_guest_ram(unsigned multiplier) {
        fd = ::memfd_create("guest_ram", MFD_CLOEXEC);
        if (fd < 0 || ::ftruncate(fd, 4096) != 0) throw std::runtime_error("memfd");
        bytes = static_cast<std::uint8_t*>(::mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0));
        if (bytes == MAP_FAILED) throw std::runtime_error("mmap");
        for (int i = 0; i < TINY_DMA_BYTES; ++i)
            bytes[i] = std::uint8_t(multiplier * unsigned(i));
    }
    fake_guest_ram(const fake_guest_ram&) = delete;
    fake_guest_ram& operator=(const fake_guest_ram&) = delete;
    ~fake_guest_ram() {
        ::munmap(bytes, 4096);
        ::close(fd);
    }
    int fd = -1;
    std::uint8_t* bytes = nullptr;
};

}  // namespace systolic::test
