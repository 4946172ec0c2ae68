// systolic-soc: a RISC-V SoC around the accelerator that runs firmware compiled from C (platform.h,
// docs/soc.md). Exit status: 0 when the firmware finished with code 0 and every check passed; 1 when
// it finished with another code, or a job, or a TLM-2.0 rule on a bus, failed its check; 2 for bad
// usage or a bad ELF file; 3 for a firmware fault; 4 when --timeout (simulated) ran out first.
#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <systemc>

#include "accelerator_pricing.h"
#include "checked_report.h"
#include "cli_values.h"
#include "io/output_set.h"
#include "io/process.h"
#include "io/text.h"
#include "observer_outputs.h"
#include "platform.h"
#include "soc_options.h"
#include "systolic/observe/file_sink.h"
#include "time_text.h"

namespace {

using namespace systolic;

constexpr int exit_failed = 1, exit_usage = 2, exit_fault = 3, exit_timeout = 4;

soc::platform::config config_of(const soc::soc_options& o) {
    soc::platform::config pc;
    pc.arch = o.arch;
    pc.cpu_clock_hz = o.cpu_clock;
    pc.cpi = o.cpi;
    pc.array_size = o.array;
    pc.engine = o.engine;
    return pc;
}

int fail(const std::exception& e) {
    std::cerr << "systolic-soc: error: " << cli::one_line(e.what()) << "\n";
    return exit_usage;
}

// The exit status, with its reason on stderr: a fault, then the timeout, then the firmware's
// code, then the checks. The hart runs ahead of the kernel by up to a quantum, so a fault or a
// finish may come at a CPU time past the timeout, where the kernel has not: that is a timeout too.
int exit_status(soc::platform& chip, sc_core::sc_time timeout) {
    const auto& fault = chip.cpu.fault();
    const auto& code = chip.exit_code();
    const bool late = fault ? chip.cpu.fault_time() > timeout : code && chip.finish_time() > timeout;
    if (fault && !late) {
        std::cerr << "systolic-soc: firmware fault at pc " << io::hex(fault->pc) << ": " << fault->what
                  << " (mcause " << io::hex(fault->cause) << ", address " << io::hex(fault->address) << ")\n";
        return exit_fault;
    }
    if (!code || late) {
        std::cerr << "systolic-soc: timeout: the firmware did not finish within " << cli::format_time(timeout)
                  << " of simulated time (--timeout)\n";
        return exit_timeout;
    }
    if (*code != 0) {
        std::cerr << "systolic-soc: the firmware finished with code " << *code << " (" << io::hex(*code)
                  << ")\n";
        return exit_failed;
    }
    return chip.job_failures().empty() && chip.protocol_violations().empty() ? 0 : exit_failed;
}

// What the checks found, and the summary line.
void print_summary(soc::platform& chip, double wall_seconds) {
    const auto& failures = chip.job_failures();
    const auto violations = chip.protocol_violations();
    components::print_check_lines(std::cout, chip.accel, violations);
    const double mips = wall_seconds > 0 ? double(chip.cpu.retired()) / wall_seconds / 1e6 : 0;
    char mips_text[32];
    std::snprintf(mips_text, sizeof mips_text, "%.1f", mips);
    std::cout << "systolic-soc: " << chip.cpu.retired() << " instructions retired, "
              << cli::format_time(sc_core::sc_time_stamp()) << " simulated, " << mips_text << " MIPS, "
              << chip.jobs_checked() << " jobs checked, " << failures.size() << " failures, "
              << chip.bus_transactions_checked() << " bus transactions checked, " << violations.size()
              << " protocol violations\n";
}

// --json: the verdict, and each job the passive checker saw (checked_report.h).
std::string report_json(soc::platform& chip, std::size_t array, int status, bool energy) {
    return components::checked_run_json(chip.accel, array, status, chip.protocol_violations().size(), energy)
               .dump(2) +
           "\n";
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    soc::soc_options o;
    if (const auto status = soc::parse_options(argc, argv, o, exit_usage)) return *status;
    soc::platform::config pc = config_of(o);
    components::elf_image image;
    io::output_set files;
    cli::observer_outputs waves(o.outputs, "systolic-soc");
    try {  // every output name through output_set's checks, an empty one included
        image = components::read_elf(o.firmware, pc.arch, soc::platform::cpu_ram(pc.arch));
        files.add_input({"firmware", o.firmware});
        if (o.uart) files.add({"--uart", *o.uart});
        if (o.json) files.add({"--json", *o.json});
        waves.plan(files);
        if (o.energy.table)  // read and tried before anything runs: a bad table is one line
            pc.price = components::accelerator_pricing(
                components::load_accelerator_table(*o.energy.table, o.energy.tech_node), o.energy.tech_node);
    } catch (const std::exception& e) {  // elf_error, io_error, energy_error
        return fail(e);
    }

    // The hart ends the simulation with sc_stop(), which is no news to the user.
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    tlm::tlm_global_quantum::instance().set(o.quantum);
    soc::platform chip("soc", pc);
    chip.load(image);
    // The UART, the waveform and the timeline stream into their temporaries while the platform runs.
    std::unique_ptr<observe::file_sink> uart_sink;
    try {
        if (o.uart) uart_sink = std::make_unique<observe::file_sink>(files.stream(*o.uart), *o.uart);
        waves.open(files);
    } catch (const std::exception& e) {  // io_error
        return fail(e);
    }
    bool line_open = false;  // the UART's output on stdout does not end with a newline
    chip.uart.set_output([&](char c) {
        if (uart_sink) return uart_sink->append(c);
        std::cout.put(c);
        line_open = c != '\n';
    });
    if (waves.trace()) chip.cpu.set_trace(waves.trace());
    waves.watch(chip.accel.dut, o.array, [&](observe::vcd_writer& w) { chip.trace_irq(w); });

    const auto wall_begin = std::chrono::steady_clock::now();
    sc_core::sc_start(o.timeout);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_begin).count();
    chip.finish_checks();
    waves.stop(sc_core::sc_time_stamp());
    chip.cpu.finish_trace(sc_core::sc_time_stamp());
    const int status = exit_status(chip, o.timeout);
    if (line_open) std::cout << "\n";
    print_summary(chip, wall);
    try {
        if (uart_sink)
            if (const std::string err = uart_sink->finish(); !err.empty()) throw std::runtime_error(err);
        waves.finish(files);
        const std::string report = o.json ? report_json(chip, o.array, status, bool(o.energy.table)) : "";
        if (o.json) files.set(*o.json, {report});
        files.prepare();
        io::flush_stdout();
        files.commit();
    } catch (const std::exception& e) {
        return fail(e);
    }
    return status;
}

int main(int argc, char* argv[]) {
    if (const int status = systolic::io::start("systolic-soc"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
