// One systolic-tb job from its options: every check, the operands, the testbench, the observers
// (waveform, timeline, progress bar), the run, the summary, the JSON report and the output files.
// systolic-tb runs one job per process; the Python module (python/) runs many, each on the
// testbench it keeps for the job's configuration, and takes C and the report back as values.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli_options.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/testbench.h"

namespace systolic::tb {

inline constexpr int exit_pass = 0;   // the scoreboard passed the job
inline constexpr int exit_fail = 1;   // a failed check (a planted fault that was caught included)
inline constexpr int exit_usage = 2;  // bad usage or bad input (usage_error)

// The testbench a job runs on, given the configuration its options ask for: systolic-tb builds
// one, the Python module hands back the one it built for that configuration.
template <class Format>
using bench_source =
    std::function<verify::testbench<Format>&(const typename verify::testbench<Format>::config&)>;

// The configuration of the testbench the options ask for (after check_options).
template <class Format>
typename verify::testbench<Format>::config bench_config(const options& o);

// The options that need no data: the array's size and every combination refused with usage_error.
void check_options(const options& o);

// Before a caller copies its operands in: check_options, the dimensions --m, --k and --p give,
// and the memory the job will need (usage_error over --max-memory), as run_job checks them. So a
// job that cannot run is refused before its operands are copied anywhere.
void check_job_plan(const options& o);

// What a caller other than the command line takes back, instead of the summary on stdout.
struct job_reply {
    std::vector<std::uint8_t> c;  // C as it was read back from memory (M x P), empty if the job failed
    std::string c_descr;          // its numpy dtype: the accumulators' or "|i1" (int8 output)
    std::uint64_t m = 0, p = 0;
    std::string summary;  // what systolic-tb prints
    std::string report;   // the JSON report (docs/report-json.md)
    bool pass = false;
    // In: a flag the caller sets (from a signal handler: the Python module's) to stop the job. It is
    // read at each plan step, never per edge; once it is nonzero the job ends at its next step, no
    // output is written (every temporary is removed) and run_job throws job_stopped.
    const std::atomic<int>* stop = nullptr;
};

// A job stopped by job_reply::stop; `signal` is the flag's value (the signal that stopped it).
struct job_stopped : std::runtime_error {
    explicit job_stopped(int sig) : std::runtime_error("the job was stopped"), signal(sig) {}
    int signal;
};

// Runs the job the options describe, on `operands` when given (a caller's arrays; the options'
// --m/--k/--p must then match their shape) or on what the options say (--a/--b, random data, the
// seeds' example). Writes the output files the options ask for, all or none; without `reply`, the
// summary (or the report, with --json -) goes to stdout. Returns exit_pass or exit_fail; bad usage
// or input throws usage_error (or io::npy_error, out_of_memory) before anything runs.
template <class Format>
int run_job(const options& o, const bench_source<Format>& bench,
            const verify::problem<Format>* operands = nullptr, job_reply* reply = nullptr);

}  // namespace systolic::tb
