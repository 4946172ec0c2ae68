// systolic-vp's command line: the options, parsed and checked (the array's shape, the log level).
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "energy_options.h"
#include "output_options.h"
#include "systolic/memory_system.h"

namespace systolic::vp {

extern const char* const default_script;  // vp/scripts/default.vps, built in

struct vp_options {
    std::string script_path, json_path, c_dir;
    cli::output_options outputs;  // --vcd, --trace, --log-level
    std::size_t array = 2;        // N: the accelerator's arrays are N x N
    memory_config memory;         // the accelerator's scratchpads and DRAM bandwidth, for every job
    cli::energy_options energy;   // --energy, --tech-node: the table the ENERGY registers price with
    bool print_default = false;
};

// Parses argv into o and sets the log level. Returns the exit status when the program is done
// (help or the default script printed: 0; bad usage: one line on stderr, 2), nothing otherwise.
std::optional<int> parse_options(int argc, char* argv[], vp_options& o);

}  // namespace systolic::vp
