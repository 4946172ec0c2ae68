#include "observer_outputs.h"

#include <stdexcept>
#include <systemc>

#include "io/output_set.h"
#include "systolic/observe/accelerator_observers.h"
#include "systolic/observe/file_sink.h"
#include "systolic/observe/pe_selection.h"
#include "systolic/observe/trace_observer.h"
#include "systolic/observe/vcd_writer.h"

namespace systolic::cli {

observer_outputs::observer_outputs(const output_options& o, std::string program)
    : m_options(o), m_program(std::move(program)) {}

observer_outputs::~observer_outputs() = default;

void observer_outputs::plan(io::output_set& files) const {
    if (m_options.vcd) files.add({"--vcd", *m_options.vcd});
    if (m_options.gtkw) files.add({"--gtkw", *m_options.gtkw});
    if (m_options.trace) files.add({"--trace", *m_options.trace});
}

void observer_outputs::open(io::output_set& files) {
    if (m_options.vcd) {
        m_vcd_sink = std::make_unique<observe::file_sink>(files.stream(*m_options.vcd), *m_options.vcd);
        m_vcd = std::make_unique<observe::vcd_writer>(*m_vcd_sink);
        m_vcd->set_version(m_program);
    }
    if (m_options.trace) {
        m_trace_sink = std::make_unique<observe::file_sink>(files.stream(*m_options.trace), *m_options.trace);
        m_trace = std::make_unique<observe::trace_file>(*m_trace_sink, m_program);
    }
}

void observer_outputs::watch(accelerator& accel, std::size_t array_size,
                             const std::function<void(observe::vcd_writer&)>& signals) {
    if (!m_vcd && !m_trace) return;
    m_watch = std::make_unique<observe::accelerator_observers>(
        accel, m_vcd.get(), observe::parse_pe_selection(std::nullopt, array_size, array_size), m_trace.get());
    if (m_vcd) {
        if (signals) signals(*m_vcd);
        m_vcd->end_definitions();
    }
}

void observer_outputs::stop(const sc_core::sc_time& end) {
    if (m_watch) m_watch->finish(end);
    m_watch.reset();
}

void observer_outputs::finish(io::output_set& files, std::string save_file) {
    if (m_vcd) {
        if (const std::string err = m_vcd->finish(); !err.empty()) throw std::runtime_error(err);
        if (m_options.gtkw) {
            m_save_file = std::move(save_file);
            files.set(*m_options.gtkw, {m_save_file});
        }
    }
    if (m_trace) {
        m_trace->finish();
        if (const std::string err = m_trace_sink->finish(); !err.empty()) throw std::runtime_error(err);
    }
}

}  // namespace systolic::cli
