#include "output_options.h"

#include <CLI/CLI.hpp>

#include "cli_values.h"
#include "systolic/log.h"

namespace systolic::cli {

void add_output_options(CLI::App& app, output_options& o, output_group group) {
    if (group.waves) {
        app.add_option("--vcd", o.vcd,
                       "Write a value-change dump (GTKWave) to FILE: the controllers' phases and C writes, "
                       "every advance edge of the traced PEs (all up to 16x16) and the interrupt lines, if "
                       "any (cycle engine)")
            ->type_name("FILE");
        if (group.gtkw)
            app.add_option(
                   "--gtkw", o.gtkw,
                   "Write a GTKWave save file for the --vcd: every row named by its PE, zoomed on the "
                   "first tile, markers at its first and last advance edge")
                ->type_name("FILE");
        app.add_option(
               "--trace", o.trace,
               "Write a Chrome/Perfetto trace-event timeline to FILE: each job's tiles, chunks, phases "
               "and DMA transfers, and the CPU's device accesses, interrupts and sleeps, if any")
            ->type_name("FILE");
    }
    add_log_level_option(app, o.log_level);
}

void add_log_level_option(CLI::App& app, std::string& level) {
    app.add_option("--log-level", level, "Model log level: " + log_level_help())
        ->type_name("LEVEL")
        ->default_str(level);
}

void check_output_options(const output_options& o) {
    if (o.vcd && o.vcd->empty()) throw usage_error("--vcd needs a file name, got ''");
    if (o.trace && o.trace->empty()) throw usage_error("--trace needs a file name, got ''");
    if (o.gtkw && o.gtkw->empty()) throw usage_error("--gtkw needs a file name, got ''");
    if (!parse_log_level(o.log_level))
        throw usage_error("--log-level " + one_line(o.log_level) + ": not a log level (" +
                          names_text(log_level_names) + ")");
}

spdlog::level::level_enum log_level_of(const output_options& o) {
    return parse_log_level(o.log_level).value_or(default_log_level);
}

}  // namespace systolic::cli
