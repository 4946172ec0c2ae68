// The accelerator's ENERGY pricing (accelerator::config::price; docs/energy.md, "The ENERGY
// registers") from an energy table, for every platform that takes --energy TABLE [--tech-node NM]:
// the model does not depend on systolic::energy, so the platforms build the function here.
#pragma once

#include <functional>
#include <string>

#include "systolic/action_counts.h"
#include "systolic/energy/price.h"
#include "systolic/energy/table.h"
#include "systolic/job.h"

namespace systolic::components {

using pricing = std::function<double(const matmul_job&, const action_counts&)>;

// --energy's table, read and tried before the simulation starts on the node and on every number
// format the accelerator runs: a file that is no table, a node outside the scaling's fit, or a
// table that prices none of the formats is energy_error (one line; the front end exits 2). A format
// the table does not price (accelergy45 prices int8 only) leaves its jobs' ENERGY at 0, with a
// warning in the accelerator's log.
energy::energy_table load_accelerator_table(const std::string& name_or_path, double tech_node);

// total_pj of energy::price(counts, table, tech_node, energy::scratchpads_of(...)) for the job.
pricing accelerator_pricing(energy::energy_table table, double tech_node);

}  // namespace systolic::components
