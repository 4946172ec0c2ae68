// The verification environment: checks jobs on any DUT (dut.h) from inside a running simulation,
// the jobs it starts itself (check) or, for the passive checker (passive_checker.h), jobs that
// software starts (begin_watch ... end_watch), with the same scoreboard.
// It owns the scoreboard, the independent reference, the memory planner, and the protocol checker
// and bus monitor that sit in the DUT's initiator path:
//
//   DUT initiator -> target_socket [protocol checker -> bus monitor] initiator_socket -> memory or bus
//
// The protocol checker sees every bulk transaction and DMI call of the DUT; a broken TLM-2.0 rule
// fails the job through the scoreboard, like a wrong value. The monitor refuses DMI for writes, so
// every write reaches the scoreboard. The environment itself reaches memory through a
// memory_access (memory_access.h), never on the DUT's path: straight into a systolic::memory, or
// with debug transport through initiator_socket into a platform's own RAM.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/memory.h"
#include "systolic/number_format.h"
#include "systolic/verify/bus_monitor.h"
#include "systolic/verify/dut.h"
#include "systolic/verify/fabric_outcome.h"
#include "systolic/verify/memory_access.h"
#include "systolic/verify/memory_plan.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/protocol_checker.h"
#include "systolic/verify/reference_gemm.h"
#include "systolic/verify/scoreboard.h"

namespace systolic::verify {

// What one checked job did.
template <class Format>
struct job_check {
    matmul_job job;
    expected_counts expected;
    job_result result;
    scoreboard_summary scoreboard;
    std::vector<std::uint8_t> c;          // C as read back from memory (M x P elements), whatever was written
    std::vector<std::uint8_t> reference;  // the bytes C must hold (expected_c_bytes)
    // int8 outputs that differ from quantizing each complete sum once (--quantize-partials).
    std::uint64_t differs_from_quantize_once = 0;
    std::optional<fabric_outcome> fabric;  // on a fabric of arrays: its links and passes for this job

    bool pass() const { return scoreboard.pass(); }
    // C's elements as T (the accumulator type, or std::int8_t for quantized output).
    template <class T>
    std::vector<T> c_as() const {
        std::vector<T> v(c.size() / sizeof(T));
        std::memcpy(v.data(), c.data(), v.size() * sizeof(T));
        return v;
    }
};

// What a job the DUT must refuse did: it ended with the expected status, wrote nothing and left
// memory as it was.
struct refusal_check {
    job_result result;
    std::uint64_t writes = 0;  // write transactions the DUT issued
    bool untouched_ok = true;
    std::uint64_t protocol_violations = 0;
    bool status_ok = false;
    std::vector<std::string> errors;  // one line each

    bool pass() const { return status_ok && writes == 0 && untouched_ok && protocol_violations == 0; }
};

// The bytes C must hold after the job (M x P elements, row-major): the reference under the job's K
// chunks, policy, overflow mode and output.
template <class Format>
std::vector<std::uint8_t> expected_c_bytes(const problem<Format>& pr, const job_options& opt);

template <class Format>
class environment : public sc_core::sc_module {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;

    protocol_checker checker;
    bus_monitor monitor;

    // The ends of the chain themselves, not sockets bound to them hierarchically: a hierarchical
    // binding is resolved only when elaboration ends, and a DMI invalidation may travel back
    // through the chain before that (a memory resized before the first sc_start).
    tlm::tlm_target_socket<>& target_socket = checker.target_socket;  // bind the DUT's initiator socket here
    tlm::tlm_initiator_socket<>& initiator_socket =
        monitor.initiator_socket;  // bind to the memory, or the bus in front of it

    // Over a systolic::memory that initiator_socket reaches: it is resized to fit each job.
    environment(const sc_core::sc_module_name& name, systolic::memory& mem);
    // Over a platform's RAM at [ram_base, ram_base + ram_size), which initiator_socket reaches
    // (through the platform's bus, if it has one); jobs are placed from ram_base.
    environment(const sc_core::sc_module_name& name, std::uint64_t ram_base, std::uint64_t ram_size);

    // Thread side: runs one job on `d` and checks it: places it (or takes `placement`, whose
    // addresses and fields are used as they are), fills the memory, starts the job, waits for its
    // end (at most the time limit) and checks every write, the memory outside C (from the memory's
    // base, over the job's extent or opt.guard bytes, whichever is more), the edge and MAC counts
    // and the protocol. Call from a SystemC thread. Throws std::invalid_argument for operands that
    // do not match the shape, or a fault the DUT cannot plant.
    job_check<Format> check(dut& d, const problem<Format>& pr, const job_options& opt = {},
                            const std::optional<matmul_job>& placement = std::nullopt);

    // Thread side: runs a job `d` must refuse and checks that it ends with `expected` status,
    // without a write and with the memory's first `window` bytes unchanged (0: the job's extent).
    refusal_check check_refused(dut& d, const matmul_job& job, job_status expected, std::uint64_t window = 0);

    // The passive half of check(), for a job that someone else starts (passive_checker.h): its
    // operands are in memory already and `pr` holds them, `counts` is what it must count, and the
    // memory outside C is compared over `windows`, the bytes as they were before the job. Call before
    // the job's first transfer; end_watch() at its end.
    void begin_watch(const matmul_job& job, std::shared_ptr<const problem<Format>> pr,
                     const systolic::expected_counts& counts, std::vector<memory_snapshot> windows);
    // The job has ended with `result`: every write, C in memory, the memory outside C over the
    // windows, the counts and the protocol, as check() checks them.
    job_check<Format> end_watch(const job_result& result, const scoreboard::tile_edge_rule& tile_edges = {});
    // The watched job will not end as a job (a soft reset stopped it): nothing is checked.
    void abandon_watch();
    // A check(), check_refused() or watch is under way: the job that runs is this environment's own.
    bool busy() const { return m_busy; }
    // Forgets the protocol violations seen so far (before a job whose own count is wanted).
    void clear_violations();

    // Where check() puts a job of this shape and these options.
    matmul_job plan_memory(const problem_shape& s, const job_options& opt) const {
        return verify::plan_memory(s, opt, m_mem->base(), sizeof(operand_type), sizeof(accumulator_type));
    }

    memory_access& memory() { return *m_mem; }
    // Over a platform's RAM: reach it through `socket` from now on, the same RAM by another path
    // (format_environments: the chain's end, past the other environments' checkers, which are
    // there for the DUT's transactions, not for the environments' own debug accesses).
    void reach_memory_through(tlm::tlm_initiator_socket<>& socket);

private:
    void bind_chain();
    sc_core::sc_time wait_for(dut& d, const matmul_job& job, const job_options& opt);

    std::unique_ptr<memory_access> m_mem;
    scoreboard m_scoreboard;
    // The reference for a job, on its own thread beside the simulation: it shares nothing with the
    // model, and the scoreboard compares the recorded writes with it at the end. The thread that
    // checks the job takes a share of what is left of it when it gets there (help), rather than wait.
    struct reference_future {
        std::shared_future<std::vector<std::uint8_t>> bytes;
        std::function<void()> help;
    };
    static reference_future start_reference(std::shared_ptr<const problem<Format>> pr, const matmul_job& job,
                                            const systolic::expected_counts& counts);
    void begin_watch(const matmul_job& job, std::shared_ptr<const problem<Format>> pr,
                     const systolic::expected_counts& counts, std::vector<memory_snapshot> windows,
                     reference_future reference);

    // The job being checked, between begin_watch() and end_watch().
    struct watch {
        job_check<Format> out;
        std::shared_ptr<const problem<Format>> operands;
        reference_future reference;
        std::vector<memory_snapshot> windows;
    } m_watch;
    bool m_busy = false;
    std::vector<std::string> m_violations;  // from the protocol checker, during the current job
    std::uint64_t m_writes = 0;             // write transactions seen by the monitor
};

#define SYSTOLIC_ENVIRONMENT_EXTERN(F)                                                                    \
    extern template std::vector<std::uint8_t> expected_c_bytes<F>(const problem<F>&, const job_options&); \
    extern template struct job_check<F>;                                                                  \
    extern template class environment<F>;
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_ENVIRONMENT_EXTERN)
#undef SYSTOLIC_ENVIRONMENT_EXTERN

}  // namespace systolic::verify
