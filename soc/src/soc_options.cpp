// systolic-soc's command line (soc_options.h).
#include "soc_options.h"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <vector>

#include "cli_choice.h"
#include "cli_parse.h"
#include "cli_values.h"
#include "energy_options.h"
#include "option_rules.h"
#include "output_options.h"
#include "systolic/log.h"

namespace systolic::soc {

namespace {

std::string number(double v) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", v);
    return text;
}

// One instruction's time, cpi / clock, must be one the kernel can count: at least its resolution
// (1 ps; less rounds to nothing, and the hart would run without time passing), and at most an
// hour, so that a slice's instructions (a translated block holds up to 512) stay far below
// sc_time's limit, 2^64 - 1 ps (213 days), which the hart's time must never pass.
void check_instruction_time(const soc_options& o) {
    constexpr double longest_ps = 3600e12;
    const double ps = o.cpi * 1e12 / o.cpu_clock;
    const std::string timing = "--cpu-clock " + number(o.cpu_clock) + " Hz at --cpi " + number(o.cpi);
    if (!(ps >= 1))
        throw cli::usage_error(timing + ": an instruction would take " + number(ps) +
                               " ps, less than the simulation's resolution of 1 ps");
    if (!(ps <= longest_ps))
        throw cli::usage_error(timing + ": an instruction would take " + number(ps) +
                               " ps, more than the hour the simulation allows one");
}

const cli::energy_options& energy_of(const soc_options& o) {
    return o.energy;
}

// Options that change nothing without another: the energy group's.
const std::vector<cli::option_rule<soc_options>>& soc_option_rules() {
    static const auto rules = cli::energy_option_rules<soc_options, energy_of>();
    return rules;
}

}  // namespace

std::optional<int> parse_options(int argc, char* argv[], soc_options& o, int usage_status) {
    CLI::App app{
        "systolic-soc: a RISC-V SoC with the systolic accelerator, running firmware from an ELF file"};
    std::string isa_name = "rv32", timeout = "10s", quantum = "1us", uart, json;
    app.add_option("--isa", isa_name, "rv32 (RV32IMAC, default) or rv64 (RV64IMAC)")
        ->check(CLI::IsMember({"rv32", "rv64"}));
    app.add_option("--cpu-clock", o.cpu_clock, "the hart's clock in Hz (default 1e9)")->type_name("HZ");
    app.add_option("--cpi", o.cpi, "cycles per retired instruction (default 1)")->type_name("N");
    // The output names are kept as given, "" included, for io::output_set to check.
    const CLI::Option* uart_option =
        app.add_option("--uart", uart, "write the UART's output to FILE rather than stdout")
            ->type_name("FILE");
    app.add_option("--timeout", timeout, "end a firmware that runs longer, in simulated time (default 10s)")
        ->type_name("TIME");
    app.add_option("--quantum", quantum,
                   "the global quantum, the hart's slice: interrupts are taken at most one quantum late "
                   "(default 1us; at most --timeout)")
        ->type_name("TIME");
    cli::add_output_options(app, o.outputs);
    const CLI::Option* json_option =
        app.add_option("--json", json,
                       "write a JSON report to FILE: the verdict and each job the passive checker checked, "
                       "with its counters and its scoreboard's counts")
            ->type_name("FILE");
    app.add_option("--array", o.array, "the accelerator's array size N, an N x N array (default 16)")
        ->check(CLI::Range(1, 1024))
        ->type_name("N");
    cli::add_choice(app, "--engine", o.engine, engine_kind_names,
                    "the accelerator's engine: cycle (every advance edge) or functional (same C, counters "
                    "modelled)");
    cli::energy_option_text energy_text;
    cli::add_energy_options(app, o.energy, energy_text);
    app.footer(cli::option_rules_help(soc_option_rules()));
    app.add_option("firmware", o.firmware, "the firmware: a RISC-V ELF executable linked with soc.ld")
        ->required()
        ->type_name("FIRMWARE.elf");
    if (const auto status = cli::parse_command_line(app, argc, argv, "systolic-soc", usage_status))
        return status;
    try {
        o.arch = isa_name == "rv64" ? components::isa::rv64 : components::isa::rv32;
        if (!(o.cpu_clock > 0) || !std::isfinite(o.cpu_clock))
            throw cli::usage_error("--cpu-clock must be a frequency above zero");
        if (!(o.cpi > 0) || !std::isfinite(o.cpi)) throw cli::usage_error("--cpi must be above zero");
        // Picoseconds as sc_time: the kernel keeps its 1 ps resolution.
        o.timeout = sc_core::sc_time::from_value(cli::parse_positive_time("--timeout", timeout, false));
        // A slice longer than the timeout would run the hart past it: the timeout bounds the quantum.
        o.quantum = std::min(
            sc_core::sc_time::from_value(cli::parse_positive_time("--quantum", quantum, false)), o.timeout);
        check_instruction_time(o);
        if (uart_option->count()) o.uart = uart;
        if (json_option->count()) o.json = json;
        cli::check_output_options(o.outputs);
        cli::convert_energy_options(energy_text, o.energy);
        if (const auto broken = cli::broken_option_rule(
                soc_option_rules(), o, [&](const char* name) { return app.count(name) > 0; }))
            throw cli::usage_error(*broken);
        set_log_level(cli::log_level_of(o.outputs));
    } catch (const cli::usage_error& e) {
        std::cerr << "systolic-soc: error: " << cli::one_line(e.what()) << "\n";
        return usage_status;
    }
    return std::nullopt;
}

}  // namespace systolic::soc
