// Accelergy's formats in and out (docs/energy.md, "Accelergy"). In: an ERT.yaml (the energy
// reference table Accelergy writes; v0.2's dictionary form and v0.3/v0.4's list form) read into an
// energy_table through one table of names, ert_names. Out: a job's counts as Accelergy's
// action_counts.yaml, so that Accelergy prices them with its own tables.
#pragma once

#include <iosfwd>
#include <string>

#include "systolic/action_counts.h"
#include "systolic/energy/table.h"

namespace systolic::energy {

// How an ERT's actions price ours: our action, the ERT component that gives it (its last path
// element, without an instance range, ends with one of `component`'s '|'-separated names, ignoring
// case: "mac" finds system.PE[0..255].mac, "glb" finds shared_glb, "reg" weight_reg), and its
// action. An action listed with arguments (address_delta, data_delta) is priced at the mean of its
// entries, as Accelergy's ERT_summary gives average_energy. Energies of storage and links are per
// access of one word of what is counted; a register's access, divided by the register's width,
// prices one toggled bit. The first component that matches is taken.
struct ert_name {
    const char* ours;       // our action, as table.h and the report name it
    const char* component;  // the ends of the ERT component's name it may have, '|'-separated
    const char* action;     // the ERT action
    const char* fallback;   // another ERT action that gives it (v0.4: leak for idle), or nullptr
    bool required;          // a file without it is refused
};
inline constexpr ert_name ert_names[] = {
    {"pe.mac_random", "mac", "mac_random", "compute", true},
    {"pe.mac_gated", "mac", "mac_gated", "compute", true},
    {"pe.idle", "mac", "idle", "leak", true},
    {"register.toggle_bit", "reg", "access", "read", false},
    {"sram.read", "glb|sram", "read", nullptr, true},
    {"sram.write", "glb|sram", "write", nullptr, true},
    {"dram.read", "dram", "read", nullptr, true},
    {"dram.write", "dram", "write", nullptr, true},
    {"link.word", "link", "transfer_random", nullptr, false},
};

// The ERT at path as a table named after the file; energy_error (one line naming the file and
// what is missing or wrong) for a file that is not YAML, has no ERT tables, or lacks a required
// action.
energy_table read_ert(const std::string& path);

// The counts as an action_counts.yaml (version 0.3, one flat list of components named
// <top>.PE[0].mac, <top>.PE[0].reg, <top>.a_sram, <top>.b_sram, <top>.c_sram, <top>.DRAM and
// <top>.link): the array's counts summed into one instance, which prices the same since energy is
// linear in counts. Preload edges are MAC idle cycles (Accelergy's MAC has no preload action);
// register toggles are reg's `toggle` action in bits, with argument `register`; storage and DRAM
// are counted in words (operand words for A and B, accumulator words for C).
void write_action_counts(const action_counts& counts, std::ostream& out, const std::string& top = "systolic");
// The same as text, for a front end's output_set (io/output_set.h), which writes every output.
std::string action_counts_yaml(const action_counts& counts, const std::string& top = "systolic");

}  // namespace systolic::energy
