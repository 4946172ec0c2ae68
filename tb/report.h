// The JSON report of one systolic-tb run (keys documented in the README).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "scoreboard.h"
#include "systolic/counting.h"
#include "systolic/job.h"

namespace systolic::tb {

struct report_input {
    std::uint64_t rows = 0, cols = 0;  // the array: R rows of C PEs
    const matmul_job* job = nullptr;
    std::string dtype;
    std::string accumulator_dtype;
    std::string inject;  // the planted fault, "none" normally
    const job_result* result = nullptr;
    const scoreboard_summary* scoreboard = nullptr;
    std::uint64_t differs_from_quantize_once = 0;
};

nlohmann::json make_report(const report_input& in);

// Writes text to path through a temporary file and a rename, so a reader never sees a partial
// file. Throws std::runtime_error with a one-line message that starts with the path.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace systolic::tb
