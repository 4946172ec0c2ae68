// The passive checker: checks every job that software starts on the accelerator, and starts none
// itself. It sits in front of the accelerator's registers and puts the verification environment
// (one environment per number format, format_environments.h) in the accelerator's DMA path:
//
//   bus ------> target_socket [passive_checker] initiator_socket ------> accel.regs
//   accel.dma -> dma_target_socket [dma_monitor -> environments] dma_initiator_socket -> RAM or bus
//
// It shadows every register write the accelerator accepts. At a write of CTRL.START it decodes the
// job from the shadow with the accelerator's own decoder (decode_job) and holds the accelerator's
// answer against it:
//  - a refused start is checked as a refusal: ERROR holds the decoder's code (ERR_BUSY while a job
//    runs), STATUS.ERROR and IRQ_STATUS.ERROR are set, and nothing is written (a DMA write while no
//    job runs fails);
//  - an accepted job is watched: the bytes its matrices span (A, B, C and the partial-sum buffer,
//    stride padding included) are taken from memory by debug transport, A and B among them; the
//    reference computes C beside the simulation, and the environment of the job's format records
//    every write. At the job's end (accelerator::on_job_end, before software can see it) the
//    environment checks it as environment::check does: every write of C against the reference, C
//    as the memory holds it, the spans outside C byte for byte, the counters EDGES, MACS and
//    MACS_REAL (read by debug transport) against the counting rule, and the DMA path's protocol;
//  - a job whose matrices the memory does not hold (debug transport fails on them) must fail with
//    ERR_DMA, ERROR_ADDR the first byte of the first DMA transaction that failed, a transaction
//    with a byte the memory does not answer (it may start inside the memory and run past its end);
//  - a soft reset while a job runs abandons it: nothing of it is checked, and DMA writes are
//    allowed until the accelerator has stopped it;
//  - a job that an environment's own check() or check_refused() runs is left to that check.
// Outside C only the spans of the job's matrices are compared: the rest of the RAM belongs to the
// software, which runs while the job does. Each failed job gives one line (failures()).
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <systolic/accelerator_driver.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "systolic/accelerator.h"
#include "systolic/names.h"
#include "systolic/register_block.h"
#include "systolic/verify/bus_monitor.h"
#include "systolic/verify/format_environments.h"
#include "systolic/verify/scoreboard.h"

namespace systolic::verify {

// What became of one START.
enum class passive_outcome { completed, refused, bus_error, abandoned, delegated };
inline constexpr enum_name<passive_outcome> passive_outcome_names[] = {
    {passive_outcome::completed, "completed", "the job ran to its end and was checked"},
    {passive_outcome::refused, "refused", "the start was refused, and checked as a refusal"},
    {passive_outcome::bus_error, "bus-error",
     "its matrices are not all in memory: it had to fail with ERR_DMA"},
    {passive_outcome::abandoned, "abandoned", "a soft reset stopped it: not checked"},
    {passive_outcome::delegated, "delegated", "an environment's own check() or check_refused() ran it"},
};
static_assert(names_in_order(passive_outcome_names));
constexpr const char* to_string(passive_outcome o) {
    return name_of(passive_outcome_names, o);
}

class passive_checker : public sc_core::sc_module {
public:
    using outcome = passive_outcome;
    // One START, in the order they were written.
    struct job_report {
        std::uint64_t index = 0;      // 1, 2, ...: every START written, refused ones too
        sc_core::sc_time start, end;  // when START was written, and when the job ended
        std::string job;              // "int32 M=4 K=5 P=6, C at 0x80001200"
        outcome what = outcome::completed;
        bool pass = true;
        std::uint64_t elements = 0;       // elements of C checked
        std::vector<std::string> errors;  // why it failed, one line each
        // What the accelerator answered a refused start or a job ended by ERR_DMA with, as ERROR
        // reads ("ERR_DTYPE", "ERR_DMA at 0x30000000"); empty for a job that ran.
        std::string error;
        // A job that ran to its end and was checked: its dtype and shape, its counters as the
        // registers read them, and what its scoreboard counted (for the platforms' JSON reports).
        dtype format = dtype::int8;
        problem_shape shape;
        std::uint64_t advance_edges = 0, macs_padded = 0, macs_real = 0;
        std::uint64_t energy_pj = 0;  // ENERGY: 0 unless the accelerator prices its jobs
        std::optional<scoreboard_summary> scoreboard;
        // "job 3 (int32 M=4 K=5 P=6, C at 0x80001200): C(0,1) expected 5, got 6 (and 2 more)", or
        // "job 3 (...): completed, pass"
        std::string line() const;
    };
    struct summary {
        std::uint64_t checked = 0;       // jobs checked: completed, refused and bus_error
        std::uint64_t failed = 0;        // ... that failed
        std::uint64_t refused = 0;       // refusals among the checked
        std::uint64_t abandoned = 0;     // stopped by a soft reset
        std::uint64_t delegated = 0;     // run by an environment's own check
        std::uint64_t stray_writes = 0;  // DMA writes while no job ran
    };

    tlm_utils::simple_target_socket<passive_checker> target_socket;        // the bus, towards the registers
    tlm_utils::simple_initiator_socket<passive_checker> initiator_socket;  // to the accelerator's regs
    bus_monitor dma_monitor;           // first in the DMA path: a write while no job runs fails
    format_environments environments;  // after it: the jobs' checks, reaching the RAM by debug transport
    tlm::tlm_target_socket<>& dma_target_socket = dma_monitor.target_socket;  // bind accel.dma here
    tlm::tlm_initiator_socket<>& dma_initiator_socket = environments.initiator_socket();  // to the RAM or bus

    // For `accel`, whose job ends it hears through accelerator::on_job_end (it takes that hook);
    // the environments place their own jobs (environment::check) in [ram_base, ram_base + ram_size).
    passive_checker(const sc_core::sc_module_name& name, accelerator& accel, std::uint64_t ram_base,
                    std::uint64_t ram_size);
    ~passive_checker() override;

    // Called with each failure line as it happens; the lines are kept in failures() either way.
    std::function<void(const std::string&)> on_failure;

    // Once the simulation has stopped: a job still running then fails (it was never checked).
    void finish();

    const std::vector<job_report>& jobs() const { return m_jobs; }
    const std::vector<std::string>& failures() const { return m_failures; }
    summary counts() const;
    bool pass() const { return m_failures.empty(); }
    // The accelerator's DMA transactions checked by the protocol checker, and the TLM-2.0 rules they
    // broke, one line each (a rule broken during a watched job also fails that job).
    std::uint64_t transactions_checked() const { return environments.checked(); }
    std::vector<std::string> protocol_violations() const;

private:
    enum class state { idle, watching, bus_error, delegated, stopping };

    // regs
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end);

    void started(const sc_core::sc_time& at);
    void soft_reset();
    void job_ended();
    template <class Format>
    void watch(job_report report, const matmul_job& job, std::size_t array_size);
    void stray_write(const tlm::tlm_generic_payload& trans);
    void dma_answered(const tlm::tlm_generic_payload& trans);
    void record(job_report report);

    // The accelerator's registers by debug transport, as software would read them.
    std::uint32_t reg(std::uint32_t offset);
    static std::uint32_t debug_read32(void* self, std::uint32_t offset);
    static void no_write32(void* self, std::uint32_t offset, std::uint32_t value);
    job_result registers_result();

    accelerator& m_accel;
    std::shared_ptr<spdlog::logger> m_log;
    register_block m_shadow;  // every accepted register write, as the accelerator stored it
    systolic_dev m_debug_dev;
    state m_state = state::idle;
    job_report m_current;  // the job that runs
    // The environment's end of the watched job: its verdict into the report.
    std::function<void(job_report&, const job_result&)> m_end_watch;
    std::function<void()> m_abandon_watch;
    std::vector<job_report> m_jobs;
    std::vector<std::string> m_failures;
    std::vector<std::string> m_protocol;  // violations seen before the last job's start
    std::uint64_t m_starts = 0;
    std::uint64_t m_stray_writes = 0;
    // The first DMA transaction that failed while a job expected to fail with ERR_DMA ran.
    struct failed_transfer {
        std::uint64_t address = 0, length = 0;
    };
    std::optional<failed_transfer> m_failed_transfer;
};

}  // namespace systolic::verify
