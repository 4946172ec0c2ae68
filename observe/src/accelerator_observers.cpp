#include "systolic/observe/accelerator_observers.h"

namespace systolic::observe {

accelerator_observers::accelerator_observers(accelerator& accel, vcd_writer* vcd, const pe_selection& traced,
                                             trace_file* trace)
    : m_accel(accel) {
    for_each_format([&](auto format) { attach(lane_of<decltype(format)>(), vcd, traced, trace); });
}

accelerator_observers::~accelerator_observers() {
    for_each_format([&](auto format) { m_accel.set_observer<decltype(format)>(nullptr); });
}

void accelerator_observers::finish(const sc_core::sc_time& end) {
    for_each_format([&](auto format) { finish(lane_of<decltype(format)>(), end); });
}

template <class Format>
void accelerator_observers::attach(lane<Format>& l, vcd_writer* vcd, const pe_selection& traced,
                                   trace_file* trace) {
    const tile_controller<Format>& ctrl = m_accel.controller<Format>();
    if (vcd) {
        // Each job programs its own DATAFLOW: the VCD has the PE registers of all three.
        l.vcd = std::make_unique<vcd_observer<Format>>(*vcd, m_accel.array<Format>(), ctrl.name(), traced,
                                                       ctrl.cfg().clock_period, pe_registers::both);
        l.all.add(l.vcd.get());
    }
    if (trace) {
        l.trace = std::make_unique<trace_observer<Format>>(*trace, ctrl.name());
        l.all.add(l.trace.get());
    }
    if (!l.all.empty()) m_accel.set_observer<Format>(&l.all);
}

template <class Format>
void accelerator_observers::finish(lane<Format>& l, const sc_core::sc_time& end) {
    if (!m_accel.controller<Format>().busy()) return;
    if (l.vcd) l.vcd->finish(end);
    if (l.trace) l.trace->finish(end);
}

}  // namespace systolic::observe
