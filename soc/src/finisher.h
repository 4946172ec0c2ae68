// The platform's test finisher (<systolic/soc_map.h>: SOC_FINISHER_*): a write of a code to CODE
// ends the simulation with it. The handler runs at the first write, with the code and its time; the
// platform stops the hart there. CODE reads back the code written (0 before).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <utility>

#include "mmio_device.h"
#include "systolic/soc_map.h"

namespace systolic::soc {

class finisher : public mmio_device {
public:
    explicit finisher(const sc_core::sc_module_name& name) : mmio_device(name, SOC_FINISHER_SIZE) {}

    void on_finish(std::function<void(std::uint32_t code, const sc_core::sc_time& at)> handler) {
        m_handler = std::move(handler);
    }
    const std::optional<std::uint32_t>& code() const { return m_code; }

private:
    bool read(std::uint64_t offset, unsigned char* data, unsigned length, const sc_core::sc_time&) override {
        if (!within(offset, length, SOC_FINISHER_CODE, 4)) return false;
        const std::uint32_t v = m_code.value_or(0);
        for (unsigned i = 0; i < length; ++i)
            data[i] = static_cast<unsigned char>(v >> 8 * (offset - SOC_FINISHER_CODE + i));
        return true;
    }
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time& at) override {
        if (offset != SOC_FINISHER_CODE || length != 4) return false;
        if (m_code) return true;  // the first code stands
        m_code = std::uint32_t(data[0]) | std::uint32_t(data[1]) << 8 | std::uint32_t(data[2]) << 16 |
                 std::uint32_t(data[3]) << 24;
        if (m_handler) m_handler(*m_code, at);
        return true;
    }

    std::function<void(std::uint32_t, const sc_core::sc_time&)> m_handler;
    std::optional<std::uint32_t> m_code;
};

}  // namespace systolic::soc
