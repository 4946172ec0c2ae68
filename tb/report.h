// The JSON report of one systolic-tb run (keys documented in docs/report-json.md).
#pragma once

#include <array>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "scoreboard.h"
#include "systolic/counting.h"
#include "systolic/job.h"

namespace systolic::tb {

// What one job on a fabric of arrays did at the fabric's level (docs/fabric.md).
struct fabric_outcome {
    std::size_t rows = 1, cols = 1, depth = 1;  // arrays
    std::size_t n = 1;                          // each N x N
    std::uint64_t link_latency = 1;
    unsigned threads = 1;
    std::uint64_t passes = 0;
    struct link {
        std::string kind;  // "a", "b" or "c"
        std::array<std::size_t, 3> from{}, to{};
        std::uint64_t words = 0, padding_words = 0;
    };
    std::vector<link> links;
    memory_traffic single_array;  // the same job on one N x N array: A and B read again for every tile

    // Real (or padding) words over the links of one kind.
    std::uint64_t halo_words(const std::string& kind, bool padding = false) const;
};

// What one N x N array moves for the job that `traffic` (a run on a fabric) moved: C and the partial
// sums are the same; A is read once per column of tiles, B once per row of tiles.
memory_traffic single_array_traffic(const matmul_job& job, std::uint64_t n, std::uint64_t operand_bytes,
                                    const memory_traffic& traffic);

struct report_input {
    std::uint64_t rows = 0, cols = 0;  // the array: R rows of C PEs
    const matmul_job* job = nullptr;
    std::string dtype;
    std::string accumulator_dtype;
    std::string inject;  // the planted fault, "none" normally
    const job_result* result = nullptr;
    const scoreboard_summary* scoreboard = nullptr;
    std::uint64_t differs_from_quantize_once = 0;
    const fabric_outcome* fabric = nullptr;  // null: one array
};

nlohmann::json make_report(const report_input& in);

}  // namespace systolic::tb
