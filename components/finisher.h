// A test finisher: a write of a code to CODE ends the simulation with it. The handler runs at the
// first write, with the code and its time; the platform stops its CPU there. CODE reads back the
// code written (0 before). Its offsets are declared here; systolic-soc's <systolic/soc_map.h>
// re-exports them for firmware (SOC_FINISHER_*).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "mmio_device.h"

namespace systolic::components {

class finisher : public mmio_device {
public:
    static constexpr std::uint64_t size = 0x1000;  // the window: one 4 KiB page
    static constexpr std::uint64_t code_offset = 0x0;
    static constexpr mmio_register registers[] = {{code_offset, "CODE"}};

    explicit finisher(const sc_core::sc_module_name& name) : mmio_device(name, size) {}

    void on_finish(std::function<void(std::uint32_t code, const sc_core::sc_time& at)> handler) {
        m_handler = std::move(handler);
    }
    const std::optional<std::uint32_t>& code() const { return m_code; }

private:
    bool read(std::uint64_t offset, unsigned char* data, unsigned length, const sc_core::sc_time&) override {
        if (!within(offset, length, code_offset, 4)) return false;
        const std::uint32_t v = m_code.value_or(0);
        for (unsigned i = 0; i < length; ++i)
            data[i] = static_cast<unsigned char>(v >> 8 * (offset - code_offset + i));
        return true;
    }
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time& at) override {
        if (offset != code_offset || length != 4) return false;
        if (m_code) return true;  // the first code stands
        m_code = std::uint32_t(data[0]) | std::uint32_t(data[1]) << 8 | std::uint32_t(data[2]) << 16 |
                 std::uint32_t(data[3]) << 24;
        if (m_handler) m_handler(*m_code, at);
        return true;
    }

    std::function<void(std::uint32_t, const sc_core::sc_time&)> m_handler;
    std::optional<std::uint32_t> m_code;
};

}  // namespace systolic::components
