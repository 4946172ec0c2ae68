// systolic-soc: a RISC-V SoC around the accelerator that runs firmware compiled from C (platform.h,
// docs/soc.md). Exit status: 0 when the firmware finished with code 0 and every check passed; 1 when
// it finished with another code, or a job, or a TLM-2.0 rule on a bus, failed its check; 2 for bad
// usage or a bad ELF file; 3 for a firmware fault; 4 when --timeout (simulated) ran out first.
#include <CLI/CLI.hpp>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <systemc>

#include "cli_choice.h"
#include "cli_options.h"
#include "cli_parse.h"
#include "io/output_set.h"
#include "io/process.h"
#include "io/text.h"
#include "job_script.h"
#include "platform.h"
#include "systolic/job_names.h"
#include "systolic/log.h"
#include "systolic/observe/accelerator_observers.h"
#include "systolic/observe/file_sink.h"
#include "systolic/observe/trace_observer.h"
#include "systolic/observe/vcd_writer.h"
#include "time_text.h"

namespace {

using namespace systolic;

constexpr int exit_failed = 1, exit_usage = 2, exit_fault = 3, exit_timeout = 4;

struct options {
    std::string isa = "rv32";
    double cpu_clock = 1e9, cpi = 1;
    std::string uart, timeout = "10s", quantum = "1us", trace, vcd,
                      log_level = name_of(log_level_names, default_log_level);
    std::size_t array = 16;
    engine_kind engine = engine_kind::cycle;
    std::string firmware;
};

// A time option as an sc_time: a whole number with ps, ns, us, ms or s, and more than zero.
sc_core::sc_time time_option(const std::string& option, const std::string& text) {
    const auto ps = vp::parse_time(text);
    if (!ps || *ps == 0)
        throw tb::usage_error(option + " " + tb::one_line(text) +
                              ": not a time (a whole number above zero with ps, ns, us, ms or s)");
    return sc_core::sc_time::from_value(*ps);  // the kernel keeps its 1 ps resolution
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    CLI::App app{
        "systolic-soc: a RISC-V SoC with the systolic accelerator, running firmware from an ELF file"};
    options o;
    app.add_option("--isa", o.isa, "rv32 (RV32IMAC, default) or rv64 (RV64IMAC)")
        ->check(CLI::IsMember({"rv32", "rv64"}));
    app.add_option("--cpu-clock", o.cpu_clock, "the hart's clock in Hz (default 1e9)")->type_name("HZ");
    app.add_option("--cpi", o.cpi, "cycles per retired instruction (default 1)")->type_name("N");
    app.add_option("--uart", o.uart, "write the UART's output to FILE rather than stdout")->type_name("FILE");
    app.add_option("--timeout", o.timeout, "end a firmware that runs longer, in simulated time (default 10s)")
        ->type_name("TIME");
    app.add_option("--quantum", o.quantum,
                   "the global quantum, the hart's slice: interrupts are taken at most one quantum late "
                   "(default 1us)")
        ->type_name("TIME");
    app.add_option("--trace", o.trace,
                   "write a Chrome/Perfetto trace-event timeline: the CPU's device accesses, interrupts and "
                   "sleeps beside each job's tiles, chunks, phases and DMA transfers")
        ->type_name("FILE");
    app.add_option("--vcd", o.vcd,
                   "write a value-change dump to NAME.vcd (GTKWave): the accelerator's controllers and PEs "
                   "(all up to 16x16) and the interrupt lines")
        ->type_name("NAME");
    app.add_option("--array", o.array, "the accelerator's array size N, an N x N array (default 16)")
        ->check(CLI::Range(1, 1024))
        ->type_name("N");
    tb::add_choice(app, "--engine", o.engine, engine_kind_names,
                   "the accelerator's engine: cycle (every advance edge) or functional (same C, counters "
                   "modelled)");
    app.add_option("--log-level", o.log_level, log_level_help());
    app.add_option("firmware", o.firmware, "the firmware: a RISC-V ELF executable linked with soc.ld")
        ->required()
        ->type_name("FIRMWARE.elf");
    if (const auto status = tb::parse_command_line(app, argc, argv, "systolic-soc", exit_usage))
        return *status;

    soc::platform::config pc;
    pc.arch = o.isa == "rv64" ? soc::isa::rv64 : soc::isa::rv32;
    pc.cpu_clock_hz = o.cpu_clock;
    pc.cpi = o.cpi;
    pc.array_size = o.array;
    pc.engine = o.engine;
    sc_core::sc_time timeout, quantum;
    soc::elf_image image;
    io::output_set files;
    const std::string vcd_file = o.vcd.empty() ? "" : o.vcd + ".vcd";  // NAME without its extension
    try {
        if (!(o.cpu_clock > 0) || !std::isfinite(o.cpu_clock))
            throw tb::usage_error("--cpu-clock must be a frequency above zero");
        if (!(o.cpi > 0) || !std::isfinite(o.cpi)) throw tb::usage_error("--cpi must be above zero");
        timeout = time_option("--timeout", o.timeout);
        quantum = time_option("--quantum", o.quantum);
        const auto level = parse_log_level(o.log_level);
        if (!level) throw tb::usage_error("--log-level " + tb::one_line(o.log_level) + ": not a log level");
        set_log_level(*level);
        image = soc::read_elf(o.firmware, pc.arch, soc::platform::cpu_ram(pc.arch));
        files.add_input({"firmware", o.firmware});
        if (!o.uart.empty()) files.add({"--uart", o.uart});
        if (!vcd_file.empty()) files.add({"--vcd", vcd_file});
        if (!o.trace.empty()) files.add({"--trace", o.trace});
    } catch (const soc::elf_error& e) {
        std::cerr << "systolic-soc: error: " << tb::one_line(e.what()) << "\n";
        return exit_usage;
    } catch (const std::exception& e) {  // usage_error, io_error
        std::cerr << "systolic-soc: error: " << tb::one_line(e.what()) << "\n";
        return exit_usage;
    }

    // The hart ends the simulation with sc_stop(), which is no news to the user.
    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    tlm::tlm_global_quantum::instance().set(quantum);
    soc::platform chip("soc", pc);
    chip.load(image);
    // The UART, the waveform and the timeline stream into their temporaries while the platform runs.
    std::unique_ptr<observe::file_sink> uart_sink, vcd_sink, trace_sink;
    std::unique_ptr<observe::vcd_writer> vcd;
    std::unique_ptr<observe::trace_file> trace;
    std::optional<observe::accelerator_observers> waves;
    try {
        if (!o.uart.empty()) uart_sink = std::make_unique<observe::file_sink>(files.stream(o.uart), o.uart);
        if (!vcd_file.empty()) {
            vcd_sink = std::make_unique<observe::file_sink>(files.stream(vcd_file), vcd_file);
            vcd = std::make_unique<observe::vcd_writer>(*vcd_sink);
            vcd->set_version("systolic-soc");
        }
        if (!o.trace.empty()) {
            trace_sink = std::make_unique<observe::file_sink>(files.stream(o.trace), o.trace);
            trace = std::make_unique<observe::trace_file>(*trace_sink, "systolic-soc");
        }
    } catch (const std::exception& e) {  // io_error
        std::cerr << "systolic-soc: error: " << tb::one_line(e.what()) << "\n";
        return exit_usage;
    }
    bool line_open = false;  // the UART's output on stdout does not end with a newline
    if (uart_sink)
        chip.uart.set_output([&](char c) { uart_sink->append(c); });
    else
        chip.uart.set_output([&](char c) {
            std::cout.put(c);
            line_open = c != '\n';
        });
    if (trace) chip.cpu.set_trace(trace.get());
    if (vcd || trace)
        waves.emplace(chip.accel, vcd.get(), observe::parse_pe_selection(std::nullopt, o.array, o.array),
                      trace.get());
    if (vcd) {
        chip.trace_irq(*vcd);
        vcd->end_definitions();
    }

    const auto wall_begin = std::chrono::steady_clock::now();
    sc_core::sc_start(timeout);
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_begin).count();
    const sc_core::sc_time end = sc_core::sc_time_stamp();
    chip.finish_checks();
    if (waves) waves->finish(end);
    waves.reset();
    chip.cpu.finish_trace(end);

    // The verdict: a fault, then the timeout, then the firmware's code, then the checks.
    int status = 0;
    const auto& fault = chip.cpu.fault();
    const auto& code = chip.exit_code();
    const auto violations = chip.protocol_violations();
    const auto& failures = chip.job_failures();
    if (fault) {
        std::cerr << "systolic-soc: firmware fault at pc " << io::hex(fault->pc) << ": " << fault->what
                  << " (mcause " << io::hex(fault->cause) << ", address " << io::hex(fault->address) << ")\n";
        status = exit_fault;
    } else if (!code) {
        std::cerr << "systolic-soc: timeout: the firmware did not finish within " << tb::format_time(timeout)
                  << " of simulated time (--timeout)\n";
        status = exit_timeout;
    } else if (*code != 0) {
        std::cerr << "systolic-soc: the firmware finished with code " << *code << " (" << io::hex(*code)
                  << ")\n";
        status = exit_failed;
    }
    for (const auto& f : failures)
        std::cout << "check failed: " << f << "\n";
    for (const auto& v : violations)
        std::cout << "protocol violation: " << v << "\n";
    if (status == 0 && (!failures.empty() || !violations.empty())) status = exit_failed;
    const double mips = wall > 0 ? double(chip.cpu.retired()) / wall / 1e6 : 0;
    char mips_text[32];
    std::snprintf(mips_text, sizeof mips_text, "%.1f", mips);
    std::cout << (line_open ? "\n" : "") << "systolic-soc: " << chip.cpu.retired()
              << " instructions retired, " << tb::format_time(end) << " simulated, " << mips_text << " MIPS, "
              << chip.jobs_checked() << " jobs checked, " << failures.size() << " failures, "
              << chip.bus_transactions_checked() << " bus transactions checked, " << violations.size()
              << " protocol violations\n";

    try {
        if (uart_sink)
            if (const std::string err = uart_sink->finish(); !err.empty()) throw std::runtime_error(err);
        if (vcd)
            if (const std::string err = vcd->finish(); !err.empty()) throw std::runtime_error(err);
        if (trace) {
            trace->finish();
            if (const std::string err = trace_sink->finish(); !err.empty()) throw std::runtime_error(err);
        }
        files.prepare();
        io::flush_stdout();
        files.commit();
    } catch (const std::exception& e) {
        std::cerr << "systolic-soc: error: " << tb::one_line(e.what()) << "\n";
        return exit_usage;
    }
    return status;
}

int main(int argc, char* argv[]) {
    if (const int status = systolic::io::start("systolic-soc"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
