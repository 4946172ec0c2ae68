// The example platform's CPU: an initiator with one thread that runs a job script (job_script.h)
// as software would, through the interconnect: register reads and writes with the driver of
// <systolic/accelerator_driver.h>, polling, and waits on the interrupt line. Operands are loaded and
// results read back with debug transport, as a debugger's loader would, so they cost no simulated
// time. Each `job` command is checked: C against a reference GEMM and the counters against the
// counting rules, or the expected error code against ERROR with memory untouched. Every job compares
// the whole RAM before and after, so what it reports about memory outside C is what it saw.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <ostream>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "job_script.h"

namespace systolic::vp {

// What one `job` command did, for the JSON report.
struct job_record {
    std::string name;
    std::string dtype;
    std::uint64_t m = 0, k = 0, p = 0;
    std::string expected;  // "ok" or an error name, e.g. "ERR_OVERLAP"
    std::string outcome;   // "ok" or the error name ERROR held
    bool pass = false;
    std::string message;  // why it failed, when it did
    std::uint64_t edges = 0, macs = 0, macs_real = 0, cycles = 0;
    std::string c_descr;          // numpy dtype of C
    std::vector<std::uint8_t> c;  // C as read back (row-major, packed), when the job completed
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
    };

    tlm_utils::simple_initiator_socket<cpu> initiator_socket;
    sc_core::sc_in<bool> irq;

    SC_HAS_PROCESS(cpu);
    cpu(const sc_core::sc_module_name& name, const config& cfg, std::vector<command> script,
        std::ostream& out);

    bool finished() const { return m_finished; }
    int failures() const { return m_failures; }
    int checks() const { return m_checks; }
    const std::vector<job_record>& jobs() const { return m_jobs; }

    // Register accesses for the driver (offsets from the block's base). A bus error is a failure.
    void reg_access(tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t& value);
    std::uint32_t reg_read(std::uint32_t offset);
    void reg_write(std::uint32_t offset, std::uint32_t value);

private:
    struct step_failure {
        std::string message;
    };
    class ram_snapshot;  // a copy of the whole RAM, bounds-checked (cpu.cpp)

    void run();
    void exec(const command& c);
    template <class Format>
    void run_job(const command& c, job_record& rec);

    void debug_write(std::uint64_t addr, const void* data, std::uint64_t len);
    void debug_read(std::uint64_t addr, void* data, std::uint64_t len);
    ram_snapshot snapshot(std::vector<std::uint8_t>& buffer);
    // A time from the script, cut to what is left of SystemC's range from now.
    sc_core::sc_time from_now(std::uint64_t ps) const;
    // Waits for the interrupt line to be high; false on timeout.
    bool wait_irq(const sc_core::sc_time& timeout);
    void fail(const command& c, const std::string& message);

    config m_cfg;
    std::vector<command> m_script;
    std::ostream& m_out;
    std::vector<job_record> m_jobs;
    std::vector<std::uint8_t> m_ram_before, m_ram_after;  // the RAM around the running job
    bool m_finished = false;
    sc_core::sc_event m_never;  // never notified: run() ends waiting on it
    int m_failures = 0;
    int m_checks = 0;
};

}  // namespace systolic::vp
