// systolic-qemu's command line (qemu_options.h).
#include "qemu_options.h"

#include <CLI/CLI.hpp>

#include <cstring>
#include <iostream>

#include "cli_choice.h"
#include "cli_parse.h"
#include "cli_values.h"
#include "option_rules.h"
#include "systolic/log.h"

namespace systolic::qemu {

namespace {

const cli::energy_options& energy_of(const qemu_options& o) {
    return o.energy;
}

const std::vector<cli::option_rule<qemu_options>>& qemu_option_rules() {
    static const auto rules = [] {
        auto r = cli::energy_option_rules<qemu_options, energy_of>();
        r.push_back({"--quantum", "--time free",
                     "--time settle runs until nothing is pending, with no quantum",
                     [](const qemu_options& o) { return o.time == qemu_pci::time_mode::free; }});
        return r;
    }();
    return rules;
}

}  // namespace

std::optional<int> parse_options(int argc, char* argv[], qemu_options& o, int usage_status) {
    // --run takes the rest of the line: PROG's own options are not ours.
    int ours = argc;
    for (int i = 1; i < argc; ++i)
        if (std::strcmp(argv[i], "--run") == 0) {
            ours = i;
            o.run.assign(argv + i + 1, argv + argc);
            break;
        }
    CLI::App app{"systolic-qemu: the accelerator as a PCI function of a stock QEMU, driven by a Linux guest"};
    std::string timeout = "600s", quantum = "1us", kernel, initrd, json;
    const CLI::Option* kernel_option =
        app.add_option("--kernel", kernel,
                       "the guest's kernel (default: the one scripts/setup downloaded, else the newest "
                       "/boot/vmlinuz-*)")
            ->type_name("FILE");
    const CLI::Option* initrd_option =
        app.add_option("--initrd", initrd,
                       "the guest's initramfs instead of the one systolic-qemu builds (which loads the "
                       "driver and runs --run's program)")
            ->type_name("FILE");
    app.add_option("--append", o.append, "the kernel's command line (default \"" + o.append + "\")")
        ->type_name("TEXT");
    app.add_option("--qemu", o.qemu, "the QEMU to run (default qemu-system-x86_64; QEMU 7.2)")
        ->type_name("BINARY");
    app.add_option("--qemu-arg", o.qemu_args,
                   "one more argument for QEMU's command line, after systolic-qemu's own (repeatable: "
                   "--qemu-arg -device --qemu-arg edu)")
        ->allow_extra_args(false)
        ->type_name("ARG");
    app.add_option("--guest-file", o.guest_files, "a file or directory the guest finds in /data (repeatable)")
        ->type_name("PATH");
    app.add_option("--timeout", timeout,
                   "end a guest that runs longer, in wall-clock time (default 600s), exit 4")
        ->type_name("TIME");
    cli::add_choice(app, "--time", o.time, qemu_pci::time_mode_names,
                    "how the simulation keeps up with the guest, whose accesses carry no time");
    app.add_option("--quantum", quantum,
                   "--time free: the simulated time run between polls of QEMU (default 1us)")
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
    cli::add_choice(app, "--inject", o.inject, verify::fault_names,
                    "plant a known defect in the accelerator, to see the checks catch it");
    cli::energy_option_text energy_text;
    cli::add_energy_options(app, o.energy, energy_text);
    app.footer(
        "--run PROG [ARGS...]  run PROG (a static x86-64 program, or a script) in the guest once the "
        "driver is loaded; the rest of the line is its arguments; its exit status is systolic-qemu's "
        "(default: the built-in example, the seeds' job through the driver)\n" +
        cli::option_rules_help(qemu_option_rules()));
    if (const auto status = cli::parse_command_line(app, ours, argv, "systolic-qemu", usage_status))
        return status;
    try {
        if (ours < argc && o.run.empty()) throw cli::usage_error("--run needs a program");
        o.timeout = std::chrono::milliseconds(cli::parse_positive_time("--timeout", timeout, true) /
                                              1'000'000'000ull);
        if (o.timeout.count() == 0)
            throw cli::usage_error("--timeout " + timeout + ": less than a millisecond");
        o.quantum = sc_core::sc_time::from_value(cli::parse_positive_time("--quantum", quantum, false));
        if (kernel_option->count()) o.kernel = kernel;
        if (initrd_option->count()) o.initrd = initrd;
        if (o.initrd && (!o.run.empty() || !o.guest_files.empty()))
            throw cli::usage_error("--initrd replaces the initramfs that --run and --guest-file go into");
        if (json_option->count()) o.json = json;
        cli::check_output_options(o.outputs);
        cli::convert_energy_options(energy_text, o.energy);
        if (const auto broken = cli::broken_option_rule(
                qemu_option_rules(), o, [&](const char* name) { return app.count(name) > 0; }))
            throw cli::usage_error(*broken);
        set_log_level(cli::log_level_of(o.outputs));
    } catch (const cli::usage_error& e) {
        std::cerr << "systolic-qemu: error: " << cli::one_line(e.what()) << "\n";
        return usage_status;
    }
    return std::nullopt;
}

}  // namespace systolic::qemu
