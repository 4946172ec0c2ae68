// The waveform and the timeline of an accelerator (accelerator.h): for each of its lanes (an array
// and a controller per number format) a vcd_observer on one shared vcd_writer, a trace_observer on
// one shared trace_file, or both through a fan-out, attached with accelerator::set_observer for as
// long as this object lives. The VCD's signals sit under the lanes' SystemC names
// (<accel>.ctrl_int8.phase, <accel>.array_int8.row_0.pe_0_0.acc, ...); each job is followed from
// its start to its end, so one file shows every job the software ran, in any format. A caller that
// adds signals of its own to the writer ends its definitions afterwards (vcd_writer::end_definitions).
#pragma once

#include <memory>
#include <systemc>
#include <tuple>

#include "systolic/accelerator.h"
#include "systolic/number_format.h"
#include "systolic/observe/observer_fanout.h"
#include "systolic/observe/pe_selection.h"
#include "systolic/observe/trace_observer.h"
#include "systolic/observe/vcd_observer.h"
#include "systolic/observe/vcd_writer.h"

namespace systolic::observe {

class accelerator_observers {
public:
    // Either writer may be null (not written). `traced`: the PEs of each array in the VCD.
    accelerator_observers(accelerator& accel, vcd_writer* vcd, const pe_selection& traced, trace_file* trace);
    accelerator_observers(const accelerator_observers&) = delete;
    accelerator_observers& operator=(const accelerator_observers&) = delete;
    ~accelerator_observers();

    // A job still running when the simulation stopped is closed at `end`; ended jobs closed themselves.
    void finish(const sc_core::sc_time& end);

private:
    template <class Format>
    struct lane {
        std::unique_ptr<vcd_observer<Format>> vcd;
        std::unique_ptr<trace_observer<Format>> trace;
        observer_fanout<Format> all;
    };

    template <class Format>
    void attach(lane<Format>& l, vcd_writer* vcd, const pe_selection& traced, trace_file* trace);
    template <class Format>
    void finish(lane<Format>& l, const sc_core::sc_time& end);

    template <class List>
    struct lane_set;
    template <class... Formats>
    struct lane_set<type_list<Formats...>> {
        using type = std::tuple<lane<Formats>...>;
    };
    template <class Format>
    lane<Format>& lane_of() {
        return std::get<lane<Format>>(m_lanes);
    }

    accelerator& m_accel;
    typename lane_set<formats>::type m_lanes;  // one per format of the accelerator
};

}  // namespace systolic::observe
