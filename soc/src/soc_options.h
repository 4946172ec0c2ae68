// systolic-soc's command line: the options, parsed and checked (times, clock, log level). Its own
// unit, compiled cold: CLI11 is most of a command-line unit's compile time (docs/performance.md).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <systemc>

#include "energy_options.h"
#include "hart_core.h"
#include "output_options.h"
#include "systolic/job_names.h"

namespace systolic::soc {

struct soc_options {
    components::isa arch = components::isa::rv32;
    double cpu_clock = 1e9, cpi = 1;
    std::size_t array = 16;  // N: an N x N array
    engine_kind engine = engine_kind::cycle;
    sc_core::sc_time timeout, quantum;  // the quantum at most the timeout
    // Set when the option was given ("" too, which io::output_set refuses).
    std::optional<std::string> uart, json;
    cli::output_options outputs;  // --vcd, --trace, --log-level
    cli::energy_options energy;   // --energy, --tech-node: the table the ENERGY registers price with
    std::string firmware;
};

// Parses argv into o and sets the log level. Returns the exit status when the program is done
// (help: 0; bad usage: one line on stderr, `usage_status`), nothing otherwise.
std::optional<int> parse_options(int argc, char* argv[], soc_options& o, int usage_status);

}  // namespace systolic::soc
