// systolic-vp: an example virtual platform around the accelerator.
//   cpu (runs a job script) -------------------+--> bus : router --> ram : memory               at 0x80000000
//   accel.dma --> checks (passive checker) -----+                 --> checks --> accel.regs   at 0x40000000
//   accel.irq ------------------------------------------------------> cpu.irq
// The verification environment in the DMA path checks every job the CPU starts: a `job` command's
// through the register DUT (cpu.h), and any other START the script writes passively.
// Without --script it runs the default script (vp/scripts/default.vps, built in). Exit status: 0
// when every check passed, 1 when one failed, 2 for bad usage or a bad script.
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <systemc>

#include "accelerator_pricing.h"
#include "cli_values.h"
#include "io/input_file.h"
#include "io/job_json.h"
#include "io/npy.h"
#include "io/output_set.h"
#include "io/process.h"
#include "io/text.h"
#include "job_script.h"
#include "observer_outputs.h"
#include "platform.h"
#include "systolic/log.h"
#include "time_text.h"
#include "vp_options.h"

namespace {

using namespace systolic;

// --c-out DIR names each job's C file after the job, so a name must be a file name (no '/') and
// given to one job only. Every file is planned before the platform starts.
void plan_c_files(const std::vector<vp::command>& script, const std::string& script_name,
                  const std::string& dir, io::output_set& files) {
    std::map<std::string, int> lines;
    for (const auto& c : script) {
        if (c.verb != vp::verb::job || c.args.empty()) continue;
        const std::string& name = c.args[0];
        const std::string where =
            script_name + ":" + std::to_string(c.line) + ": job name '" + io::printable(name) + "'";
        if (name.find_first_of(std::string("/\0", 2)) != std::string::npos)
            throw cli::usage_error(where + " cannot name a file under --c-out (it holds a '/' or a NUL)");
        if (!lines.emplace(name, c.line).second)
            throw cli::usage_error(where + " is also on line " + std::to_string(lines[name]) +
                                   "; --c-out names each job's file after its job");
        files.add({"--c-out", (std::filesystem::path(dir) / (name + ".npy")).string()});
    }
}

// Reads the script as every input is read, and checks every output and creates its temporary,
// so that bad usage ends before the platform starts. Throws script_error, io_error or usage_error.
std::vector<vp::command> read_and_plan(const vp::vp_options& o, const vp::cpu::config& cc,
                                       io::output_set& files, cli::observer_outputs& waves) {
    const vp::ram_window ram{cc.ram_base, cc.ram_size};
    auto script = o.script_path.empty()
                      ? vp::parse_script(vp::default_script, "default.vps", ram)
                      : vp::parse_script(io::read_text_file(o.script_path), o.script_path, ram);
    files.add_input({"--script", o.script_path});
    if (!o.c_dir.empty()) {
        files.make_directory({"--c-out", o.c_dir});
        plan_c_files(script, o.script_path.empty() ? "default.vps" : o.script_path, o.c_dir, files);
    }
    if (!o.json_path.empty()) files.add({"--json", o.json_path});
    waves.plan(files);
    return script;
}

struct verdict {
    bool pass = false;
    std::uint64_t failures = 0;  // the script's and the passive checker's (a START the script wrote)
};

// Prints what the checks found, then the summary line and PASS or FAIL.
verdict report_run(vp::platform& vp) {
    for (const auto& v : vp.violations)
        std::cout << "protocol violation: " << v << "\n";
    for (const auto& line : vp.accel.failures())
        std::cout << "FAIL passive check: " << io::printable(line) << "\n";
    const auto& jobs = vp.cpu.jobs();
    int refusals = 0;
    for (const auto& j : jobs)
        refusals += !j.expected.ok();
    const std::uint64_t violations = vp.violations.size() + vp.cpu.dma_protocol_violations();
    verdict v;
    v.failures = std::uint64_t(vp.cpu.failures()) + vp.accel.failures().size();
    v.pass = vp.cpu.finished() && v.failures == 0 && vp.cpu.checks() > 0 && violations == 0;
    std::cout << "systolic-vp: " << jobs.size() << " jobs (" << refusals << " expected to fail), "
              << vp.cpu.checks() << " checks, " << v.failures << " failures, simulated time "
              << cli::format_time(sc_core::sc_time_stamp()) << ", "
              << vp.cpu_checker.checked() + vp.accel.bus_transactions_checked()
              << " bus transactions checked, " << violations << " protocol violations\n"
              << (v.pass ? "PASS" : "FAIL") << std::endl;
    return v;
}

// Each job's C under --c-out and the JSON report, into the output set; `texts` holds what the set
// views until it commits.
void set_results(const vp::vp_options& o, vp::platform& vp, const verdict& v, io::output_set& files,
                 std::deque<std::string>& texts) {
    const auto& jobs = vp.cpu.jobs();
    if (!o.c_dir.empty())
        for (const auto& j : jobs)
            if (!j.c.empty()) {
                const std::string path = (std::filesystem::path(o.c_dir) / (j.name + ".npy")).string();
                files.set(path, {texts.emplace_back(io::npy_header(path, j.c_descr, j.m, j.p)),
                                 std::string_view(reinterpret_cast<const char*>(j.c.data()), j.c.size())});
            }
    if (o.json_path.empty()) return;
    nlohmann::json r = {
        {"array", o.array}, {"pass", v.pass}, {"failures", v.failures}, {"jobs", nlohmann::json::array()}};
    for (const auto& j : jobs) {
        std::optional<io::scoreboard_counts> sb;
        if (j.scoreboard) sb = io::scoreboard_counts_of(*j.scoreboard);
        nlohmann::json job = io::job_json({j.m, j.k, j.p, j.edges, j.macs, j.macs_real, {}, {}, {}, sb});
        job.update({{"name", j.name},
                    {"dtype", j.dtype},
                    {"expected", j.expected.name()},
                    {"outcome", j.outcome.name()},
                    {"pass", j.pass},
                    {"message", j.message},
                    {"cycles", j.cycles}});
        if (j.energy_pj) job["energy_pj"] = *j.energy_pj;
        r["jobs"].push_back(job);
    }
    files.set(o.json_path, {texts.emplace_back(r.dump(2) + "\n")});
}

int fail(const std::exception& e) {
    std::cerr << "systolic-vp: error: " << cli::one_line(e.what()) << "\n";
    return 2;
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    vp::vp_options o;
    if (const auto status = vp::parse_options(argc, argv, o)) return *status;
    vp::cpu::config cc;
    cc.array_size = o.array;
    io::output_set files;
    cli::observer_outputs waves(o.outputs, "systolic-vp");
    std::vector<vp::command> script;
    try {
        script = read_and_plan(o, cc, files, waves);
    } catch (const vp::script_error& e) {
        std::cerr << "systolic-vp: " << e.what() << "\n";
        return 2;
    } catch (const std::exception& e) {  // io_error, usage_error
        return fail(e);
    }

    accelerator::config ac;
    ac.array_size = o.array;
    ac.memory = o.memory;
    if (o.energy.table) {  // read and tried before anything runs: a bad table is one line, exit 2
        try {
            ac.price = components::accelerator_pricing(
                components::load_accelerator_table(*o.energy.table, o.energy.tech_node), o.energy.tech_node);
        } catch (const std::exception& e) {  // energy_error
            return fail(e);
        }
        cc.read_energy = true;
    }
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    vp::platform vp("vp", cc, ac, std::move(script), std::cout);
    std::cout << "systolic-vp: RAM at 0x" << std::hex << cc.ram_base << ", accelerator registers at 0x"
              << cc.regs_base << std::dec << ", " << o.array << "x" << o.array << " array\n";
    try {  // the waveform and the timeline stream into their temporaries while the platform runs
        waves.open(files);
    } catch (const std::exception& e) {  // io_error
        return fail(e);
    }
    waves.watch(vp.accel.dut, o.array, [&](observe::vcd_writer& w) { vp.trace_irq(w); });
    sc_core::sc_start();
    vp.accel.finish();
    waves.stop(sc_core::sc_time_stamp());
    const verdict v = report_run(vp);
    try {
        waves.finish(files);
        std::deque<std::string> texts;
        set_results(o, vp, v, files, texts);
        files.prepare();
        io::flush_stdout();
        files.commit();
    } catch (const std::exception& e) {
        return fail(e);
    }
    return v.pass ? 0 : 1;
}

int main(int argc, char* argv[]) {
    if (const int status = systolic::io::start("systolic-vp"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
