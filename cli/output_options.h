// The option group every simulating executable shares: --vcd FILE, --trace FILE, --gtkw FILE (where
// the executable writes a save file) and --log-level LEVEL, each declared here once with one help
// text, so that an option means the same thing, and says so in --help, in systolic-tb, systolic-vp
// and systolic-soc alike. Plain C++ over CLI11 (no SystemC), so that the fuzzers link it with the
// parsers that use it; observer_outputs.h writes the files.
#pragma once

#include <optional>
#include <string>

#include <spdlog/common.h>

namespace CLI {
class App;
}

namespace systolic::cli {

struct output_options {
    // Set when the option was given ("" too, which check_output_options refuses). Every file is
    // written exactly where it is named: no executable adds an extension.
    std::optional<std::string> vcd, trace, gtkw;
    std::string log_level = "warn";  // a name of log_level_names (systolic/log.h)
};

// Which of the group an executable has: --gtkw only where the waveform's signals are known before
// the run (systolic-tb's array), --vcd and --trace only where something is simulated.
struct output_group {
    bool waves = true;  // --vcd and --trace
    bool gtkw = false;
};

// Adds the group's options to `app`, bound to `o`.
void add_output_options(CLI::App& app, output_options& o, output_group group = {});
// --log-level alone, for an executable that simulates nothing itself (systolic-run, which passes
// it on to its jobs).
void add_log_level_option(CLI::App& app, std::string& level);

// After parsing: an empty file name, or a log level that is none (usage_error, naming the option).
void check_output_options(const output_options& o);

// The level --log-level names (after check_output_options).
spdlog::level::level_enum log_level_of(const output_options& o);

}  // namespace systolic::cli
