#include "timer.h"

namespace systolic::components {

timer::timer(const sc_core::sc_module_name& name) : mmio_device(name, size), irq("irq") {
    SC_METHOD(update);
    sensitive << m_update;
}

bool timer::read(std::uint64_t offset, unsigned char* data, unsigned length, const sc_core::sc_time& at) {
    std::uint64_t reg = 0, value = 0;
    if (within(offset, length, mtime_offset, 8)) {
        reg = mtime_offset;
        value = mtime_at(at);
    } else if (within(offset, length, mtimecmp_offset, 8)) {
        reg = mtimecmp_offset;
        value = m_cmp;
    } else {
        return false;
    }
    for (unsigned i = 0; i < length; ++i)
        data[i] = static_cast<unsigned char>(value >> 8 * (offset - reg + i));
    return true;
}

bool timer::write(std::uint64_t offset, const unsigned char* data, unsigned length,
                  const sc_core::sc_time& at) {
    if (!within(offset, length, mtimecmp_offset, 8)) return false;
    for (unsigned i = 0; i < length; ++i) {
        const unsigned shift = 8 * unsigned(offset - mtimecmp_offset + i);
        m_cmp = (m_cmp & ~(std::uint64_t{0xff} << shift)) | std::uint64_t(data[i]) << shift;
    }
    m_update.notify(at - sc_core::sc_time_stamp());
    return true;
}

// The line at the kernel's time; when it is low, the next change is scheduled at mtimecmp.
void timer::update() {
    const sc_core::sc_time now = sc_core::sc_time_stamp();
    const std::uint64_t mtime = mtime_at(now);
    irq.write(mtime >= m_cmp);
    // Unless mtimecmp lies past the end of SystemC's time.
    const std::uint64_t units = units_per_tick(), last = sc_core::sc_max_time().value();
    if (mtime < m_cmp && m_cmp <= last / units)
        m_update.notify(sc_core::sc_time::from_value(m_cmp * units - now.value()));
}

}  // namespace systolic::components
