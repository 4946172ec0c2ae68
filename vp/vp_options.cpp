#include "vp_options.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>

#include "cli_options.h"
#include "cli_parse.h"
#include "io/process.h"
#include "systolic/log.h"

namespace systolic::vp {

std::optional<int> parse_options(int argc, char* argv[], vp_options& o) {
    CLI::App app{"systolic-vp: a virtual platform with the systolic accelerator, driven by a job script"};
    std::string array_text = "2", log_level = name_of(log_level_names, default_log_level);
    app.add_option("--script", o.script_path, "job script (default: the built-in vp/scripts/default.vps)");
    app.add_option("--array", array_text, "array size N (default 2); the accelerator's arrays are square")
        ->type_name("N");
    app.add_option("--json", o.json_path, "write a JSON report of the jobs to this file");
    app.add_option("--c-out", o.c_dir, "write each completed job's C as <dir>/<job>.npy");
    app.add_option("--vcd", o.vcd_path,
                   "write a value-change dump to NAME.vcd (GTKWave): each controller's phases, tiles and C "
                   "writes, the PEs (all up to 16x16) and the interrupt line")
        ->type_name("NAME");
    app.add_option("--trace", o.trace_path,
                   "write a Chrome/Perfetto trace-event timeline: each job's tiles, chunks, phases and DMA "
                   "transfers")
        ->type_name("FILE");
    app.add_option("--log-level", log_level, log_level_help());
    app.add_flag("--print-default-script", o.print_default, "print the built-in script and exit");
    if (const auto status = tb::parse_command_line(app, argc, argv, "systolic-vp", 2)) return *status;
    if (o.print_default) {
        try {
            io::write_stdout(default_script);
        } catch (const io::io_error& e) {
            std::cerr << "systolic-vp: error: " << e.what() << "\n";
            return 2;
        }
        return 0;
    }
    // The accelerator's arrays are square: its ARRAY_SIZE register reads one side, N, which drivers
    // use to plan their tiles (docs/accelerator.md). RxC is accepted in the form NxN only.
    try {
        std::int64_t rows = 0, cols = 0;
        tb::parse_array_shape("--array", array_text, rows, cols);
        if (rows != cols)
            throw tb::usage_error("--array " + tb::array_shape_text(rows, cols) +
                                  ": the accelerator's arrays are square (its ARRAY_SIZE register reads N); "
                                  "give N (systolic-tb and systolic-run model RxC arrays)");
        if (rows < 1 || rows > 1024)
            throw tb::usage_error("--array must be between 1 and 1024, got " + std::to_string(rows));
        o.array = std::size_t(rows);
    } catch (const tb::usage_error& e) {
        std::cerr << "systolic-vp: error: " << tb::one_line(e.what()) << "\n";
        return 2;
    }
    const auto level = parse_log_level(log_level);
    if (!level) {
        std::cerr << "systolic-vp: unknown log level '" << log_level << "'\n";
        return 2;
    }
    set_log_level(*level);
    return std::nullopt;
}

}  // namespace systolic::vp
