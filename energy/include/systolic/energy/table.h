// An energy and area table (docs/energy.md, "Tables"): what one action, one toggled bit, one
// accessed bit or one KiB costs at one technology node, each value with its source. The shipped
// tables are JSON files under share/systolic/energy/ (one schema, documented in docs/energy.md);
// an Accelergy ERT.yaml is read into the same struct (accelergy.h). price.h prices counts with it.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace systolic::energy {

// One value and where it comes from. A value the source does not give has no number: what it would
// price is reported as unpriced (price.h), never filled in with a guess.
struct table_value {
    std::optional<double> value;
    // The width the value is for: value / bits is the cost of one bit (a 64-bit SRAM access, a
    // 32-bit DRAM read); 0: per action, or per bit where a bit is what is counted (toggles).
    unsigned bits = 0;
    // Read from an ERT, which gives no widths: the value is one access of one word of what is
    // counted (an operand word in A and B, an accumulator word in C; a register's width).
    bool per_word = false;
    std::string unit;
    std::string status;  // quoted, table, tool_output, reference_output, derived, substitute, ...
    std::vector<std::string> sources;  // ids into energy_table::sources
    std::string note;

    bool given() const { return value.has_value(); }
};

// What one PE-edge costs, by its action (action_counts.h's pe_action), in pJ.
struct pe_energies {
    table_value mac_random, mac_gated, idle, preload;
};

// One SRAM size's access energies; price.h takes the smallest size that holds a scratchpad.
struct sram_energies {
    std::uint64_t capacity_bytes = 0;
    table_value read, write;
};

struct energy_table {
    std::string name;
    std::string origin;  // the file it was read from
    std::string description;
    table_value node_nm;  // none (an ERT): priced as given, never scaled
    table_value vdd_v;    // the supply voltage node scaling compares at
    // By format name (number_format.h's dtype names), or "*" (an ERT: whatever the job's format).
    std::map<std::string, pe_energies> pe;
    table_value register_toggle_bit;  // pJ per toggled bit of a PE register
    std::vector<sram_energies> sram;  // ascending capacity
    table_value dram_read, dram_write;
    table_value link_word;
    // Area in um^2: per MAC unit by format (multiplier and accumulator adder), per register bit
    // and per KiB of scratchpad.
    std::map<std::string, table_value> mac_area;
    table_value register_bit_area;
    table_value sram_kib_area;
    std::map<std::string, std::string> sources;  // id -> the reference, as one line
};

// The table in one JSON document of the schema in docs/energy.md; origin names it in errors.
// Every value must name at least one source, and every source it names must be in "sources".
energy_table parse_table(const nlohmann::json& doc, const std::string& origin);

// A shipped table's name (horowitz45, accelergy45, tpu7), a table file (.json) or an Accelergy
// ERT (.yaml, .yml): whatever a front end's --energy accepts.
energy_table load_table(const std::string& name_or_path);

// Where shipped tables are looked for, in order: share/systolic/energy beside the executable's
// prefix (an installed, possibly moved tree), the source tree's energy/tables (the build tree),
// and the configured install prefix.
std::vector<std::string> table_dirs();
// The shipped tables' names, from the first of table_dirs() that holds any.
std::vector<std::string> shipped_tables();
// The path of a shipped table; energy_error naming the places looked in if there is none.
std::string find_table(const std::string& name);

}  // namespace systolic::energy
