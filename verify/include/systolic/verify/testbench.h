// The sc_main-side wrapper of the verification environment: a memory, the environment in front of
// it, one systolic array or a fabric of arrays, the tile controller that drives it and the adapter
// between controller and environment. One testbench serves any number of jobs with its array
// size N, so a process that can elaborate only once can still run many cases; run() checks one job
// from sc_main (it calls sc_start), where environment::check() does the same from inside a running
// simulation.
//
//   controller -> env: [protocol checker -> bus monitor] -> memory, array or fabric beside the controller
#pragma once

#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/counting.h"
#include "systolic/fabric.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/memory.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_controller.h"
#include "systolic/verify/controller_dut.h"
#include "systolic/verify/environment.h"
#include "systolic/verify/problem.h"

namespace systolic::verify {

template <class Format>
class testbench : public sc_core::sc_module {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;

    struct config {
        std::size_t rows = 2;  // the array: rows of PEs (the tile's height)
        std::size_t cols = 2;  // PEs per row (the tile's width)
        // More than one array: a fabric of R x C x D arrays of rows x cols (square) PEs, its links
        // `link_latency` edges long, stepped on `threads` threads (docs/fabric.md).
        fabric_shape fabric{};
        std::uint64_t link_latency = 1;
        unsigned threads = 1;
        typename tile_controller<Format>::config controller{};
        systolic::memory::config mem{};
    };

    memory mem;
    environment<Format> env;
    bus_monitor& monitor;       // env's, in the controller's path
    protocol_checker& checker;  // env's, in the controller's path

private:
    // One of the two, made before the controller that drives it.
    std::unique_ptr<systolic_array<Format>> m_array;
    std::unique_ptr<fabric<Format>> m_fabric;

public:
    tile_controller<Format> controller;

    SC_HAS_PROCESS(testbench);
    testbench(const sc_core::sc_module_name& name, const config& cfg);
    ~testbench() override;

    // The PEs the controller drives: one array's, or a fabric's R*N x C*N.
    std::size_t rows() const { return host().rows(); }
    std::size_t cols() const { return host().cols(); }
    array_shape shape() const { return {rows(), cols()}; }

    // The single array (throws std::logic_error on a fabric), or the fabric (null without one).
    systolic_array<Format>& array() const {
        if (!m_array) throw std::logic_error("testbench: this testbench has a fabric, not one array");
        return *m_array;
    }
    fabric<Format>* fabric_module() const { return m_fabric.get(); }
    // The adapter the environment drives.
    controller_dut<Format>& dut() { return *m_dut; }

    // The teardown's two steps (systolic_array.h), for an owner of several testbenches: see
    // testbench_set.
    void destroy_oldest_pes(std::size_t count) {
        if (m_fabric) m_fabric->destroy_oldest_pes(count);
        if (m_array) m_array->destroy_oldest_pes(count);
    }
    void destroy_pes_newest_first() {
        if (m_fabric) m_fabric->destroy_pes_newest_first();
        if (m_array) m_array->destroy_pes_newest_first();
    }

    // What a job of this shape must count here (count_job, or count_fabric_job on a fabric).
    systolic::expected_counts expected_counts(const problem_shape& s, std::uint64_t k_tile,
                                              dataflow_kind df) const {
        return m_dut->expected_counts(s, k_tile, df);
    }

    // Runs one job to completion (or failure) and checks it (environment::check, on a thread of
    // its own). Call from sc_main or a test, not from a process: it calls sc_start.
    job_check<Format> run(const problem<Format>& pr, const job_options& opt = {});

    // Where run() puts A, B, C (and the partial-sum buffer, if the job needs one) for this shape:
    // guard bands and padded strides unless packed. The same for the same shape and options.
    matmul_job plan_memory(const problem_shape& s, const job_options& opt) const {
        return env.plan_memory(s, opt);
    }

private:
    engine_host<Format>& host() const {
        return m_fabric ? static_cast<engine_host<Format>&>(*m_fabric) : *m_array;
    }
    engine_host<Format>& make_host(const config& cfg);

    std::unique_ptr<controller_dut<Format>> m_dut;

    // The job run() hands to the checking thread, and what the thread hands back.
    struct request {
        const problem<Format>* pr;
        const job_options* opt;
    };
    void checking();
    std::optional<request> m_request;
    sc_core::sc_event m_request_event;
    std::optional<job_check<Format>> m_out;
    std::exception_ptr m_error;
};

// Testbenches that live together in one process (SystemC elaborates once, so they are all built
// before the first job), torn down in the one order that keeps SystemC's teardown linear: the oldest
// PEs of the oldest testbench first, which opens holes near the front of the module registry, then
// every testbench's PEs newest first (systolic_array.h). Each testbench tearing itself down would
// search past every older testbench's modules for each of its own PEs.
template <class Format>
class testbench_set {
public:
    testbench_set() = default;
    testbench_set(const testbench_set&) = delete;
    testbench_set& operator=(const testbench_set&) = delete;
    ~testbench_set() {
        if (!m_benches.empty()) m_benches.front()->destroy_oldest_pes(64);
        while (!m_benches.empty()) {
            m_benches.back()->destroy_pes_newest_first();
            m_benches.pop_back();
        }
    }

    testbench<Format>& add(const std::string& name, const typename testbench<Format>::config& cfg) {
        m_benches.push_back(std::make_unique<testbench<Format>>(name.c_str(), cfg));
        return *m_benches.back();
    }
    std::size_t size() const { return m_benches.size(); }
    testbench<Format>& front() const { return *m_benches.front(); }

private:
    std::vector<std::unique_ptr<testbench<Format>>> m_benches;  // oldest first
};

#define SYSTOLIC_TESTBENCH_EXTERN(F) extern template class testbench<F>;
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_TESTBENCH_EXTERN)
#undef SYSTOLIC_TESTBENCH_EXTERN

}  // namespace systolic::verify
