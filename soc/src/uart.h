// The platform's UART (<systolic/soc_map.h>: SOC_UART_*): a byte written to TX is sent at once to
// the output the platform gives (stdout or a file); STATUS reads READY, always. A read of TX gives 0.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>

#include "mmio_device.h"
#include "systolic/soc_map.h"

namespace systolic::soc {

class uart : public mmio_device {
public:
    explicit uart(const sc_core::sc_module_name& name) : mmio_device(name, SOC_UART_SIZE) {}

    void set_output(std::function<void(char)> out) { m_out = std::move(out); }
    std::uint64_t bytes_sent() const { return m_sent; }

private:
    bool read(std::uint64_t offset, unsigned char* data, unsigned length, const sc_core::sc_time&) override {
        std::uint64_t value = 0;
        if (within(offset, length, SOC_UART_STATUS, 4))
            value = std::uint64_t{SOC_UART_STATUS_READY} >> 8 * (offset - SOC_UART_STATUS);
        else if (!within(offset, length, SOC_UART_TX, 4))
            return false;
        for (unsigned i = 0; i < length; ++i)
            data[i] = static_cast<unsigned char>(value >> 8 * i);
        return true;
    }
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time&) override {
        if (offset != SOC_UART_TX || length > 4) return false;
        ++m_sent;
        if (m_out) m_out(static_cast<char>(data[0]));
        return true;
    }

    std::function<void(char)> m_out;
    std::uint64_t m_sent = 0;
};

}  // namespace systolic::soc
