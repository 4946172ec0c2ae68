#include "accelerator_pricing.h"

#include <memory>
#include <optional>
#include <utility>

#include "systolic/energy/error.h"
#include "systolic/number_format.h"

namespace systolic::components {

energy::energy_table load_accelerator_table(const std::string& name_or_path, double tech_node) {
    energy::energy_table table = energy::load_table(name_or_path);
    std::optional<energy::energy_error> first;
    bool any = false;
    for (const auto& d : dtype_names) {
        try {
            energy::check_table(table, tech_node, d.value);
            any = true;
        } catch (const energy::energy_error& e) {
            if (!first) first = e;
        }
    }
    if (!any) throw *first;
    return table;
}

pricing accelerator_pricing(energy::energy_table table, double tech_node) {
    // Shared, so that copies of the accelerator's configuration share one table.
    auto t = std::make_shared<const energy::energy_table>(std::move(table));
    return [t, tech_node](const matmul_job& job, const action_counts& counts) {
        const energy::scratchpad_sizes sizes =
            energy::scratchpads_of(job.run.memory, job.shape, counts.operand_bits / 8,
                                   output_size(job.run.quant, counts.accumulator_bits / 8));
        return energy::price(counts, *t, tech_node, sizes).total_pj;
    };
}

}  // namespace systolic::components
