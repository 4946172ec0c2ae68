// systolic-run: every layer of a SCALE-Sim topology on the systolic array model, each checked by
// the scoreboard, with SCALE-Sim-style reports. Sweeps over array sizes and dataflows run in this
// process (one testbench per size, all built before the first sc_start, each running every
// dataflow) or, with --jobs J, as J local processes of one (layer, array, dataflow) job each, merged
// into the same reports. --emit-jobs prints those job lines
// for a cluster, and --merge combines their files. Exit status: 0 every layer passed, 1 a layer
// failed its checks, 2 bad usage or bad input (one line on stderr, no report written).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <systemc>
#include <vector>

#include "allocating.h"
#include "cli_options.h"
#include "io/npy.h"
#include "io/output_set.h"
#include "io/process.h"
#include "memory_estimate.h"
#include "progress.h"
#include "run_options.h"
#include "run_report.h"
#include "runner.h"
#include "scale_config.h"
#include "systolic/energy/price.h"
#include "systolic/energy/table.h"
#include "systolic/log.h"
#include "systolic/verify/memory_plan.h"
#include "topology.h"

namespace {

namespace fs = std::filesystem;
using namespace systolic;
using namespace systolic::run;
using cli::usage_error;

constexpr int exit_pass = 0;
constexpr int exit_fail = 1;
constexpr int exit_usage = 2;

// One (array, dataflow, layer) job of a run.
struct job_spec {
    array_shape array;
    dataflow_kind dataflow;
    const layer* l;
};

std::string id_of(const job_spec& j) {
    return job_id(j.array, j.dataflow, j.l->id);
}

// The PE-updates of a job: the weight the progress bar gives it.
double job_work(const job_spec& j) {
    const auto c = count_job(j.l->gemm, j.array, 0, j.dataflow);
    return double(c.advance_edges + c.preload_edges) * double(j.array.pes());
}

// Arrays as keys of the maps of testbenches.
std::pair<std::uint64_t, std::uint64_t> key_of(const array_shape& a) {
    return {a.rows, a.cols};
}

struct plan {
    topology topo;
    std::vector<array_shape> arrays;
    std::vector<dataflow_kind> dataflows;
    run_settings settings;
    std::vector<job_spec> jobs;  // in report order: arrays as given, then dataflows as given, then layers
};

std::string dataflow_list(const std::vector<dataflow_kind>& dataflows) {
    std::string out;
    for (const auto df : dataflows)
        out += (out.empty() ? "" : ",") + std::string(to_string(df));
    return out;
}

plan make_plan(const run_cli& o) {
    plan p;
    p.settings.run = o.run;
    try {
        p.topo =
            tb::allocating("reading --topology " + o.topology, [&] { return read_topology(o.topology); });
    } catch (const topology_error& e) {
        throw usage_error(e.what());
    }
    if (o.config) {
        // SCALE-Sim double-buffers its SRAMs; its words are our operands.
        scale_config c;
        try {
            c = read_scale_config(*o.config, max_array);
        } catch (const config_error& e) {
            throw usage_error(e.what());
        }
        p.arrays = {c.array};
        p.dataflows = {c.dataflow};
        const std::uint64_t word =
            with_format(o.dtype, [](auto format) { return sizeof(typename decltype(format)::operand_type); });
        p.settings.run.memory = memory_of(c, word);
        memory_settings& m = p.settings.memory_record;
        // Its file name only: a record names no path, so that where a job ran changes no byte.
        m.config = fs::path(*o.config).filename().string();
        m.buffers = p.settings.run.memory.buffers;
        m.interface_bandwidth = to_string(c.mode);
        m.a_sram = p.settings.run.memory.a_sram;
        m.b_sram = p.settings.run.memory.b_sram;
        m.c_sram = p.settings.run.memory.c_sram;
        m.dram_bandwidth = std::uint64_t(p.settings.run.memory.dram_bandwidth);
    } else {
        p.arrays = o.sweep ? read_sweep_file(*o.sweep) : parse_array_list(o.array, "--array");
        p.dataflows = o.dataflows;
    }
    for (const auto df : p.dataflows)
        if (!verify::fault_applies(o.inject, df))
            throw usage_error(std::string("--inject ") + to_string(o.inject) +
                              " does not exist in dataflow " + to_string(df));
    p.settings.topology = p.topo.name;
    p.settings.layers_in_topology = p.topo.layers.size();
    for (const auto& a : p.arrays)
        p.settings.sweep.push_back(array_name(a));
    p.settings.dataflows = p.dataflows;
    p.settings.dtype = o.dtype;
    // --energy's table, read and tried on the run's format and node before anything runs: a file
    // that is no table, a format it does not price or a node outside the scaling's fit is one line
    // (energy_error, exit 2), as in systolic-tb.
    if (o.energy.table) {
        p.settings.energy_table = energy::load_table(*o.energy.table);
        p.settings.tech_node = o.energy.tech_node;
        energy::check_table(*p.settings.energy_table, o.energy.tech_node, o.dtype);
    }
    p.settings.seed = o.seed;
    p.settings.inject = o.inject;
    if (o.data) {
        p.settings.data_dir = *o.data;
        struct stat st {};
        if (::stat(o.data->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            throw usage_error("--data " + *o.data + " is not a directory");
        std::map<std::string, std::uint64_t> names;
        for (const auto& l : p.topo.layers) {
            if (l.name.find('/') != std::string::npos)
                throw usage_error(o.topology + ":" + std::to_string(l.line) + ": layer name '" +
                                  cli::one_line(l.name) + "' cannot name a file under --data");
            if (!names.emplace(l.name, l.line).second)
                throw usage_error(o.topology + ":" + std::to_string(l.line) + ": layer name '" +
                                  cli::one_line(l.name) + "' is also on line " +
                                  std::to_string(names[l.name]) + "; --data names files by layer");
        }
    }
    if (o.expect) {
        p.settings.expect_dir = *o.expect;
        struct stat st {};
        if (::stat(o.expect->c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
            throw usage_error("--expect " + *o.expect + " is not a directory");
    }
    for (const auto& a : p.arrays)
        for (const auto df : p.dataflows)
            for (const auto& l : p.topo.layers)
                p.jobs.push_back({a, df, &l});
    if (o.job) {
        const job_ref j = parse_job(*o.job);
        if (std::find(p.arrays.begin(), p.arrays.end(), j.array) == p.arrays.end())
            throw usage_error("--job " + *o.job + ": " + array_name(j.array) + " is not in the sweep");
        // RxC:ID names the job of a run of one dataflow; with more, the ID must say which.
        if (!j.dataflow && p.dataflows.size() > 1)
            throw usage_error("--job " + *o.job + ": the run has dataflows " + dataflow_list(p.dataflows) +
                              "; name one (RxC:DF:ID)");
        const dataflow_kind df = j.dataflow ? *j.dataflow : p.dataflows.front();
        if (std::find(p.dataflows.begin(), p.dataflows.end(), df) == p.dataflows.end())
            throw usage_error("--job " + *o.job + ": dataflow " + to_string(df) + " is not in the run (" +
                              dataflow_list(p.dataflows) + ")");
        if (j.layer >= p.topo.layers.size())
            throw usage_error("--job " + *o.job + ": the topology has layers 0 to " +
                              std::to_string(p.topo.layers.size() - 1));
        p.jobs = {{j.array, df, &p.topo.layers[j.layer]}};
    }
    return p;
}

// Per job of a run, what stays until the reports are written: its record and its share of the
// plan (measured: 18.5 to 19 KiB per job with 10 000 and 60 000 jobs of a 1x1x1 GEMM).
constexpr std::uint64_t job_record_bytes = 18 << 10;

// Refuses a run whose process is estimated to need more than the limit, before anything runs. In
// one process every array size's testbench is alive at once (SystemC elaborates once), each with
// the memory of its largest job, beside the largest job's own buffers and every job's record.
// With one process per job (--jobs), each child holds one job; this process, the records.
template <class Format>
void check_memory(const plan& p, const run_cli& o, bool one_process) {
    tb::memory_budget budget;
    budget.limit = o.max_memory ? *o.max_memory : tb::default_memory_limit();
    budget.limit_given = bool(o.max_memory);
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::uint64_t> benches;
    std::uint64_t process = 0, largest_job = 0;
    for (const auto& j : p.jobs) {
        tb::memory_job mj;
        mj.m = j.l->gemm.m;
        mj.k = j.l->gemm.k;
        mj.p = j.l->gemm.p;
        mj.rows = j.array.rows;
        mj.cols = j.array.cols;
        mj.operand_bytes = sizeof(typename Format::operand_type);
        mj.file_bytes = p.settings.data_dir.empty() ? 0 : (Format::is_integer ? mj.operand_bytes : 4);
        mj.accumulator_bytes = mj.output_bytes = sizeof(typename Format::accumulator_type);
        tb::describe_engine<Format>(mj, 1);
        const auto est = tb::estimate_memory(mj);
        const std::string what = "layer " + std::to_string(j.l->id) + " (" + cli::one_line(j.l->name) +
                                 ") on " + array_name(j.array);
        budget.estimate = est.total;
        if (const std::string refusal = tb::memory_refusal(what, "", budget); !refusal.empty())
            throw usage_error(refusal);
        process = est.process;
        std::uint64_t& bench = benches[key_of(j.array)];
        bench = std::max(bench, est.bench);
        largest_job = std::max(largest_job, est.job);
    }
    const double records = double(p.jobs.size()) * double(job_record_bytes);
    double total = double(process) + double(largest_job) + records;
    if (one_process)
        for (const auto& b : benches)
            total += double(b.second);
    budget.estimate = total >= 0x1p64 ? ~std::uint64_t{0} : std::uint64_t(total);
    const std::string what = one_process ? "the run (" + std::to_string(benches.size()) +
                                               (benches.size() == 1 ? " testbench, " : " testbenches, ") +
                                               std::to_string(p.jobs.size()) + " jobs, in one process)"
                                         : "the run's " + std::to_string(p.jobs.size()) + " job records";
    if (const std::string refusal = tb::memory_refusal(what, "", budget); !refusal.empty())
        throw usage_error(refusal);
    tb::set_memory_budget(budget);
}

// Runs the plan's jobs in this process: one testbench per array size, all built first.
template <class Format>
std::vector<layer_record> run_here(const plan& p, bool progress) {
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(10, sc_core::SC_US));
    using key = std::pair<std::uint64_t, std::uint64_t>;
    verify::testbench_set<Format> benches;
    std::map<key, std::unique_ptr<layer_runner<Format>>> runners;
    for (const auto& j : p.jobs) {
        const key k = key_of(j.array);
        if (runners.count(k)) continue;
        typename verify::testbench<Format>::config cfg;
        cfg.rows = j.array.rows;
        cfg.cols = j.array.cols;
        // "tb_32" for a square array, as before; "tb_12x14" otherwise.
        const std::string name =
            "tb_" + (j.array.rows == j.array.cols ? std::to_string(j.array.rows) : array_name(j.array));
        runners[k] = std::make_unique<layer_runner<Format>>(benches.add(name, cfg));
    }
    double total = 0;
    for (const auto& j : p.jobs)
        total += job_work(j);
    progress_bar bar(progress, total);
    std::vector<layer_record> records;
    double done = 0;
    for (std::size_t i = 0; i < p.jobs.size(); ++i) {
        const job_spec& j = p.jobs[i];
        const double work = job_work(j);
        const std::uint64_t tiles = count_job(j.l->gemm, j.array, 0, j.dataflow).tiles;
        std::ostringstream head;
        head << "job " << i + 1 << "/" << p.jobs.size() << ": layer " << j.l->id << " " << j.l->name << " on "
             << array_name(j.array) << " " << to_string(j.dataflow);
        layer_runner<Format>& runner = *runners[key_of(j.array)];
        runner.on_c_write = [&](std::uint64_t writes, std::uint64_t all) {
            if (!bar.enabled() || all == 0) return;
            const double f = double(writes) / double(all);
            bar.update(done + f * work, head.str() + ", tile " +
                                            std::to_string(std::uint64_t(f * double(tiles))) + "/" +
                                            std::to_string(tiles));
        };
        bar.update(done, head.str() + ", preparing", true);
        const verify::problem<Format> pr = tb::allocating(
            "preparing " + head.str(), [&] { return layer_problem<Format>(*j.l, p.settings); });
        records.push_back(
            tb::allocating(head.str(), [&] { return runner.run(*j.l, p.settings, j.dataflow, pr); }));
        done += work;
    }
    bar.finish();
    return records;
}

// What a job would refuse (memory, data files), checked for every job before any output exists,
// so that a bad input is one line from this process and not one per job.
template <class Format>
void check_jobs(const plan& p, const run_cli& o, bool one_process) {
    check_memory<Format>(p, o, one_process);
    if (o.config)
        for (const auto& j : p.jobs) {
            verify::job_options opt;
            opt.run = p.settings.run;
            opt.run.dataflow = j.dataflow;
            const std::uint64_t operand = sizeof(typename Format::operand_type),
                                acc = sizeof(typename Format::accumulator_type);
            const matmul_job job = verify::plan_memory(j.l->gemm, opt, 0, operand, acc);
            if (const std::string bad =
                    systolic::check_memory(opt.run.memory, job, j.array.rows, j.array.cols, operand, acc);
                !bad.empty())
                throw usage_error("--config " + *o.config + ": layer " + std::to_string(j.l->id) + " (" +
                                  cli::one_line(j.l->name) + ") on " + array_name(j.array) + " in " +
                                  to_string(j.dataflow) + ": " + bad);
        }
    if (!p.settings.data_dir.empty())
        for (const auto& j : p.jobs)
            check_data_files<Format>(*j.l, p.settings.data_dir);
    if (!p.settings.expect_dir.empty())
        for (const auto& j : p.jobs)
            check_expected_file<Format>(*j.l, p.settings.expect_dir);
}

// One process runs every job unless --jobs spreads them over several (run_main decides alike).
bool runs_in_one_process(const plan& p, const run_cli& o) {
    return o.job || !(o.jobs > 1 && p.jobs.size() > 1);
}

void check_inputs(const plan& p, const run_cli& o) {
    const bool one = runs_in_one_process(p, o);
    with_format(o.dtype, [&](auto format) { check_jobs<decltype(format)>(p, o, one); });
}

std::vector<layer_record> run_in_process(const plan& p, const run_cli& o, bool progress) {
    return with_format(o.dtype, [&](auto format) { return run_here<decltype(format)>(p, progress); });
}

std::string self_exe() {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) throw usage_error("cannot find this executable's path (/proc/self/exe)");
    return std::string(buf, std::size_t(n));
}

std::string absolute(const std::string& path) {
    std::error_code ec;
    const fs::path a = fs::absolute(path, ec);
    return ec ? path : a.lexically_normal().string();
}

// The arguments of one job's command: every setting spelled out, every path absolute, so that the
// line runs the same from any directory on any host that sees the same files.
std::vector<std::string> job_args(const plan& p, const run_cli& o, const job_spec& j,
                                  const std::string& dir) {
    std::string arrays;
    for (const auto& a : p.arrays)
        arrays += (arrays.empty() ? "" : ",") + array_name(a);
    std::vector<std::string> a = {
        self_exe(),
        "--topology",
        absolute(o.topology),
        o.config ? "--config" : "--array",
        o.config ? absolute(*o.config) : arrays,
        "--dtype",
        to_string(o.dtype),
        "--engine",
        to_string(o.run.engine),
        "--job",
        id_of(j),
        "--job-out",
        absolute((fs::path(dir) / job_file_name(j.array, j.dataflow, j.l->id)).string()),
        "--no-progress"};
    // The configuration gives the dataflow; otherwise the run's list, so that every record names it.
    if (!o.config) a.insert(a.begin() + 5, {"--dataflow", dataflow_list(p.dataflows)});
    if (o.data)
        a.insert(a.end(), {"--data", absolute(*o.data)});
    else
        a.insert(a.end(), {"--seed", std::to_string(o.seed)});
    if (o.expect) a.insert(a.end(), {"--expect", absolute(*o.expect)});
    if (o.max_memory) a.insert(a.end(), {"--max-memory", std::to_string(*o.max_memory)});
    if (o.log_level != "warn") a.insert(a.end(), {"--log-level", o.log_level});
    if (o.inject != verify::fault::none) a.insert(a.end(), {"--inject", to_string(o.inject)});
    if (o.energy.table) {
        // A table file by its absolute path, a shipped table by its name.
        std::error_code ec;
        a.insert(a.end(),
                 {"--energy", fs::exists(*o.energy.table, ec) ? absolute(*o.energy.table) : *o.energy.table});
        if (o.energy.tech_node) {
            std::ostringstream nm;
            nm.precision(17);
            nm << o.energy.tech_node;
            a.insert(a.end(), {"--tech-node", nm.str()});
        }
    }
    return a;
}

std::string first_line_of(const std::string& path) {
    std::ifstream in(path);
    std::string line, last;
    while (std::getline(in, line))
        if (!line.empty()) return line;
    return "no message";
}

// Removes a directory tree when it goes out of scope.
struct scratch_dir {
    std::string path;
    ~scratch_dir() {
        std::error_code ec;
        if (!path.empty()) fs::remove_all(path, ec);
    }
};

// The job processes, for the signal handler: SIGTERM, SIGINT or SIGHUP to systolic-run goes to
// every running job as well; the loop then starts no more, waits for them, removes the scratch
// directory and dies of the same signal. Slots hold a pid or 0 (--jobs is at most 1024).
volatile std::sig_atomic_t g_stop_signal = 0;
volatile pid_t g_job_pids[1024] = {};
using io::stop_signals;

extern "C" void forward_signal(int sig) {
    g_stop_signal = sig;
    for (const pid_t pid : g_job_pids)
        if (pid > 0) ::kill(pid, sig);
}

// Installs forward_signal while the job processes run; the previous handlers come back after.
class signal_forwarding {
public:
    signal_forwarding() {
        struct sigaction sa {};
        sa.sa_handler = forward_signal;
        sigemptyset(&sa.sa_mask);
        for (std::size_t i = 0; i < std::size(stop_signals); ++i)
            ::sigaction(stop_signals[i], &sa, &m_old[i]);
    }
    ~signal_forwarding() {
        for (std::size_t i = 0; i < std::size(stop_signals); ++i)
            ::sigaction(stop_signals[i], &m_old[i], nullptr);
    }
    // Blocks the signals while a job is started and its slot filled, so none is missed.
    static sigset_t block() {
        sigset_t set, old;
        sigemptyset(&set);
        for (int sig : stop_signals)
            sigaddset(&set, sig);
        ::sigprocmask(SIG_BLOCK, &set, &old);
        return old;
    }

private:
    struct sigaction m_old[std::size(stop_signals)];
};

// Runs every job of the plan as its own process, at most `jobs` at once, and reads their files.
std::vector<layer_record> run_in_processes(const plan& p, const run_cli& o, bool progress) {
    scratch_dir scratch;
    scratch.path = (fs::path(*o.out) / (".systolic-run-jobs." + std::to_string(::getpid()))).string();
    std::error_code ec;
    fs::create_directories(scratch.path, ec);
    if (ec) throw usage_error("--out " + *o.out + ": cannot create " + scratch.path + ": " + ec.message());

    double total = 0, done = 0;
    for (const auto& j : p.jobs)
        total += job_work(j);
    progress_bar bar(progress, total);
    std::map<pid_t, std::size_t> running;
    std::size_t next = 0, finished = 0;
    std::string failure;
    g_stop_signal = 0;
    const signal_forwarding forwarding;
    auto label = [&] {
        return std::to_string(finished) + "/" + std::to_string(p.jobs.size()) + " jobs done, " +
               std::to_string(running.size()) + " running";
    };
    while ((next < p.jobs.size() && failure.empty() && !g_stop_signal) || !running.empty()) {
        while (failure.empty() && !g_stop_signal && next < p.jobs.size() && running.size() < o.jobs) {
            const std::size_t i = next++;
            const auto args = job_args(p, o, p.jobs[i], scratch.path);
            const std::string log = scratch.path + "/job-" + std::to_string(i) + ".stderr";
            std::vector<char*> argv;
            for (const auto& a : args)
                argv.push_back(const_cast<char*>(a.c_str()));
            argv.push_back(nullptr);
            const sigset_t unblocked = signal_forwarding::block();
            const pid_t pid = ::fork();
            if (pid < 0) {
                ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
                throw usage_error(std::string("cannot start a job process: ") + std::strerror(errno));
            }
            if (pid == 0) {
                ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
                const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
                const int null = ::open("/dev/null", O_WRONLY);
                if (fd >= 0) ::dup2(fd, STDERR_FILENO);
                if (null >= 0) ::dup2(null, STDOUT_FILENO);
                ::execv(argv[0], argv.data());
                ::_exit(127);
            }
            running[pid] = i;
            for (auto& slot : g_job_pids)
                if (slot == 0) {
                    slot = pid;
                    break;
                }
            ::sigprocmask(SIG_SETMASK, &unblocked, nullptr);
        }
        bar.update(done, label(), true);
        int status = 0;
        const pid_t pid = ::waitpid(-1, &status, 0);
        if (pid < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (auto& slot : g_job_pids)
            if (slot == pid) slot = 0;
        const auto it = running.find(pid);
        if (it == running.end()) continue;
        const std::size_t i = it->second;
        running.erase(it);
        ++finished;
        done += job_work(p.jobs[i]);
        const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code != exit_pass && code != exit_fail && failure.empty()) {
            const job_spec& j = p.jobs[i];
            const std::string why =
                WIFEXITED(status) ? first_line_of(scratch.path + "/job-" + std::to_string(i) + ".stderr")
                                  : "killed by signal " + std::to_string(WTERMSIG(status));
            failure = "job " + id_of(j) + " (" + cli::one_line(j.l->name) + ") failed: " + cli::one_line(why);
        }
    }
    bar.finish();
    if (const int sig = g_stop_signal) {
        std::error_code remove_ec;
        fs::remove_all(scratch.path, remove_ec);
        io::end_by_signal(sig);  // the reports' temporaries too
    }
    if (!failure.empty()) throw usage_error(failure);
    std::vector<layer_record> records;
    for (const auto& j : p.jobs) {
        try {
            records.push_back(read_job_file(
                (fs::path(scratch.path) / job_file_name(j.array, j.dataflow, j.l->id)).string()));
        } catch (const report_error& e) {
            throw usage_error(e.what());
        }
    }
    return records;
}

constexpr const char* report_files[] = {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "TRAFFIC_REPORT.csv",
                                        "report.json"};
// Written beside them only with --energy (records with energy).
constexpr const char* energy_report_file = "ENERGY_REPORT.csv";

std::string report_path(const std::string& out_dir, const char* name) {
    return (fs::path(out_dir) / name).string();
}

// The inputs no output may be.
void add_inputs(io::output_set& files, const run_cli& o) {
    files.add_input({"--topology", o.topology});
    if (o.sweep) files.add_input({"--sweep", *o.sweep});
    if (o.config) files.add_input({"--config", *o.config});
    if (o.data) files.add_input({"--data", *o.data});
    if (o.expect) files.add_input({"--expect", *o.expect});
    if (o.merge) files.add_input({"--merge", *o.merge});
}

// --out (created if missing, never its parents; removed again on failure) and its reports,
// checked after every input.
void plan_reports(io::output_set& files, const std::string& out_dir, bool energy) {
    files.make_directory({"--out", out_dir});
    for (const char* name : report_files)
        files.add({"--out", report_path(out_dir, name)});
    if (energy) files.add({"--out", report_path(out_dir, energy_report_file)});
}

// On stdout: for a single (array size, dataflow) one line per network layer (layer_group: a layer's
// GEMMs, its groups, batch entries or heads, are one line), and last the network's totals; for a
// sweep, the network layers that failed, one line of totals per (array size, dataflow) and last the
// jobs (every job is in the reports). The edges are the array's work: advance edges, and for ws and
// is the preload edges too.
std::string summary(std::vector<layer_record> records) {
    sort_records(records);
    std::ostringstream os;
    const layer_record& first = records.front();
    const bool sweep = first.sweep.size() * first.dataflows.size() > 1;
    // The jobs of each (array, dataflow), in report order.
    std::vector<std::vector<const layer_record*>> series;
    for (const auto& r : records) {
        if (series.empty() || series.back().front()->array_name() != r.array_name() ||
            series.back().front()->dataflow != r.dataflow)
            series.emplace_back();
        series.back().push_back(&r);
    }
    // Each series' network layers and the network's totals.
    std::vector<std::pair<std::vector<layer_totals>, job_totals>> networks;
    for (const auto& jobs : series) {
        job_totals t;
        for (const layer_record* r : jobs)
            t.add(*r);
        networks.emplace_back(network_layers(jobs), t);
    }
    char line[512];
    for (const auto& network : networks)
        for (const layer_totals& l : network.first) {
            const job_totals& t = l.totals;
            if (sweep && t.pass) continue;
            const layer_record& r = *l.gemms.front();
            // A network layer of several GEMMs gives their count and, when they agree, their shape.
            const bool one_shape = std::all_of(l.gemms.begin(), l.gemms.end(), [&](const layer_record* g) {
                return g->m == r.m && g->k == r.k && g->p == r.p;
            });
            std::string shape;
            if (l.gemms.size() > 1)
                shape = std::to_string(l.gemms.size()) + " GEMMs" + (one_shape ? " of " : "");
            if (one_shape)
                shape +=
                    "M=" + std::to_string(r.m) + " K=" + std::to_string(r.k) + " P=" + std::to_string(r.p);
            // With --config, the stalls the memory system cost.
            const std::string stalls =
                r.memory.config.empty() ? "" : ", " + std::to_string(t.stall_cycles) + " stall cycles";
            const std::string preload =
                t.preload_edges ? " (" + std::to_string(t.preload_edges) + " preload)" : std::string();
            std::snprintf(line, sizeof line,
                          "%-9s %-2s %4llu %-24s %s: %llu edges%s, %llu tiles, overall util %.2f%%%s, %s\n",
                          r.array_name().c_str(), to_string(r.dataflow),
                          static_cast<unsigned long long>(r.layer_id),
                          cli::one_line(l.layer).substr(0, 24).c_str(), shape.c_str(),
                          static_cast<unsigned long long>(t.edges()), preload.c_str(),
                          static_cast<unsigned long long>(t.tiles), t.overall_util_percent(), stalls.c_str(),
                          t.pass ? "PASS" : "FAIL");
            os << line;
            // What went wrong, by GEMM (named when the layer has several).
            for (const layer_record* g : l.gemms) {
                const std::string who = l.gemms.size() > 1 ? "  " + cli::one_line(g->layer) + ": " : "  ";
                for (const auto& e : g->scoreboard.errors)
                    os << who << "error: " << e << "\n";
                if (g->expect.result == expect_result::fail)
                    os << who << "expect: " << g->expect.failures << " of " << g->expect.checked
                       << " elements differ from --expect's file, max abs error " << g->expect.max_abs_error
                       << "\n";
                for (const auto& e : g->expect.errors)
                    os << who << "expect: " << e << "\n";
                if (!g->error.empty() && g->scoreboard.errors.empty())
                    os << who << "error: " << g->error << "\n";
            }
        }
    // --energy: the network's energy per (array, dataflow), as report.json's totals give it.
    if (first.energy)
        for (std::size_t i = 0; i < series.size(); ++i) {
            const layer_record& r = *series[i].front();
            const job_totals& t = networks[i].second;
            std::snprintf(line, sizeof line,
                          "%-9s %-2s energy (%s, %g nm): %s, %.4g pJ per MAC, %.4g mm2%s\n",
                          r.array_name().c_str(), to_string(r.dataflow),
                          cli::one_line(first.energy->table).substr(0, 40).c_str(), first.energy->node_nm,
                          energy::energy_text(t.pj).c_str(), t.macs_real ? t.pj / double(t.macs_real) : 0.0,
                          t.mm2, t.priced ? "" : " (a layer stopped: not priced)");
            os << line;
        }
    // The network's totals per (array, dataflow): for a single one, the last line.
    for (std::size_t i = 0; i < series.size(); ++i) {
        const layer_record& r = *series[i].front();
        const job_totals& t = networks[i].second;
        std::snprintf(line, sizeof line,
                      "%-9s %-2s %llu layers: %llu edges, utilization %.2f%%, %llu jobs, %s\n",
                      r.array_name().c_str(), to_string(r.dataflow),
                      static_cast<unsigned long long>(networks[i].first.size()),
                      static_cast<unsigned long long>(t.edges()), t.utilization_percent(),
                      static_cast<unsigned long long>(t.jobs), t.pass ? "PASS" : "FAIL");
        os << line;
    }
    const bool pass =
        std::all_of(records.begin(), records.end(), [](const layer_record& r) { return r.pass; });
    if (sweep) os << records.size() << " jobs, " << (pass ? "PASS" : "FAIL") << "\n";
    return os.str();
}

// The three reports into --out and the summary on stdout, all or none.
int finish(io::output_set& files, const std::string& out_dir, std::vector<layer_record> records) {
    sort_records(records);
    const std::string texts[] = {compute_report_csv(records), bandwidth_report_csv(records),
                                 traffic_report_csv(records), report_json(records)};
    for (std::size_t i = 0; i < std::size(report_files); ++i)
        files.set(report_path(out_dir, report_files[i]), {texts[i]});
    // The pieces are views: the text lives until the files are committed.
    const std::string energy_text = records.front().energy ? energy_report_csv(records) : std::string();
    if (records.front().energy) files.set(report_path(out_dir, energy_report_file), {energy_text});
    files.prepare();
    io::write_stdout(summary(records));
    files.commit();
    return std::all_of(records.begin(), records.end(), [](const layer_record& r) { return r.pass; })
               ? exit_pass
               : exit_fail;
}

int merge(const run_cli& o) {
    const std::string dir = *o.merge;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) throw usage_error("--merge " + dir + " is not a directory");
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().extension() == ".json") files.push_back(e.path().string());
    if (ec) throw usage_error("--merge " + dir + ": " + ec.message());
    std::sort(files.begin(), files.end());
    // report.json in the job directory would be read as a foreign job file by the next merge.
    if (fs::exists(*o.out, ec) && fs::equivalent(dir, *o.out, ec))
        throw usage_error("--out " + *o.out +
                          " is the --merge directory; give the reports a directory of their own");
    std::vector<layer_record> records;
    try {
        for (const auto& f : files)
            records.push_back(read_job_file(f));
        check_complete(records, dir, files);
    } catch (const report_error& e) {
        throw usage_error(e.what());
    }
    io::output_set out;
    add_inputs(out, o);
    for (const auto& f : files)
        out.add_input({"--merge", f});
    plan_reports(out, *o.out, bool(records.front().energy));
    return finish(out, *o.out, records);
}

int emit_jobs(const plan& p, const run_cli& o) {
    // The directory the jobs will write into, kept only if the commands reached stdout.
    io::output_set files;
    add_inputs(files, o);
    files.make_directory({"--out", *o.out});
    std::string text;
    for (const auto& j : p.jobs) {
        std::string line;
        for (const auto& a : job_args(p, o, j, *o.out))
            line += (line.empty() ? "" : " ") + shell_quote(a);
        text += line + "\n";
    }
    io::write_stdout(text);
    files.commit();
    return exit_pass;
}

int run_main(const run_cli& o) {
    if (o.merge) return merge(o);
    const plan p = make_plan(o);
    if (o.emit_jobs) return emit_jobs(p, o);
    const bool progress = !o.no_progress && stderr_is_terminal();
    check_inputs(p, o);
    io::output_set files;
    add_inputs(files, o);
    if (o.job) {
        files.add({"--job-out", *o.job_out});
        const auto records = run_in_process(p, o, false);
        const std::string text = job_file_text(records.front());
        files.set(*o.job_out, {text});
        files.prepare();
        files.commit();
        return records.front().pass ? exit_pass : exit_fail;
    }
    plan_reports(files, *o.out, bool(o.energy.table));
    const auto records =
        runs_in_one_process(p, o) ? run_in_process(p, o, progress) : run_in_processes(p, o, progress);
    return finish(files, *o.out, records);
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    run_cli o;
    const cli_outcome parsed = parse_run_command_line(argc, argv, o);
    try {
        if (!parsed.run) {
            std::cerr << parsed.err;
            if (!parsed.out.empty()) io::write_stdout(parsed.out);
            return parsed.exit_status;
        }
        const auto level = parse_log_level(o.log_level);
        if (!level) throw usage_error("--log-level must be " + names_text(log_level_names));
        set_log_level(*level);
        return tb::allocating("running the jobs", [&] { return run_main(o); });
    } catch (const std::exception& e) {
        std::cerr << "systolic-run: error: " << cli::one_line(e.what()) << "\n";
        return exit_usage;
    }
}

// SystemC's banner off before SystemC initialises: stdout carries only the summary.
int main(int argc, char* argv[]) {
    if (const int status = io::start("systolic-run"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
