// systolic-run's command line as plain C++: the options, the array and dataflow lists of a sweep,
// and the job lines --emit-jobs prints. No SystemC processes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "energy_options.h"
#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/job_names.h"
#include "systolic/number_format.h"
#include "systolic/verify/fault_names.h"

namespace systolic::run {

struct run_cli {
    std::string topology;
    std::string array = "32";           // --array: "N", "RxC" or a comma list of them
    std::optional<std::string> sweep;   // --sweep FILE: the same, one or more per line, # comments
    std::optional<std::string> config;  // --config FILE: a SCALE-Sim .cfg (the array, dataflow and memory)
    std::vector<dataflow_kind> dataflows = {dataflow_kind::os};  // --dataflow: one or a comma list
    systolic::dtype dtype = systolic::dtype::int8;
    // How every job runs, as far as the command line says (--engine): copied whole into each job,
    // which adds its dataflow and --config's memory.
    run_options run;
    std::uint64_t seed = 1;
    std::optional<std::string> data;    // --data DIR
    std::optional<std::string> expect;  // --expect DIR: <layer>.c.npy to compare each layer's C with
    std::optional<std::string> out;     // --out DIR
    std::uint64_t jobs = 1;
    bool emit_jobs = false;
    std::optional<std::string> merge;    // --merge DIR
    std::optional<std::string> job;      // --job RxC:DF:ID (with --job-out): run one (array, dataflow, layer)
    std::optional<std::string> job_out;  // --job-out FILE
    std::optional<std::uint64_t> max_memory;
    std::string log_level = "warn";
    bool no_progress = false;
    verify::fault inject = verify::fault::none;  // a known defect planted in every layer (testbench use)
    // --energy and --tech-node (no --action-counts: a run has many jobs); --energy sets
    // run.count_actions, and each layer's counts are priced (ENERGY_REPORT.csv, docs/energy.md).
    cli::energy_options energy;
};

struct cli_outcome {
    bool run = true;
    int exit_status = 0;
    std::string out, err;
};

// Parses and checks the combinations; an error is one line in err with exit status 2.
cli_outcome parse_run_command_line(int argc, const char* const* argv, run_cli& o);

// Largest array side accepted.
constexpr std::uint64_t max_array = 1024;

// "32,64,128", "64x64,128x128" or "32,12x14": the arrays (N is N x N; RxC is R rows of C PEs), in
// the order given, each side in [1, max_array]. `what` names the source in messages.
std::vector<array_shape> parse_array_list(const std::string& text, const std::string& what);
// A sweep file: array sizes separated by commas, spaces or lines; '#' starts a comment.
std::vector<array_shape> read_sweep_file(const std::string& path);

// "os,ws,is": the dataflows, in the order given, each once (names from dataflow_kind_names).
std::vector<dataflow_kind> parse_dataflow_list(const std::string& text, const std::string& what);

std::string array_name(const array_shape& a);  // "RxC"

// One job of a run: a layer on an array in a dataflow.
struct job_ref {
    array_shape array;
    std::optional<dataflow_kind> dataflow;  // not given: the run's only dataflow
    std::uint64_t layer = 0;
};
// A job's ID, "RxC:DF:ID" (e.g. "32x32:ws:3"), as --emit-jobs writes it and --job reads it.
std::string job_id(const array_shape& a, dataflow_kind df, std::uint64_t layer_id);
// "RxC:DF:ID", or "RxC:ID" (also "N:...") for a run of one dataflow.
job_ref parse_job(const std::string& text);

// A word for /bin/sh: unchanged when it is plain, else single-quoted.
std::string shell_quote(const std::string& word);
// The file a job writes in a job directory: job-RxC-DF-LLLL.json.
std::string job_file_name(const array_shape& a, dataflow_kind df, std::uint64_t layer_id);

}  // namespace systolic::run
