#include "energy_options.h"

#include <cmath>

#include "cli_values.h"

namespace systolic::cli {

void convert_energy_options(const energy_option_text& text, energy_options& e) {
    if (e.table && e.table->empty()) throw usage_error("--energy needs a table name or file, got ''");
    if (e.action_counts && e.action_counts->empty())
        throw usage_error("--action-counts needs a file name, got ''");
    if (text.tech_node.empty()) return;
    const double nm = parse_real("--tech-node", text.tech_node);
    // The node scaling's own range (systolic/energy/node_scaling.h) is checked with the table; here
    // only what no table could take.
    if (!(nm > 0) || !std::isfinite(nm))
        throw usage_error("--tech-node " + quoted(text.tech_node) + " must be a positive number of nm");
    e.tech_node = nm;
}

}  // namespace systolic::cli
