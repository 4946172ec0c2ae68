// SCALE-Sim configuration files (.cfg), read as SCALE-Sim's scale_config.py reads them through
// Python's configparser: [sections], "key: value" or "key = value" lines, keys in any case, whole
// lines of # or ; comments. Every key SCALE-Sim v2 or v3 defines is known: the ones that describe the
// array, its dataflow and its memory are used, the ones that change nothing here are accepted
// (their table entry says why), the ones that would ask for a model we do not have must keep the
// value that asks for none. Anything else, and any bad value, is a config_error: one line naming
// the file, the line and the key. Plain C++.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "systolic/counting.h"
#include "systolic/job_names.h"
#include "systolic/memory_system.h"
#include "systolic/names.h"

namespace systolic::run {

struct config_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// InterfaceBandwidth: how SCALE-Sim treats the DRAM side.
enum class interface_bandwidth { calc, user };
inline constexpr enum_name<interface_bandwidth> interface_bandwidth_names[] = {
    {interface_bandwidth::calc, "CALC",
     "no bandwidth limit: the reports give the DRAM bandwidth each layer needs for no stalls"},
    {interface_bandwidth::user, "USER", "the DRAM channel moves Bandwidth words per cycle"},
};
static_assert(names_in_order(interface_bandwidth_names));
constexpr const char* to_string(interface_bandwidth mode) {
    return name_of(interface_bandwidth_names, mode);
}

// What a key does here.
enum class key_use {
    array_height,
    array_width,
    ifmap_sram,
    filter_sram,
    ofmap_sram,
    bandwidth,
    dataflow,
    interface_bandwidth,
    ignored,  // accepted, changes nothing here
    must_be,  // accepted only with the value that asks for no model we lack
};

struct config_key {
    const char* section;
    const char* key;  // as SCALE-Sim's shipped configs spell it; matched in any case
    key_use use;
    const char* value;  // must_be: the one value accepted (in any case)
    const char* why;    // for the docs: what it means here
};

// Every key of SCALE-Sim v2's and v3's configuration files (scale_config.py), declared once: the
// reader, its messages and docs/scale-sim.md's table come from it.
inline constexpr config_key scale_config_keys[] = {
    {"general", "run_name", key_use::ignored, "", "the report directory is --out"},
    {"architecture_presets", "ArrayHeight", key_use::array_height, "", "R: the array's rows"},
    {"architecture_presets", "ArrayWidth", key_use::array_width, "", "C: the array's columns"},
    {"architecture_presets", "IfmapSramSzkB", key_use::ifmap_sram, "", "A's scratchpad, kB (1024 bytes)"},
    {"architecture_presets", "FilterSramSzkB", key_use::filter_sram, "", "B's scratchpad, kB"},
    {"architecture_presets", "OfmapSramSzkB", key_use::ofmap_sram, "", "C's scratchpad, kB"},
    {"architecture_presets", "IfmapOffset", key_use::ignored, "", "the testbench places the matrices"},
    {"architecture_presets", "FilterOffset", key_use::ignored, "", "the testbench places the matrices"},
    {"architecture_presets", "OfmapOffset", key_use::ignored, "", "the testbench places the matrices"},
    {"architecture_presets", "Bandwidth", key_use::bandwidth, "",
     "DRAM words per cycle with USER (one value; a word is an operand)"},
    {"architecture_presets", "Dataflow", key_use::dataflow, "",
     "os, ws or is: what stays in the PEs, as --dataflow (docs/dataflows.md)"},
    {"architecture_presets", "MemoryBanks", key_use::must_be, "1", "one DRAM channel"},
    {"architecture_presets", "ReadRequestBuffer", key_use::ignored, "", "v3's Ramulator request queue"},
    {"architecture_presets", "WriteRequestBuffer", key_use::ignored, "", "v3's Ramulator request queue"},
    {"network_presets", "TopologyCsvLoc", key_use::ignored, "", "the topology is --topology"},
    {"run_presets", "InterfaceBandwidth", key_use::interface_bandwidth, "", "CALC or USER"},
    {"run_presets", "UseRamulatorTrace", key_use::must_be, "False", "no Ramulator DRAM model"},
    {"layout", "IfmapCustomLayout", key_use::must_be, "False", "no banked SRAM layout model"},
    {"layout", "FilterCustomLayout", key_use::must_be, "False", "no banked SRAM layout model"},
    {"layout", "IfmapSRAMBankBandwidth", key_use::ignored, "",
     "v3 with USER: the IFMAP port's words per cycle; ours is one channel of Bandwidth"},
    {"layout", "IfmapSRAMBankNum", key_use::ignored, "", "used only by custom layouts"},
    {"layout", "IfmapSRAMBankPort", key_use::ignored, "", "used only by custom layouts"},
    {"layout", "FilterSRAMBankBandwidth", key_use::ignored, "",
     "v3 with USER: the FILTER port's words per cycle; ours is one channel of Bandwidth"},
    {"layout", "FilterSRAMBankNum", key_use::ignored, "", "used only by custom layouts"},
    {"layout", "FilterSRAMBankPort", key_use::ignored, "", "used only by custom layouts"},
    {"sparsity", "SparsitySupport", key_use::must_be, "false", "dense operands"},
    {"sparsity", "SparseRep", key_use::ignored, "", "used only with sparsity"},
    {"sparsity", "OptimizedMapping", key_use::ignored, "", "used only with sparsity"},
    {"sparsity", "BlockSize", key_use::ignored, "", "used only with sparsity"},
    {"sparsity", "RandomNumberGeneratorSeed", key_use::ignored, "", "used only with sparsity"},
};

// The largest SRAM size accepted, in kB: 1 TiB, so that bytes never overflow.
constexpr std::uint64_t max_sram_kb = std::uint64_t{1} << 30;

struct scale_config {
    std::string path;
    array_shape array;
    dataflow_kind dataflow = dataflow_kind::os;
    std::uint64_t ifmap_sram_kb = 0, filter_sram_kb = 0, ofmap_sram_kb = 0;
    interface_bandwidth mode = interface_bandwidth::calc;
    std::uint64_t bandwidth = 0;  // words per cycle; 0: not given (CALC may omit it)
};

// Parses a configuration's text; `path` names it in messages. Largest array side: max_side.
scale_config parse_scale_config(std::string_view text, const std::string& path, std::uint64_t max_side);
// Reads and parses a file (regular files only).
scale_config read_scale_config(const std::string& path, std::uint64_t max_side);

// The memory system a configuration describes for operands of `word_bytes` each: SCALE-Sim's
// double-buffered scratchpads of the given sizes and, with USER, one DRAM channel of Bandwidth
// words (operands) per cycle; with CALC, an unlimited one.
memory_config memory_of(const scale_config& config, std::uint64_t word_bytes);

}  // namespace systolic::run
