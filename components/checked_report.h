// The --json report's jobs, for every platform with a checked accelerator (systolic-soc,
// systolic-qemu): each START the passive checker saw, with the counters every report shares
// (io/job_json.h), zeros and no scoreboard for a job that did not run, and with `energy` the
// ENERGY register's value of each job that ran.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>
#include <vector>

#include "checked_accelerator.h"

namespace systolic::components {

nlohmann::json checked_jobs_json(const checked_accelerator& accel, bool energy);

// The whole --json report of a platform run: the array, the exit status and verdict, the failed
// checks and protocol violations (`violations`: the platform's buses and the DMA path), the jobs.
nlohmann::json checked_run_json(const checked_accelerator& accel, std::size_t array, int status,
                                std::size_t violations, bool energy);

// What the checks found, a line each, before a platform's summary line: the accelerator's refusals
// and ERR_DMA with their reasons (software sees only a code in ERROR; they are no failures when the
// checker found them right), the failed checks, the broken TLM-2.0 rules (`violations`: the
// platform's buses and the accelerator's DMA).
void print_check_lines(std::ostream& out, const checked_accelerator& accel,
                       const std::vector<std::string>& violations);

}  // namespace systolic::components
