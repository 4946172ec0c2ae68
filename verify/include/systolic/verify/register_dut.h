// The DUT adapter for the register-programmed accelerator (accelerator.h), as software drives it:
// through <systolic/accelerator_driver.h> over the platform's own register accessors (a
// systolic_dev, e.g. a CPU's TLM reads and writes). start() programs the job and starts it; the
// job has ended when the interrupt line rises, or (without a line) when STATUS is no longer BUSY;
// result() reads the outcome, the ERROR code and the counters back from the registers. The
// environment sits between the accelerator's `dma` and the platform's bus or RAM, so it sees every
// transfer as it does for any DUT.
// Call start() and result() from a SystemC thread: every register access is a bus transaction.
#pragma once

#include <systolic/accelerator_driver.h>

#include <cstdint>
#include <string>
#include <systemc>

#include "systolic/accelerator_job.h"
#include "systolic/verify/dut.h"

namespace systolic::verify {

// The driver's registers for `job` in format `format`: the one translation from a matmul_job.
systolic_job driver_job(const matmul_job& job, dtype format);

// "ERR_OVERLAP": the name of an ERROR register value, or its number when it has none.
std::string error_name(std::uint32_t code);

// The status a job that ended with ERROR `code` has: bus_error (DMA), watchdog (INTERNAL), or
// rejected (refused on START).
job_status error_status(std::uint32_t code);

// A job's result as the registers read: `outcome` as systolic_outcome() gives it (1 completed, 0
// running, -1 refused or failed with ERROR `error`), the counters EDGES, MACS and MACS_REAL, and for
// ERR_DMA the failing address in the message. Reads only; CYCLES into *cycles when given.
job_result result_from_registers(const systolic_dev& dev, int outcome, std::uint32_t error,
                                 std::uint64_t* cycles = nullptr);

class register_dut final : public dut {
public:
    struct config {
        std::size_t array_size = 2;  // the accelerator's N, as its ARRAY_SIZE register reads
        // The accelerator's interrupt line; null: poll STATUS every poll_interval.
        const sc_core::sc_signal_in_if<bool>* irq = nullptr;
        sc_core::sc_time poll_interval = sc_core::sc_time(100, sc_core::SC_NS);
        // How long a job may take before the environment calls it hung; zero: the environment's.
        sc_core::sc_time time_limit = sc_core::SC_ZERO_TIME;
    };

    register_dut(const systolic_dev& dev, dtype format, const config& cfg);

    void start(const matmul_job& job) override;
    const sc_core::sc_event& done_event() const override { return m_done; }
    bool busy() const override { return m_busy; }
    // Completed, or: rejected (a refused start; error holds the code's name), bus_error (ERR_DMA,
    // with the failing address) or watchdog (ERR_INTERNAL). Counters from EDGES, MACS, MACS_REAL.
    job_result result() override;
    systolic::expected_counts expected_counts(const problem_shape& s, std::uint64_t k_tile,
                                              dataflow_kind df) const override;
    sc_core::sc_time time_limit(const matmul_job&) const override { return m_cfg.time_limit; }

    // What the last result() read: the ERROR register, CYCLES, and the time from systolic_start()
    // to the end the adapter saw (the interrupt, or the poll that found the job done).
    std::uint32_t error_code() const { return m_error; }
    std::uint64_t cycles() const { return m_cycles; }
    sc_core::sc_time took() const { return m_ended - m_started; }

    void set_dtype(dtype format) { m_dtype = format; }
    void set_config(const config& cfg) { m_cfg = cfg; }

private:
    void watch(std::uint64_t generation);

    systolic_dev m_dev;
    dtype m_dtype;
    config m_cfg;
    bool m_busy = false;
    std::uint64_t m_generation = 0;  // jobs started; a watcher of an older job stops unheard
    sc_core::sc_event m_done;
    sc_core::sc_time m_started, m_ended;
    std::uint32_t m_error = 0;
    std::uint64_t m_cycles = 0;
};

}  // namespace systolic::verify
