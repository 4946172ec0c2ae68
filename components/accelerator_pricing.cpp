#include "accelerator_pricing.h"

#include <memory>
#include <optional>
#include <utility>

#include "systolic/energy/error.h"
#include "systolic/number_format.h"

namespace systolic::components {

energy::energy_table load_accelerator_table(const std::string& name_or_path, double tech_node) {
    energy::energy_table table = energy::load_table(name_or_path);
    // Nothing counted yet, so that only the table, the node and the format are tried.
    std::optional<energy::energy_error> first;
    bool any = false;
    for_each_format([&](auto format) {
        using F = decltype(format);
        action_counts none;
        none.operand_bits = 8 * sizeof(typename F::operand_type);
        none.accumulator_bits = 8 * sizeof(typename F::accumulator_type);
        try {
            energy::price(none, table, tech_node);
            any = true;
        } catch (const energy::energy_error& e) {
            if (!first) first = e;
        }
    });
    if (!any) throw *first;
    return table;
}

energy::scratchpad_sizes scratchpads_of(const matmul_job& job, const action_counts& counts) {
    const memory_config& m = job.run.memory;
    if (m.buffers != buffer_mode::double_buffered) return {};
    const problem_shape& s = job.shape;
    const std::uint64_t osz = counts.operand_bits / 8;
    const std::uint64_t csz = output_size(job.run.quant, counts.accumulator_bits / 8);
    return {m.a_sram ? m.a_sram : s.m * s.k * osz, m.b_sram ? m.b_sram : s.k * s.p * osz,
            m.c_sram ? m.c_sram : s.m * s.p * csz};
}

pricing accelerator_pricing(energy::energy_table table, double tech_node) {
    // Shared, so that copies of the accelerator's configuration share one table.
    auto t = std::make_shared<const energy::energy_table>(std::move(table));
    return [t, tech_node](const matmul_job& job, const action_counts& counts) {
        return energy::price(counts, *t, tech_node, scratchpads_of(job, counts)).total_pj;
    };
}

}  // namespace systolic::components
