// The hart's track on a --trace timeline (a trace_file of <systolic/observe/trace_observer.h>, beside
// the accelerator's tracks), at the CPU's own time:
//   "read uart STATUS", "write accel CTRL", ...  one span per device access (category mmio), from
//                                                the CPU's time at the access to that plus the
//                                                device's latency; args: address, bytes, value
//   "interrupt 11 (external)", "interrupt 7 (timer)"  the handler (category irq), from the slice
//                                                boundary where it was taken to the first one at
//                                                which mstatus.MIE is set again (its mret)
//   "wfi"                                        a sleep (category wfi), from the wfi to the wake-up
// Spans inside a handler are written after it, so that readers nest them under it (they rebuild the
// tree from the times and put the first written of two equal spans outside).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <systemc>

#include "systolic/observe/trace_observer.h"

namespace systolic::components {

class hart_trace {
public:
    hart_trace(observe::trace_file& out, const std::string& track)
        : m_out(out), m_track(out.add_track(track)) {}

    void access(bool write, const std::string& what, std::uint64_t address, unsigned bytes,
                std::uint64_t value, const sc_core::sc_time& begin, const sc_core::sc_time& end) {
        char args[96];
        std::snprintf(args, sizeof args, "\"address\":\"0x%llx\",\"bytes\":%u,\"value\":\"0x%llx\"",
                      static_cast<unsigned long long>(address), bytes,
                      static_cast<unsigned long long>(value));
        put(span(std::string(write ? "write " : "read ") + what, "mmio", begin, end, args));
    }

    void interrupt_taken(unsigned cause, const sc_core::sc_time& at) {
        m_handler_open = true;
        m_cause = cause;
        m_handler_begin = at;
    }
    void interrupt_returned(const sc_core::sc_time& at) {
        if (!m_handler_open) return;
        m_handler_open = false;
        const std::string name =
            "interrupt " + std::to_string(m_cause) + (m_cause == 11 ? " (external)" : " (timer)");
        m_out.append(span(name, "irq", m_handler_begin, at, "\"mcause\":" + std::to_string(m_cause)));
        m_out.append(m_inside);
        m_inside.clear();
    }

    void sleep(const sc_core::sc_time& begin, const sc_core::sc_time& end) {
        put(span("wfi", "wfi", begin, end, ""));
    }

    // The simulation ended at `end`: a handler still running is closed there.
    void finish(const sc_core::sc_time& end) { interrupt_returned(end); }

private:
    void put(const std::string& event) {
        if (m_handler_open)
            m_inside += event;
        else
            m_out.append(event);
    }
    std::string span(const std::string& name, const char* cat, const sc_core::sc_time& begin,
                     const sc_core::sc_time& end, const std::string& args) const {
        return m_out.span(m_track, name, cat, begin.value(), end.value(), args);
    }

    observe::trace_file& m_out;
    const int m_track;
    bool m_handler_open = false;
    unsigned m_cause = 0;
    sc_core::sc_time m_handler_begin;
    std::string m_inside;  // the open handler's spans
};

}  // namespace systolic::components
