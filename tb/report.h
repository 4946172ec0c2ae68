// The JSON report of one systolic-tb run (keys documented in docs/report-json.md).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/memory_system.h"
#include "systolic/verify/fabric_outcome.h"
#include "systolic/verify/scoreboard.h"

namespace systolic::tb {

struct report_input {
    std::uint64_t rows = 0, cols = 0;  // the array: R rows of C PEs
    const matmul_job* job = nullptr;
    std::string dtype;
    std::string accumulator_dtype;
    std::string inject;  // the planted fault, "none" normally
    const job_result* result = nullptr;
    const verify::scoreboard_summary* scoreboard = nullptr;
    std::uint64_t differs_from_quantize_once = 0;
    const verify::fabric_outcome* fabric = nullptr;  // null: one array
};

nlohmann::json make_report(const report_input& in);

// The report's "memory" object: the configuration (null for a size or bandwidth without limit)
// and what the memory system counted (docs/report-json.md).
nlohmann::json memory_json(const memory_config& config, const memory_report& report);

// The summary's memory lines (buffers and bandwidth, stalls, bytes per stream, bandwidths,
// streamed tiles), each ending in a newline.
std::string memory_summary(const memory_config& config, const memory_report& report);

}  // namespace systolic::tb
