#include "vp_options.h"

#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

#include "cli_parse.h"
#include "cli_values.h"
#include "energy_options.h"
#include "io/process.h"
#include "memory_options.h"
#include "output_options.h"
#include "systolic/log.h"

namespace systolic::vp {

namespace {

const memory_config& memory_of(const vp_options& o) {
    return o.memory;
}

const cli::energy_options& energy_of(const vp_options& o) {
    return o.energy;
}

// Options that change nothing without another: the memory group's and the energy group's.
const std::vector<cli::option_rule<vp_options>>& vp_option_rules() {
    static const auto rules = [] {
        auto all = cli::memory_option_rules<vp_options, memory_of>();
        for (const auto& r : cli::energy_option_rules<vp_options, energy_of>())
            all.push_back(r);
        return all;
    }();
    return rules;
}

}  // namespace

std::optional<int> parse_options(int argc, char* argv[], vp_options& o) {
    CLI::App app{"systolic-vp: a virtual platform with the systolic accelerator, driven by a job script"};
    std::string array_text = "2";
    app.add_option("--script", o.script_path, "job script (default: the built-in vp/scripts/default.vps)");
    app.add_option("--array", array_text, "array size N (default 2); the accelerator's arrays are square")
        ->type_name("N");
    app.add_option("--json", o.json_path, "write a JSON report of the jobs to this file");
    app.add_option("--c-out", o.c_dir, "write each completed job's C as <dir>/<job>.npy");
    cli::add_output_options(app, o.outputs);
    cli::memory_option_text memory_text;
    cli::add_memory_options(app, o.memory, memory_text);
    cli::energy_option_text energy_text;
    cli::add_energy_options(app, o.energy, energy_text);
    app.footer(cli::option_rules_help(vp_option_rules()));
    app.add_flag("--print-default-script", o.print_default, "print the built-in script and exit");
    if (const auto status = cli::parse_command_line(app, argc, argv, "systolic-vp", 2)) return *status;
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
        cli::parse_array_shape("--array", array_text, rows, cols);
        if (rows != cols)
            throw cli::usage_error("--array " + cli::array_shape_text(rows, cols) +
                                   ": the accelerator's arrays are square (its ARRAY_SIZE register reads N); "
                                   "give N (systolic-tb and systolic-run model RxC arrays)");
        if (rows < 1 || rows > 1024)
            throw cli::usage_error("--array must be between 1 and 1024, got " + std::to_string(rows));
        o.array = std::size_t(rows);
        cli::check_output_options(o.outputs);
        cli::convert_memory_options(memory_text, o.memory);
        cli::convert_energy_options(energy_text, o.energy);
        if (const auto broken = cli::broken_option_rule(
                vp_option_rules(), o, [&](const char* name) { return app.count(name) > 0; }))
            throw cli::usage_error(*broken);
    } catch (const cli::usage_error& e) {
        std::cerr << "systolic-vp: error: " << cli::one_line(e.what()) << "\n";
        return 2;
    }
    set_log_level(cli::log_level_of(o.outputs));
    return std::nullopt;
}

}  // namespace systolic::vp
