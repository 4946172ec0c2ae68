// The energy account's options (docs/energy.md): --energy TABLE, --tech-node NM and, where an
// executable runs one job, --action-counts FILE, each declared here once with one help text, so that
// they mean the same thing in systolic-tb and systolic-run. Plain C++ over CLI11 (no SystemC), as
// the other groups; the front ends read the table itself (systolic::energy) before anything runs.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "option_rules.h"

namespace CLI {
class App;
}

namespace systolic::cli {

struct energy_options {
    // --energy: a shipped table's name (horowitz45, accelergy45, tpu7), a table file (.json) or an
    // Accelergy ERT (.yaml).
    std::optional<std::string> table;
    double tech_node = 0;  // --tech-node NM; 0: the table's own node
    // --action-counts FILE: the job's counts as Accelergy's action_counts.yaml.
    std::optional<std::string> action_counts;
    // Whether the job must count its PEs' actions and toggles (run_options::count_actions).
    bool counting() const { return table || action_counts; }
};

// The values as typed, converted once CLI11 has matched them.
struct energy_option_text {
    std::string tech_node;
};

// Which of the group an executable has: --action-counts only where one job's counts are written.
struct energy_group {
    bool action_counts = false;
};

// Adds the group to `app`: --energy and --action-counts straight into e, --tech-node as text.
void add_energy_options(CLI::App& app, energy_options& e, energy_option_text& text, energy_group group = {});
// --tech-node into e.tech_node, and the names checked; a bad value is a usage_error quoting it.
void convert_energy_options(const energy_option_text& text, energy_options& e);

// The group's rules (option_rules.h), for an executable's table: --tech-node needs --energy.
// `Energy` reads the options' energy_options.
template <class Options, const energy_options& (*Energy)(const Options&)>
std::vector<option_rule<Options>> energy_option_rules() {
    return {
        {"--tech-node", "--energy", "it scales that table's energies and areas to another node",
         [](const Options& o) { return bool(Energy(o).table); }},
    };
}

}  // namespace systolic::cli
