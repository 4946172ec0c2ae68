// systolic-vp: an example virtual platform around the accelerator.
//   cpu (runs a job script) -------------------+--> bus : router --> ram : memory               at 0x80000000
//   accel.dma --> checks (passive checker) -----+                 --> checks --> accel.regs   at 0x40000000
//   accel.irq ------------------------------------------------------> cpu.irq
// The verification environment in the DMA path checks every job the CPU starts: a `job` command's
// through the register DUT (cpu.h), and any other START the script writes passively.
// Without --script it runs the default script (vp/scripts/default.vps, built in). Exit status: 0
// when every check passed, 1 when one failed, 2 for bad usage or a bad script.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <systolic/accelerator_regs.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <systemc>

#include "cli_options.h"
#include "cli_parse.h"
#include "cpu.h"
#include "io/input_file.h"
#include "io/job_json.h"
#include "io/npy.h"
#include "io/output_set.h"
#include "io/process.h"
#include "io/text.h"
#include "job_script.h"
#include "report.h"
#include "router.h"
#include "systolic/accelerator.h"
#include "systolic/log.h"
#include "systolic/memory.h"
#include "systolic/observe/accelerator_observers.h"
#include "systolic/observe/file_sink.h"
#include "systolic/observe/trace_observer.h"
#include "systolic/observe/vcd_writer.h"
#include "systolic/verify/passive_checker.h"
#include "systolic/verify/protocol_checker.h"
#include "time_text.h"

namespace systolic::vp {
extern const char* const default_script;
}

namespace {

using namespace systolic;

struct platform : sc_core::sc_module {
    vp::router bus;
    memory ram;
    accelerator accel;
    // In front of the accelerator's registers and in its DMA path: the accelerator reaches the bus
    // through the environments' protocol checker and bus monitor, the CPU through a protocol
    // checker of its own.
    verify::passive_checker checks;
    vp::cpu cpu;
    verify::protocol_checker cpu_checker;
    sc_core::sc_signal<bool> irq;
    std::vector<std::string> violations;

    SC_HAS_PROCESS(platform);

    platform(const sc_core::sc_module_name& name, const vp::cpu::config& cc, const accelerator::config& ac,
             std::vector<vp::command> script, std::ostream& out)
        : sc_core::sc_module(name),
          bus("bus"),
          ram("ram", memory::config{0, cc.ram_size}),
          accel("accel", ac),
          checks("checks", accel, cc.ram_base, cc.ram_size),
          cpu("cpu", cc, std::move(script), checks.environments, out),
          cpu_checker("cpu_checker"),
          irq("irq") {
        cpu.initiator_socket.bind(cpu_checker.target_socket);
        cpu_checker.initiator_socket.bind(bus.target_socket);
        accel.dma.bind(checks.dma_target_socket);
        checks.dma_initiator_socket.bind(bus.target_socket);
        checks.initiator_socket.bind(accel.regs);
        cpu_checker.on_violation([this](const std::string& v) { violations.push_back(v); });
        bus.initiator_socket.bind(ram.target_socket);     // port 0
        bus.initiator_socket.bind(checks.target_socket);  // port 1: the accelerator's registers
        bus.map(cc.ram_base, cc.ram_size, 0, "ram");
        bus.map(cc.regs_base, SYSTOLIC_REGS_SIZE, 1, "accel.regs");
        accel.irq.bind(irq);
        cpu.irq.bind(irq);
        SC_METHOD(dump_irq);
        sensitive << irq;
        dont_initialize();
    }

    // The interrupt line in the VCD beside the accelerator's signals, as <platform>.irq.
    void trace_irq(observe::vcd_writer& w) {
        m_vcd = &w;
        m_irq_var = w.add_wire(std::string(name()) + ".irq", 1);
    }

private:
    void dump_irq() {
        if (!m_vcd) return;
        m_vcd->set_time(sc_core::sc_time_stamp().value());
        m_vcd->set(m_irq_var, irq.read());
    }

    observe::vcd_writer* m_vcd = nullptr;
    observe::vcd_writer::id m_irq_var = 0;
};

// --c-out DIR names each job's C file after the job, so a name must be a file name (no '/') and
// given to one job only. Every file is planned before the platform starts.
void plan_c_files(const std::vector<vp::command>& script, const std::string& script_name,
                  const std::string& dir, io::output_set& files) {
    std::map<std::string, int> lines;
    for (const auto& c : script) {
        if (c.verb != "job" || c.args.empty()) continue;
        const std::string& name = c.args[0];
        const std::string where =
            script_name + ":" + std::to_string(c.line) + ": job name '" + io::printable(name) + "'";
        if (name.find_first_of(std::string("/\0", 2)) != std::string::npos)
            throw tb::usage_error(where + " cannot name a file under --c-out (it holds a '/' or a NUL)");
        if (!lines.emplace(name, c.line).second)
            throw tb::usage_error(where + " is also on line " + std::to_string(lines[name]) +
                                  "; --c-out names each job's file after its job");
        files.add({"--c-out", (std::filesystem::path(dir) / (name + ".npy")).string()});
    }
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    CLI::App app{"systolic-vp: a virtual platform with the systolic accelerator, driven by a job script"};
    std::string script_path, json_path, c_dir, log_level = "warn";
    std::string array_text = "2";
    app.add_option("--script", script_path, "job script (default: the built-in vp/scripts/default.vps)");
    app.add_option("--array", array_text, "array size N (default 2); the accelerator's arrays are square")
        ->type_name("N");
    app.add_option("--json", json_path, "write a JSON report of the jobs to this file");
    app.add_option("--c-out", c_dir, "write each completed job's C as <dir>/<job>.npy");
    std::string vcd_path, trace_path;
    app.add_option("--vcd", vcd_path,
                   "write a value-change dump to NAME.vcd (GTKWave): each controller's phases, tiles and C "
                   "writes, the PEs (all up to 16x16) and the interrupt line")
        ->type_name("NAME");
    app.add_option("--trace", trace_path,
                   "write a Chrome/Perfetto trace-event timeline: each job's tiles, chunks, phases and DMA "
                   "transfers")
        ->type_name("FILE");
    app.add_option("--log-level", log_level, "trace, debug, info, warn (default), error, critical, off");
    bool print_default = false;
    app.add_flag("--print-default-script", print_default, "print the built-in script and exit");
    if (const auto status = tb::parse_command_line(app, argc, argv, "systolic-vp", 2)) return *status;
    if (print_default) {
        try {
            io::write_stdout(vp::default_script);
        } catch (const io::io_error& e) {
            std::cerr << "systolic-vp: error: " << e.what() << "\n";
            return 2;
        }
        return 0;
    }
    // The accelerator's arrays are square: its ARRAY_SIZE register reads one side, N, which drivers
    // use to plan their tiles (docs/accelerator.md). RxC is accepted in the form NxN only.
    std::size_t array = 0;
    try {
        std::int64_t rows = 0, cols = 0;
        tb::parse_array_shape("--array", array_text, rows, cols);
        if (rows != cols)
            throw tb::usage_error("--array " + tb::array_shape_text(rows, cols) +
                                  ": the accelerator's arrays are square (its ARRAY_SIZE register reads N); "
                                  "give N (systolic-tb and systolic-run model RxC arrays)");
        if (rows < 1 || rows > 1024)
            throw tb::usage_error("--array must be between 1 and 1024, got " + std::to_string(rows));
        array = std::size_t(rows);
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

    // The script is read as every input is; every output is checked, and its temporary created,
    // before the platform starts.
    vp::cpu::config cc;
    cc.array_size = array;
    std::vector<vp::command> script;
    io::output_set files;
    const std::string vcd_file = vcd_path.empty() ? "" : vcd_path + ".vcd";  // NAME without its extension
    try {
        const vp::ram_window ram{cc.ram_base, cc.ram_size};
        script = script_path.empty() ? vp::parse_script(vp::default_script, "default.vps", ram)
                                     : vp::parse_script(io::read_text_file(script_path), script_path, ram);
        files.add_input({"--script", script_path});
        if (!c_dir.empty()) {
            files.make_directory({"--c-out", c_dir});
            plan_c_files(script, script_path.empty() ? "default.vps" : script_path, c_dir, files);
        }
        if (!json_path.empty()) files.add({"--json", json_path});
        if (!vcd_file.empty()) files.add({"--vcd", vcd_file});
        if (!trace_path.empty()) files.add({"--trace", trace_path});
    } catch (const vp::script_error& e) {
        std::cerr << "systolic-vp: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {  // io_error, usage_error
        std::cerr << "systolic-vp: error: " << tb::one_line(e.what()) << "\n";
        return 2;
    }

    accelerator::config ac;
    ac.array_size = array;
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    platform vp("vp", cc, ac, std::move(script), std::cout);
    std::cout << "systolic-vp: RAM at 0x" << std::hex << cc.ram_base << ", accelerator registers at 0x"
              << cc.regs_base << std::dec << ", " << array << "x" << array << " array\n";
    // The waveform and the timeline stream into their temporaries while the platform runs.
    std::unique_ptr<observe::file_sink> vcd_sink, trace_sink;
    std::unique_ptr<observe::vcd_writer> vcd;
    std::unique_ptr<observe::trace_file> trace;
    std::optional<observe::accelerator_observers> waves;
    try {
        if (!vcd_file.empty()) {
            vcd_sink = std::make_unique<observe::file_sink>(files.stream(vcd_file), vcd_file);
            vcd = std::make_unique<observe::vcd_writer>(*vcd_sink);
            vcd->set_version("systolic-vp");
        }
        if (!trace_path.empty()) {
            trace_sink = std::make_unique<observe::file_sink>(files.stream(trace_path), trace_path);
            trace = std::make_unique<observe::trace_file>(*trace_sink, "systolic-vp");
        }
    } catch (const std::exception& e) {  // io_error
        std::cerr << "systolic-vp: error: " << tb::one_line(e.what()) << "\n";
        return 2;
    }
    if (vcd || trace)
        waves.emplace(vp.accel, vcd.get(), observe::parse_pe_selection(std::nullopt, array, array),
                      trace.get());
    if (vcd) {
        vp.trace_irq(*vcd);
        vcd->end_definitions();
    }
    sc_core::sc_start();
    vp.checks.finish();
    if (waves) waves->finish(sc_core::sc_time_stamp());
    waves.reset();
    for (const auto& v : vp.violations)
        std::cout << "protocol violation: " << v << "\n";
    for (const auto& line : vp.checks.failures())
        std::cout << "FAIL passive check: " << io::printable(line) << "\n";

    const auto& jobs = vp.cpu.jobs();
    int failed_jobs = 0, refusals = 0;
    for (const auto& j : jobs) {
        failed_jobs += !j.pass;
        refusals += j.expected != "ok";
    }
    const std::uint64_t violations = vp.violations.size() + vp.cpu.dma_protocol_violations();
    // The script's failures and the passive checker's (a START the script wrote itself).
    const std::uint64_t failures = std::uint64_t(vp.cpu.failures()) + vp.checks.failures().size();
    const bool pass = vp.cpu.finished() && failures == 0 && vp.cpu.checks() > 0 && violations == 0;
    std::cout << "systolic-vp: " << jobs.size() << " jobs (" << refusals << " expected to fail), "
              << vp.cpu.checks() << " checks, " << failures << " failures, simulated time "
              << tb::format_time(sc_core::sc_time_stamp()) << ", "
              << vp.cpu_checker.checked() + vp.checks.transactions_checked() << " bus transactions checked, "
              << violations << " protocol violations\n"
              << (pass ? "PASS" : "FAIL") << std::endl;

    try {
        if (vcd)
            if (const std::string err = vcd->finish(); !err.empty()) throw std::runtime_error(err);
        if (trace) {
            trace->finish();
            if (const std::string err = trace_sink->finish(); !err.empty()) throw std::runtime_error(err);
        }
        std::string report;
        std::deque<std::string> c_headers;  // stable: files holds views of them
        if (!c_dir.empty())
            for (const auto& j : jobs)
                if (!j.c.empty()) {
                    const std::string path = (std::filesystem::path(c_dir) / (j.name + ".npy")).string();
                    files.set(path,
                              {c_headers.emplace_back(io::npy_header(path, j.c_descr, j.m, j.p)),
                               std::string_view(reinterpret_cast<const char*>(j.c.data()), j.c.size())});
                }
        if (!json_path.empty()) {
            nlohmann::json r = {
                {"array", array}, {"pass", pass}, {"failures", failures}, {"jobs", nlohmann::json::array()}};
            for (const auto& j : jobs) {
                nlohmann::json job =
                    io::job_json({j.m, j.k, j.p, j.edges, j.macs, j.macs_real, {}, {}, {}, {}});
                job.update({{"name", j.name},
                            {"dtype", j.dtype},
                            {"expected", j.expected},
                            {"outcome", j.outcome},
                            {"pass", j.pass},
                            {"message", j.message},
                            {"cycles", j.cycles}});
                r["jobs"].push_back(job);
            }
            report = r.dump(2) + "\n";
            files.set(json_path, {report});
        }
        files.prepare();
        io::flush_stdout();
        files.commit();
    } catch (const std::exception& e) {
        std::cerr << "systolic-vp: error: " << tb::one_line(e.what()) << "\n";
        return 2;
    }
    return pass ? 0 : 1;
}

int main(int argc, char* argv[]) {
    if (const int status = systolic::io::start("systolic-vp"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
