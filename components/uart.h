// A UART as simple as a test needs: a byte written to TX is sent at once to the output the platform
// gives (stdout or a file); STATUS reads READY, always. A read of TX gives 0. Its offsets are
// declared here; systolic-soc's <systolic/soc_map.h> re-exports them for firmware (SOC_UART_*).
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "mmio_device.h"

namespace systolic::components {

class uart : public mmio_device {
public:
    static constexpr std::uint64_t size = 0x1000;  // the window: one 4 KiB page
    static constexpr std::uint64_t tx_offset = 0x0, status_offset = 0x4;
    static constexpr std::uint32_t status_ready = 0x1;
    static constexpr mmio_register registers[] = {{tx_offset, "TX"}, {status_offset, "STATUS"}};

    explicit uart(const sc_core::sc_module_name& name) : mmio_device(name, size) {}

    void set_output(std::function<void(char)> out) { m_out = std::move(out); }
    std::uint64_t bytes_sent() const { return m_sent; }

private:
    bool read(std::uint64_t offset, unsigned char* data, unsigned length, const sc_core::sc_time&) override {
        std::uint64_t value = 0;
        if (within(offset, length, status_offset, 4))
            value = std::uint64_t{status_ready} >> 8 * (offset - status_offset);
        else if (!within(offset, length, tx_offset, 4))
            return false;
        for (unsigned i = 0; i < length; ++i)
            data[i] = static_cast<unsigned char>(value >> 8 * i);
        return true;
    }
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time&) override {
        if (offset != tx_offset || length > 4) return false;
        ++m_sent;
        if (m_out) m_out(static_cast<char>(data[0]));
        return true;
    }

    std::function<void(char)> m_out;
    std::uint64_t m_sent = 0;
};

}  // namespace systolic::components
