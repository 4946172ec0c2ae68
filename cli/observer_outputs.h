// The files of the --vcd / --trace / --gtkw group (output_options.h), for every executable: planned
// in its io::output_set with its other outputs before anything runs, streamed into their
// temporaries while it simulates, and completed for the set's commit. A platform with the
// accelerator has its lanes watched here (observe::accelerator_observers) with the interrupt lines
// it adds; systolic-tb attaches its own observers of the array to the writers. Nothing is opened
// for an option that was not given.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "output_options.h"

namespace sc_core {
class sc_time;
}
namespace systolic {
class accelerator;
}
namespace systolic::io {
class output_set;
}
namespace systolic::observe {
class accelerator_observers;
class file_sink;
class trace_file;
class vcd_writer;
}  // namespace systolic::observe

namespace systolic::cli {

class observer_outputs {
public:
    // `program` names the writer in the VCD's header and the timeline's process ("systolic-vp").
    observer_outputs(const output_options& o, std::string program);
    observer_outputs(const observer_outputs&) = delete;
    observer_outputs& operator=(const observer_outputs&) = delete;
    ~observer_outputs();

    // Adds the files the options name to `files`, checked with its other outputs (io_error).
    void plan(io::output_set& files) const;
    // Opens the writers on the planned files' temporaries (io_error).
    void open(io::output_set& files);
    // The writers open() opened, or null.
    observe::vcd_writer* vcd() const { return m_vcd.get(); }
    observe::trace_file* trace() const { return m_trace.get(); }

    // Watches the accelerator's lanes (each array's PEs, all up to 16x16) until stop(); with a VCD,
    // `signals` adds the platform's own (its interrupt lines) before the definitions end.
    void watch(accelerator& accel, std::size_t array_size,
               const std::function<void(observe::vcd_writer&)>& signals = {});
    // Closes a job still running at `end` and lets go of the accelerator.
    void stop(const sc_core::sc_time& end);

    // Completes the files for `files`' commit: the VCD, the --gtkw save file `save_file` (the
    // caller's, which knows the signals), the timeline. A write that failed throws runtime_error.
    void finish(io::output_set& files, std::string save_file = {});

private:
    output_options m_options;
    std::string m_program;
    std::unique_ptr<observe::file_sink> m_vcd_sink, m_trace_sink;
    std::unique_ptr<observe::vcd_writer> m_vcd;
    std::unique_ptr<observe::trace_file> m_trace;
    std::unique_ptr<observe::accelerator_observers> m_watch;
    std::string m_save_file;  // the --gtkw text: `files` holds a view of it until the commit
};

}  // namespace systolic::cli
