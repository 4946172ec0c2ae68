#include "checked_report.h"

#include <optional>

#include "io/job_json.h"
#include "systolic/verify/passive_checker.h"

namespace systolic::components {

nlohmann::json checked_jobs_json(const checked_accelerator& accel, bool energy) {
    nlohmann::json jobs = nlohmann::json::array();
    for (const auto& j : accel.checks().jobs()) {
        std::optional<io::scoreboard_counts> sb;
        if (j.scoreboard) sb = io::scoreboard_counts_of(*j.scoreboard);
        nlohmann::json job = io::job_json(
            {j.shape.m, j.shape.k, j.shape.p, j.advance_edges, j.macs_padded, j.macs_real, {}, {}, {}, sb});
        job.update({{"index", j.index},
                    {"job", j.job},
                    {"dtype", j.scoreboard ? nlohmann::json(to_string(j.format)) : nlohmann::json()},
                    {"outcome", to_string(j.what)},
                    {"pass", j.pass},
                    {"error", j.error},
                    {"errors", j.errors}});
        if (energy && j.scoreboard) job["energy_pj"] = j.energy_pj;
        jobs.push_back(job);
    }
    return jobs;
}

nlohmann::json checked_run_json(const checked_accelerator& accel, std::size_t array, int status,
                                std::size_t violations, bool energy) {
    return {{"array", array},
            {"exit_status", status},
            {"pass", status == 0},
            {"failures", accel.failures().size()},
            {"protocol_violations", violations},
            {"jobs", checked_jobs_json(accel, energy)}};
}

void print_check_lines(std::ostream& out, const checked_accelerator& accel,
                       const std::vector<std::string>& violations) {
    for (const auto& e : accel.accelerator_errors())
        out << "accelerator: " << e << "\n";
    for (const auto& f : accel.failures())
        out << "check failed: " << f << "\n";
    for (const auto& v : violations)
        out << "protocol violation: " << v << "\n";
}

}  // namespace systolic::components
