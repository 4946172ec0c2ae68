// The testbench's members but make_host and the destructor, included by one source file per
// format (testbench_<format>.cpp), each of which instantiates them once (testbench.h declares them
// extern). Those two instantiate the array and the fabric and are compiled apart
// (testbench_hosts.h): with the controller in one translation unit they would pass 15 CPU-s.
#pragma once

#include "systolic/verify/testbench.h"

#include <algorithm>
#include <exception>
#include <optional>

namespace systolic::verify {

template <class Format>
testbench<Format>::testbench(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      mem("memory", cfg.mem),
      env("env", mem),
      monitor(env.monitor),
      checker(env.checker),
      controller("controller", make_host(cfg), cfg.controller) {
    controller.initiator_socket.bind(env.target_socket);
    env.initiator_socket.bind(mem.target_socket);
    const sc_core::sc_time slowest = std::max(cfg.mem.read_latency, cfg.mem.write_latency);
    m_dut = m_fabric ? std::make_unique<controller_dut<Format>>(controller, *m_fabric, slowest)
                     : std::make_unique<controller_dut<Format>>(controller, *m_array, slowest);
    SC_THREAD(checking);
}

// One thread for every job, which never returns: libsystemc announces the switch away from a
// thread that returned as one to an empty stack, so ASan would then misjudge the main stack and
// report false errors for an exception thrown after sc_start (a failed stdout).
template <class Format>
void testbench<Format>::checking() {
    for (;;) {
        while (!m_request)
            sc_core::wait(m_request_event);
        const request r = *m_request;
        m_request.reset();
        try {
            m_out = env.check(*m_dut, *r.pr, *r.opt);
        } catch (...) {
            m_error = std::current_exception();
        }
    }
}

template <class Format>
job_check<Format> testbench<Format>::run(const problem<Format>& pr, const job_options& opt) {
    const auto& s = pr.shape;
    if (pr.a.size() != s.m * s.k || pr.b.size() != s.k * s.p)
        throw std::invalid_argument("testbench: operand sizes do not match the shape");
    const sc_core::sc_time limit =
        opt.time_limit != sc_core::SC_ZERO_TIME ? opt.time_limit : m_dut->time_limit(plan_memory(s, opt));

    m_out.reset();
    m_error = nullptr;
    m_request = request{&pr, &opt};
    m_request_event.notify(sc_core::SC_ZERO_TIME);
    // The check ends by the time limit at the latest; a job that finishes early ends the run when
    // the simulation runs out of events, as a hung one does when the limit passes.
    while (!m_out && !m_error) {
        if (limit == sc_core::SC_ZERO_TIME)
            sc_core::sc_start();
        else
            sc_core::sc_start(limit, sc_core::SC_EXIT_ON_STARVATION);
        if (!sc_core::sc_pending_activity()) break;
    }
    m_request.reset();
    std::optional<job_check<Format>> out = std::move(m_out);
    m_out.reset();
    const std::exception_ptr error = m_error;
    m_error = nullptr;
    if (error) std::rethrow_exception(error);
    if (!out) throw std::logic_error("testbench: the checking thread did not finish");
    return std::move(*out);
}

}  // namespace systolic::verify
