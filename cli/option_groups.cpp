// The shared option groups' declarations to CLI11 (memory_options.h, output_options.h,
// energy_options.h), in one unit: CLI11 is most of the compile time of a unit that declares
// options, and these run once per process. Their conversions and checks are in the groups' own units.
#include <CLI/CLI.hpp>

#include "cli_choice.h"
#include "cli_values.h"
#include "energy_options.h"
#include "memory_options.h"
#include "output_options.h"
#include "systolic/log.h"

namespace systolic::cli {

void add_memory_options(CLI::App& app, memory_config& m, memory_option_text& text) {
    add_choice(app, "--buffers", m.buffers, buffer_mode_names,
               "none: no scratchpads, each tile's phases in sequence; double: scratchpads with reuse, "
               "the next tile's operands prefetched while this one advances (docs/memory.md)");
    app.add_option("--a-sram", text.a_sram, "With --buffers double: the A scratchpad's size (e.g. 64k, 1M)")
        ->type_name("SIZE|inf");
    app.add_option("--b-sram", text.b_sram, "With --buffers double: the B scratchpad's size")
        ->type_name("SIZE|inf");
    app.add_option("--c-sram", text.c_sram, "With --buffers double: the C scratchpad's size")
        ->type_name("SIZE|inf");
    app.add_option("--dram-bandwidth", text.dram_bandwidth,
                   "DRAM bytes per clock cycle, shared by the A, B and C streams (inf: unlimited)")
        ->type_name("B|inf");
}

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

void add_energy_options(CLI::App& app, energy_options& e, energy_option_text& text, energy_group group) {
    app.add_option("--energy", e.table,
                   "Price each job's counted actions in pJ with TABLE: horowitz45, accelergy45, tpu7, a "
                   "table file (.json) or an Accelergy ERT.yaml (docs/energy.md)")
        ->type_name("TABLE");
    app.add_option("--tech-node", text.tech_node,
                   "With --energy: scale the table to this technology node (Stillmaker-Baas, 7 to 180 nm) "
                   "[the table's own]")
        ->type_name("NM");
    if (group.action_counts)
        app.add_option("--action-counts", e.action_counts,
                       "Write the job's counted actions to FILE as Accelergy's action_counts.yaml")
            ->type_name("FILE");
}

}  // namespace systolic::cli
