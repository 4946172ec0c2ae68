// The example platform's CPU: an initiator with one thread that runs a job script (job_script.h)
// as software would, through the interconnect: register reads and writes with the driver of
// <systolic/accelerator_driver.h>, polling, and waits on the interrupt line. Each `job` command is
// run and checked by the verification environment (<systolic/verify/environment.h>) through the
// register DUT: the environment loads the operands with debug transport (no simulated time), the
// register DUT programs, starts and waits for the job, and the scoreboard checks every write by
// C's coordinates, the whole RAM outside C, the counters and the DMA path's protocol; a job that
// must be refused is checked for its ERROR code, no write and RAM untouched.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "job_script.h"
#include "systolic/verify/format_environments.h"
#include "systolic/verify/register_dut.h"

namespace systolic::vp {

// What one `job` command did, for the JSON report.
struct job_record {
    std::string name;
    std::string dtype;
    std::uint64_t m = 0, k = 0, p = 0;
    job_outcome expected;
    job_outcome outcome;  // completed, or the code ERROR held
    bool pass = false;
    std::string message;  // why it failed, when it did
    std::uint64_t edges = 0, macs = 0, macs_real = 0, cycles = 0;
    std::optional<std::uint64_t> energy_pj;  // ENERGY after the job, when the platform prices jobs
    std::string c_descr;                     // numpy dtype of C
    std::vector<std::uint8_t> c;             // C as read back (row-major, packed), when the job completed
    // What the scoreboard counted, when the job ran.
    std::optional<verify::scoreboard_summary> scoreboard;
};

class cpu : public sc_core::sc_module {
public:
    struct config {
        std::uint64_t regs_base = 0x40000000;
        std::uint64_t ram_base = ram_window{}.base;
        std::uint64_t ram_size = ram_window{}.size;
        std::size_t array_size = 2;
        sc_core::sc_time poll_interval = sc_core::sc_time(100, sc_core::SC_NS);
        sc_core::sc_time timeout = sc_core::sc_time(1, sc_core::SC_SEC);  // default for waits
        // The accelerator prices its jobs (--energy): each job's ENERGY is read after it, by a debug
        // read (no simulated time), for the summary and the JSON report.
        bool read_energy = false;
    };

    tlm_utils::simple_initiator_socket<cpu> initiator_socket;
    sc_core::sc_in<bool> irq;

    SC_HAS_PROCESS(cpu);
    cpu(const sc_core::sc_module_name& name, const config& cfg, std::vector<command> script,
        verify::format_environments& checks, std::ostream& out);

    bool finished() const { return m_finished; }
    int failures() const { return m_failures; }
    int checks() const { return m_checks; }
    const std::vector<job_record>& jobs() const { return m_jobs; }
    // Broken TLM-2.0 rules on the DMA path, as the jobs' scoreboards counted them.
    std::uint64_t dma_protocol_violations() const { return m_dma_violations; }

    // Register accesses for the driver (offsets from the block's base). A bus error is a failure.
    void reg_access(tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t& value);
    std::uint32_t reg_read(std::uint32_t offset);
    void reg_write(std::uint32_t offset, std::uint32_t value);

private:
    struct step_failure {
        std::string message;
    };

    void run();
    void exec(const command& c);
    template <class Format>
    void run_job(const command& c, job_record& rec);

    void debug_write(std::uint64_t addr, const void* data, std::uint64_t len);
    void debug_read(std::uint64_t addr, void* data, std::uint64_t len);
    // A time from the script, cut to what is left of SystemC's range from now.
    sc_core::sc_time from_now(std::uint64_t ps) const;
    // Waits for the interrupt line to be high; false on timeout.
    bool wait_irq(const sc_core::sc_time& timeout);
    void fail(const command& c, const std::string& message);

    config m_cfg;
    std::vector<command> m_script;
    std::ostream& m_out;
    std::vector<job_record> m_jobs;
    verify::format_environments& m_envs;
    verify::register_dut m_dut;  // the accelerator, programmed through this CPU's register accesses
    std::uint64_t m_dma_violations = 0;
    bool m_finished = false;
    sc_core::sc_event m_never;  // never notified: run() ends waiting on it
    int m_failures = 0;
    int m_checks = 0;
};

}  // namespace systolic::vp
