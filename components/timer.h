// A timer in the CLINT's layout, for one hart (its offsets declared here; systolic-soc's
// <systolic/soc_map.h> re-exports them for firmware as SOC_TIMER_*): mtime counts
// simulated nanoseconds, read at the reader's own time (the kernel's plus its quantum offset), and
// is read-only; `irq` (the hart's machine timer interrupt) is high while mtime >= mtimecmp.
// mtimecmp resets to all ones (never). Both are 64-bit registers, accessed whole or by halves.
// A write of mtimecmp takes effect on the line at the writer's time.
#pragma once

#include <cstdint>
#include <systemc>

#include "mmio_device.h"

namespace systolic::components {

class timer : public mmio_device {
public:
    static constexpr std::uint64_t size = 0x10000;  // the CLINT's mtime sits near its end
    static constexpr std::uint64_t mtimecmp_offset = 0x4000, mtime_offset = 0xbff8;
    static constexpr std::uint64_t hz = 1000000000;  // mtime's rate: simulated nanoseconds
    static constexpr mmio_register registers[] = {{mtimecmp_offset, "MTIMECMP"},
                                                  {mtimecmp_offset + 4, "MTIMECMP_HI"},
                                                  {mtime_offset, "MTIME"},
                                                  {mtime_offset + 4, "MTIME_HI"}};

    sc_core::sc_out<bool> irq;

    SC_HAS_PROCESS(timer);
    explicit timer(const sc_core::sc_module_name& name);

    std::uint64_t mtimecmp() const { return m_cmp; }
    static std::uint64_t mtime_at(const sc_core::sc_time& t) { return t.value() / units_per_tick(); }

private:
    // Kernel time units (the resolution) in one mtime tick.
    static std::uint64_t units_per_tick() { return sc_core::sc_time(1e9 / hz, sc_core::SC_NS).value(); }

    bool read(std::uint64_t offset, unsigned char* data, unsigned length,
              const sc_core::sc_time& at) override;
    bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
               const sc_core::sc_time& at) override;
    void update();

    std::uint64_t m_cmp = ~std::uint64_t{0};
    sc_core::sc_event m_update;
};

}  // namespace systolic::components
