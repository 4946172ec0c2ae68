// systolic-vp: an example virtual platform around the accelerator.
//   cpu (runs a job script) --+--> bus : router --> ram : memory      at 0x80000000
//   accel.dma ----------------+                 --> accel.regs         at 0x40000000
//   accel.irq -----------------------------------> cpu.irq
// Without --script it runs the default script (vp/scripts/default.vps, built in). Exit status: 0
// when every check passed, 1 when one failed, 2 for bad usage or a bad script.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <systolic/accelerator_regs.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <systemc>

#include "cli_options.h"
#include "cli_suggest.h"
#include "cpu.h"
#include "job_script.h"
#include "npy.h"
#include "protocol_checker.h"
#include "report.h"
#include "router.h"
#include "systolic/accelerator.h"
#include "systolic/log.h"
#include "systolic/memory.h"
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
    vp::cpu cpu;
    // Both initiators reach the bus through a TLM-2.0 base-protocol checker.
    tb::protocol_checker cpu_checker;
    tb::protocol_checker dma_checker;
    sc_core::sc_signal<bool> irq;
    std::vector<std::string> violations;

    platform(const sc_core::sc_module_name& name, const vp::cpu::config& cc, const accelerator::config& ac,
             std::vector<vp::command> script, std::ostream& out)
        : sc_core::sc_module(name),
          bus("bus"),
          ram("ram", memory::config{0, cc.ram_size}),
          accel("accel", ac),
          cpu("cpu", cc, std::move(script), out),
          cpu_checker("cpu_checker"),
          dma_checker("dma_checker"),
          irq("irq") {
        cpu.initiator_socket.bind(cpu_checker.target_socket);
        cpu_checker.initiator_socket.bind(bus.target_socket);
        accel.dma.bind(dma_checker.target_socket);
        dma_checker.initiator_socket.bind(bus.target_socket);
        for (auto* c : {&cpu_checker, &dma_checker})
            c->on_violation([this](const std::string& v) { violations.push_back(v); });
        bus.initiator_socket.bind(ram.target_socket);  // port 0
        bus.initiator_socket.bind(accel.regs);         // port 1
        bus.map(cc.ram_base, cc.ram_size, 0, "ram");
        bus.map(cc.regs_base, SYSTOLIC_REGS_SIZE, 1, "accel.regs");
        accel.irq.bind(irq);
        cpu.irq.bind(irq);
    }
};

std::string slurp(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw vp::script_error("cannot read " + path);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
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
    std::string vcd_path;
    app.add_option("--vcd", vcd_path, "trace the interrupt line to FILE.vcd (GTKWave)");
    app.add_option("--log-level", log_level, "trace, debug, info, warn (default), error, critical, off");
    bool print_default = false;
    app.add_flag("--print-default-script", print_default, "print the built-in script and exit");
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        std::cerr << "systolic-vp: error: " << tb::one_line(tb::parse_error_text(app, e)) << "\n";
        return 2;
    }
    if (print_default) {
        std::cout << vp::default_script;
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

    std::vector<vp::command> script;
    try {
        script = script_path.empty() ? vp::parse_script(vp::default_script, "default.vps")
                                     : vp::parse_script(slurp(script_path), script_path);
    } catch (const vp::script_error& e) {
        std::cerr << "systolic-vp: " << e.what() << "\n";
        return 2;
    }

    vp::cpu::config cc;
    cc.array_size = array;
    accelerator::config ac;
    ac.array_size = array;
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    platform vp("vp", cc, ac, std::move(script), std::cout);
    std::cout << "systolic-vp: RAM at 0x" << std::hex << cc.ram_base << ", accelerator registers at 0x"
              << cc.regs_base << std::dec << ", " << array << "x" << array << " array\n";
    sc_core::sc_trace_file* vcd = nullptr;
    if (!vcd_path.empty()) {
        vcd = sc_core::sc_create_vcd_trace_file(vcd_path.c_str());  // SystemC appends ".vcd"
        vcd->set_time_unit(1, sc_core::SC_NS);
        sc_core::sc_trace(vcd, vp.irq, "irq");
    }
    sc_core::sc_start();
    if (vcd) sc_core::sc_close_vcd_trace_file(vcd);
    for (const auto& v : vp.violations)
        std::cout << "protocol violation: " << v << "\n";

    const auto& jobs = vp.cpu.jobs();
    int failed_jobs = 0, refusals = 0;
    for (const auto& j : jobs) {
        failed_jobs += !j.pass;
        refusals += j.expected != "ok";
    }
    const bool pass =
        vp.cpu.finished() && vp.cpu.failures() == 0 && vp.cpu.checks() > 0 && vp.violations.empty();
    std::cout << "systolic-vp: " << jobs.size() << " jobs (" << refusals << " expected to fail), "
              << vp.cpu.checks() << " checks, " << vp.cpu.failures() << " failures, simulated time "
              << tb::format_time(sc_core::sc_time_stamp()) << ", "
              << vp.cpu_checker.checked() + vp.dma_checker.checked() << " bus transactions checked, "
              << vp.violations.size() << " protocol violations\n"
              << (pass ? "PASS" : "FAIL") << std::endl;

    try {
        if (!c_dir.empty()) {
            std::filesystem::create_directories(c_dir);
            for (const auto& j : jobs)
                if (!j.c.empty())
                    tb::write_npy((std::filesystem::path(c_dir) / (j.name + ".npy")).string(), j.c_descr, j.m,
                                  j.p, j.c.data(), j.c.size());
        }
        if (!json_path.empty()) {
            nlohmann::json r = {{"array", array},
                                {"pass", pass},
                                {"failures", vp.cpu.failures()},
                                {"jobs", nlohmann::json::array()}};
            for (const auto& j : jobs)
                r["jobs"].push_back({{"name", j.name},
                                     {"dtype", j.dtype},
                                     {"m", j.m},
                                     {"k", j.k},
                                     {"p", j.p},
                                     {"expected", j.expected},
                                     {"outcome", j.outcome},
                                     {"pass", j.pass},
                                     {"message", j.message},
                                     {"advance_edges", j.edges},
                                     {"macs_padded", j.macs},
                                     {"macs_real", j.macs_real},
                                     {"cycles", j.cycles}});
            tb::write_file_atomically(json_path, r.dump(2) + "\n");
        }
    } catch (const std::exception& e) {
        std::cerr << "systolic-vp: " << e.what() << "\n";
        return 2;
    }
    return pass ? 0 : 1;
}

int main(int argc, char* argv[]) {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
