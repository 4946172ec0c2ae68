// Pricing a job's counts (action_counts.h) with a table (table.h): energy = the sum over every
// counted action of its count x the table's entry, scaled to the asked technology node, and area =
// rows x cols MAC units + the PEs' register bits + the scratchpads' KiB. docs/energy.md, "Pricing".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "systolic/action_counts.h"
#include "systolic/counting.h"
#include "systolic/energy/table.h"
#include "systolic/memory_system.h"
#include "systolic/names.h"
#include "systolic/number_format.h"

namespace systolic::energy {

// The components a report splits energy and area into, in report order.
enum class component { pe, registers, a_sram, b_sram, c_sram, dram, links };
inline constexpr enum_name<component> component_names[] = {
    {component::pe, "pe", "the PEs' MAC units: one action per PE-edge"},
    {component::registers, "registers", "the PEs' operand registers and accumulators: bit toggles"},
    {component::a_sram, "a_sram", "scratchpad A: bits read and written"},
    {component::b_sram, "b_sram", "scratchpad B: bits read and written"},
    {component::c_sram, "c_sram", "scratchpad C: bits read and written"},
    {component::dram, "dram", "DRAM behind the DMA port: bits read and written, per stream"},
    {component::links, "links", "a fabric's words from one array to the next"},
};
static_assert(names_in_order(component_names));
constexpr const char* to_string(component c) {
    return name_of(component_names, c);
}

// The scratchpads' sizes (the memory system's configuration; 0: no scratchpad). They choose the
// SRAM entry that prices each buffer and give its area.
struct scratchpad_sizes {
    std::uint64_t a_bytes = 0, b_bytes = 0, c_bytes = 0;
};

// The sizes a job's scratchpads are priced with, for every front end: as the memory configuration
// gives them, and an unlimited one (0 with double buffering) as large as the whole operand it
// holds; none without scratchpads. output_bytes: a word of C as the job writes it (int8 when
// requantized).
scratchpad_sizes scratchpads_of(const memory_config& memory, const problem_shape& shape,
                                std::uint64_t operand_bytes, std::uint64_t output_bytes);

struct priced_action {
    std::string name;         // as action_counts.h names the count (mac_random, a_toggles, read_bytes, ...)
    std::uint64_t count = 0;  // in the unit action_counts.h counts it
    double pj_each = 0;       // per counted unit, at the asked node
    double pj = 0;            // count x pj_each
    bool priced = true;       // false: the table gives no value for it (pj is then 0)
};

struct component_energy {
    component which{};
    std::vector<priced_action> actions;
    double pj = 0;
};

struct component_area {
    component which{};
    double um2_each = 0;  // per unit: one MAC unit, one register bit, one KiB
    double units = 0;     // MAC units, register bits, KiB
    double mm2 = 0;
    bool priced = true;
};

struct energy_report {
    std::string table;
    double node_nm = 0;       // the node priced at (the table's own when not scaled; 0: none)
    double energy_scale = 1;  // the factor applied to the table's energies
    double area_scale = 1;
    scratchpad_sizes scratchpads;          // the sizes the scratchpads were priced at
    std::vector<component_energy> energy;  // every component, in component_names order
    double total_pj = 0;
    // The job's real MACs (action_counts::macs_real: M x K x P, no padding), as the reports and
    // Timeloop count them; pj_per_mac = total_pj / that, 0 when none.
    std::uint64_t macs = 0;
    double pj_per_mac = 0;
    std::vector<component_area> area;  // pe, registers and the three scratchpads
    double total_mm2 = 0;
    std::vector<std::string> unpriced;  // "component.action" counted but not priced by the table
};

// The format the counts are of, by its operand and accumulator widths (number_format.h's types):
// its dtype name, or energy_error if no format has those widths.
std::string format_name(unsigned operand_bits, unsigned accumulator_bits);

// tech_node: nm to scale to; 0 prices at the table's own node. energy_error if the table cannot
// price the counts' format, the node is outside the fit, or a scratchpad with accesses has no size.
energy_report price(const action_counts& counts, const energy_table& table, double tech_node,
                    const scratchpad_sizes& sizes = {});

// Whether `table` prices a job of format `d` at `tech_node` (0: the table's own node), for a front
// end to try before anything runs: energy_error (one line) if it prices no such MAC or the node is
// outside the scaling's fit.
void check_table(const energy_table& table, double tech_node, dtype d);

// The report as the JSON reports hold it: {"energy": {...}, "area": {...}} (docs/energy.md).
nlohmann::json to_json(const energy_report& r);

// The summary's lines (each ending in a newline): the total, pJ per MAC and each component's share;
// the area by component; what the table did not price, if anything.
//   energy (horowitz45, 45 nm): 1.23 uJ, 0.456 pJ per MAC; pe 812 nJ (66%), registers ...
//   area: 1.07 mm2 (pe 0.98, registers 0.09, a_sram 0, b_sram 0, c_sram 0)
std::string summary(const energy_report& r);

// An energy as text at three significant digits in pJ, nJ, uJ, mJ or J ("812 nJ").
std::string energy_text(double pj);

}  // namespace systolic::energy
