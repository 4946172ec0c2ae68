// The platform's timer (<systolic/soc_map.h>: SOC_TIMER_*), in the CLINT's layout: mtime counts
// simulated nanoseconds, read at the reader's own time (the kernel's plus its quantum offset), and
// is read-only; `irq` (the hart's machine timer interrupt) is high while mtime >= mtimecmp.
// mtimecmp resets to all ones (never). Both are 64-bit registers, accessed whole or by halves.
// A write of mtimecmp takes effect on the line at the writer's time.
#pragma once

#include <cstdint>
#include <systemc>

#include "mmio_device.h"
#include "systolic/soc_map.h"

namespace systolic::soc {

class timer : public mmio_device {
public:
    sc_core::sc_out<bool> irq;

    SC_HAS_PROCESS(timer);
    explicit timer(const sc_core::sc_module_name& name);

    std::uint64_t mtimecmp() const { return m_cmp; }
    static std::uint64_t mtime_at(const sc_core::sc_time& t) { return t.value() / units_per_tick(); }

private:
    // Kernel time units (the resolution) in one mtime tick.
    static std::uint64_t units_per_tick() {
        return sc_core::sc_time(1e9 / SOC_TIMER_HZ, sc_core::SC_NS).value();
    }

    bool read(std::uint64_t offset, unsigned char* data, unsigned length,
              const sc_core::sc_time& at) override;
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time& at) override;
    void update();

    std::uint64_t m_cmp = ~std::uint64_t{0};
    sc_core::sc_event m_update;
};

}  // namespace systolic::soc
