// The counters of one job as every JSON report names them: systolic-tb's --json, systolic-run's job
// records and reports, systolic-vp's --json. Plain values, so that each executable fills them from
// what it has (a job's result, a record read back, the accelerator's registers) and the keys are
// written in one place; each report adds its own keys beside them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace systolic::io {

// What the scoreboard found, as far as every report that has one tells it.
struct scoreboard_counts {
    std::uint64_t checked = 0, mismatches = 0;
    std::vector<std::string> errors;
};

struct job_counters {
    std::uint64_t m = 0, k = 0, p = 0;
    std::uint64_t advance_edges = 0, macs_padded = 0, macs_real = 0;
    // Left out of the JSON where a report does not have them.
    std::optional<std::uint64_t> tiles, real_outputs, masked_outputs;
    std::optional<scoreboard_counts> scoreboard;
};

// {"m", "k", "p", "advance_edges", "macs_padded", "macs_real"} and those of "tiles",
// "real_outputs", "masked_outputs" and "scoreboard": {"checked", "mismatches", "errors"} it has.
nlohmann::json job_json(const job_counters& c);

}  // namespace systolic::io
