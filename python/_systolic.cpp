// The native half of the Python package (python/systolic/): one systolic-tb job per call, with the
// same options, the same checks and the same JSON report, on numpy operands.
//
// SystemC elaborates once per process, so a process can hold testbenches of one configuration
// only (bench_key: the format, the array, the fabric). The first job builds that testbench and
// later jobs reuse it, as systolic-run reuses its benches; a job that needs another configuration
// is refused here, and the Python side runs each configuration in a worker process of its own.
//
// SIGINT, SIGTERM and SIGHUP while the Python side holds the signals (hold_signals() ...
// release_signals(), around each job) only record the signal: the job reads it at its next plan
// step and ends there, its temporaries removed and nothing written (tb_job.h's job_reply::stop),
// and the Python side then hands the signal to the program's own handler (docs/python.md).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <signal.h>

#include <atomic>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "cli_options.h"
#include "cli_suggest.h"
#include "io/npy.h"
#include "io/process.h"
#include "memory_estimate.h"
#include "systolic/fabric_geometry.h"
#include "systolic/log.h"
#include "systolic/number_format.h"
#include "tb_job.h"

namespace py = pybind11;
using namespace systolic;
using namespace systolic::tb;

namespace {

// The first of the signals that stop a job (io::stop_signals) that came while they were held
// (0: none).
using systolic::io::stop_signals;
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free, "set from a signal handler");

extern "C" void on_stop_signal(int sig) {
    int none = 0;
    g_stop_signal.compare_exchange_strong(none, sig);
}

// Holders count (the program's thread running a job here, others waiting for workers): the first
// installs on_stop_signal, the last puts back what the program had (Python's own handlers, or the
// defaults). A signal the program ignores (nohup) stays ignored.
struct signal_hold {
    std::mutex mutex;
    int holders = 0;
    struct sigaction before[std::size(stop_signals)];
    bool installed[std::size(stop_signals)] = {};
};
signal_hold& the_hold() {
    static signal_hold* h = new signal_hold;
    return *h;
}

void hold_signals() {
    signal_hold& h = the_hold();
    std::lock_guard<std::mutex> lock(h.mutex);
    if (h.holders++ > 0) return;
    g_stop_signal.store(0);
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (std::size_t i = 0; i < std::size(stop_signals); ++i) {
        h.installed[i] = false;
        if (::sigaction(stop_signals[i], nullptr, &h.before[i]) != 0 || h.before[i].sa_handler == SIG_IGN)
            continue;
        h.installed[i] = ::sigaction(stop_signals[i], &sa, nullptr) == 0;
    }
}

// The signal that came while held (0: none); the last holder's call puts the handlers back first.
int release_signals() {
    signal_hold& h = the_hold();
    std::lock_guard<std::mutex> lock(h.mutex);
    if (h.holders == 0) return 0;
    if (--h.holders == 0)
        for (std::size_t i = 0; i < std::size(stop_signals); ++i)
            if (h.installed[i]) ::sigaction(stop_signals[i], &h.before[i], nullptr);
    return g_stop_signal.load();
}

bool signals_held() {
    signal_hold& h = the_hold();
    std::lock_guard<std::mutex> lock(h.mutex);
    return h.holders > 0;
}

// Parses systolic-tb's options (argv without the program's name); bad usage throws usage_error.
options parse(const std::vector<std::string>& args) {
    std::vector<const char*> argv{"systolic"};
    for (const auto& a : args)
        argv.push_back(a.c_str());
    options o;
    const parse_result parsed = parse_command_line(int(argv.size()), argv.data(), o);
    if (!parsed.run) {
        // systolic-tb's line, without its program name and newline.
        std::string line = parsed.err.empty() ? parsed.out : parsed.err;
        const std::string prefix = "systolic-tb: error: ";
        if (line.rfind(prefix, 0) == 0) line.erase(0, prefix.size());
        while (!line.empty() && line.back() == '\n')
            line.pop_back();
        throw usage_error(line);
    }
    return o;
}

// systolic-tb's options (tb::option_table), read once.
const std::vector<option_info>& options_of_tb() {
    static const std::vector<option_info> table = option_table();
    return table;
}

// The testbench configuration a job needs, as text: jobs with the same key share a testbench.
template <class Format>
std::string key_of(const typename verify::testbench<Format>::config& c) {
    return std::string(Format::name) + " " + std::to_string(c.rows) + "x" + std::to_string(c.cols) +
           " fabric " + to_string(c.fabric) + " link-latency " + std::to_string(c.link_latency) +
           " threads " + std::to_string(c.threads);
}

std::string bench_key(const std::vector<std::string>& args) {
    const options o = parse(args);
    check_options(o);
    return with_format(o.dtype, [&](auto format) {
        using Format = decltype(format);
        return key_of<Format>(bench_config<Format>(o));
    });
}

// The process's one testbench. It is never destroyed: SystemC's kernel would be torn down before
// a static's destructor ran, and the process ends right after the last job anyway.
struct session {
    std::string key;
    sc_core::sc_module* bench = nullptr;
};
session& the_session() {
    static session* s = new session;
    return *s;
}

template <class Format>
verify::testbench<Format>& bench_for(const typename verify::testbench<Format>::config& cfg) {
    session& s = the_session();
    const std::string key = key_of<Format>(cfg);
    if (!s.bench) {
        s.bench = new verify::testbench<Format>("tb", cfg);
        s.key = key;
    } else if (s.key != key) {
        throw usage_error("this process holds the testbench for " + s.key +
                          " and SystemC elaborates once: " + key + " needs a process of its own");
    }
    return *static_cast<verify::testbench<Format>*>(s.bench);
}

// A 2-D C-contiguous operand of the dtype the format reads (float32 for bf16, rounded here).
template <class Format>
std::vector<typename Format::operand_type> operand(const py::array& x, const char* which) {
    using T = typename Format::operand_type;
    using file_type = std::conditional_t<std::is_same_v<T, bf16>, float, T>;
    if (x.ndim() != 2) throw usage_error(std::string(which) + " must be 2-D");
    if (!py::isinstance<py::array_t<file_type>>(x) || !(x.flags() & py::array::c_style))
        throw usage_error(std::string(which) + " must be a C-contiguous " +
                          (Format::is_integer ? Format::name : "float32") + " array");
    const auto* data = static_cast<const file_type*>(x.data());
    const std::size_t n = std::size_t(x.size());
    std::vector<T> out(n);
    if constexpr (std::is_same_v<T, bf16>) {
        for (std::size_t i = 0; i < n; ++i)
            out[i] = bf16::from_float(data[i]);
    } else if (n) {
        std::memcpy(out.data(), data, n * sizeof(T));
    }
    return out;
}

py::dtype dtype_of(const std::string& descr) {
    return py::dtype(descr);
}

// Runs one job: systolic-tb's options (with --m, --k and --p of the operands), A and B. Returns
// {"c": C or None, "report": the JSON report's text, "summary": systolic-tb's summary, "pass": bool}.
py::dict run(const std::vector<std::string>& args, const py::array& a, const py::array& b) {
    const options o = parse(args);
    set_log_level(cli::log_level_of(o.outputs));
    job_reply reply;
    with_format(o.dtype, [&](auto format) {
        using Format = decltype(format);
        verify::problem<Format> pr;
        pr.a = operand<Format>(a, "A");
        pr.b = operand<Format>(b, "B");
        if (a.shape(1) != b.shape(0))
            throw usage_error("A is " + std::to_string(a.shape(0)) + "x" + std::to_string(a.shape(1)) +
                              " but B is " + std::to_string(b.shape(0)) + "x" + std::to_string(b.shape(1)) +
                              ": A's columns must equal B's rows");
        pr.shape = {std::uint64_t(a.shape(0)), std::uint64_t(a.shape(1)), std::uint64_t(b.shape(1))};
        if (signals_held()) reply.stop = &g_stop_signal;
        py::gil_scoped_release unlocked;
        run_job<Format>(o, &bench_for<Format>, &pr, &reply);
    });
    py::dict out;
    if (reply.c.empty()) {
        out["c"] = py::none();
    } else {
        // C's bytes become the array's own, with no copy.
        auto* bytes = new std::vector<std::uint8_t>(std::move(reply.c));
        py::capsule owner(bytes, [](void* p) { delete static_cast<std::vector<std::uint8_t>*>(p); });
        const py::dtype dt = dtype_of(reply.c_descr);
        const auto item = py::ssize_t(dt.itemsize());
        out["c"] = py::array(dt, {py::ssize_t(reply.m), py::ssize_t(reply.p)},
                             {py::ssize_t(reply.p) * item, item}, bytes->data(), owner);
    }
    out["report"] = reply.report;
    out["summary"] = reply.summary;
    out["pass"] = reply.pass;
    return out;
}

}  // namespace

PYBIND11_MODULE(_systolic, m) {
    m.doc() =
        "The systolic-array model's native half: one systolic-tb job per call (see the systolic package)";
    // Before SystemC's first object: its banner would go to the caller's stdout.
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    static py::exception<usage_error> usage(m, "UsageError", PyExc_ValueError);
    static py::exception<job_stopped> stopped(m, "Stopped", PyExc_RuntimeError);
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const usage_error& e) {
            usage(one_line(e.what()).c_str());
        } catch (const io::npy_error& e) {
            usage(one_line(e.what()).c_str());
        } catch (const job_stopped& e) {
            stopped(("the job was stopped by signal " + std::to_string(e.signal) + "; nothing was written")
                        .c_str());
        } catch (const out_of_memory& e) {
            PyErr_SetString(PyExc_MemoryError, one_line(e.what()).c_str());
        }
    });
    // The number formats, from the model's one list (number_format.h) in its order: the package
    // derives its dtype tables from this, so a format added to the list reaches Python unedited.
    py::list formats;
    for_each_format([&](auto format) {
        using F = decltype(format);
        py::dict f;
        f["name"] = F::name;
        f["operand_dtype"] = F::operand_descr;  // numpy's: what A and B are given in
        f["accumulator"] = F::accumulator_name;
        f["accumulator_dtype"] = F::accumulator_descr;
        f["integer"] = F::is_integer;
        formats.append(f);
    });
    m.attr("formats") = formats;
    // systolic-tb's options (option_table), --help left out, in --help's order.
    py::list option_list;
    for (const option_info& o : options_of_tb()) {
        if (o.flag == "--help") continue;
        py::dict d;
        d["flag"] = o.flag;
        d["type"] = o.type.empty() ? py::object(py::none()) : py::str(o.type);
        d["choices"] =
            o.choices.empty() ? py::object(py::none()) : py::object(py::tuple(py::cast(o.choices)));
        d["default"] = o.default_value.empty() ? py::object(py::none()) : py::str(o.default_value);
        d["existing_file"] = o.existing_file;
        d["help"] = o.help;
        option_list.append(d);
    }
    m.attr("options") = option_list;
    m.def(
        "unknown_option",
        [](const std::string& typed) {
            std::vector<std::string> names;
            for (const option_info& o : options_of_tb())
                names.push_back(o.flag);
            return cli::unknown_name_message("option", typed, names, "see systolic.job_options");
        },
        py::arg("typed"),
        "systolic-tb's message for an unknown option, with the nearest known name when it looks like a typo");
    m.attr("__version__") = SYSTOLIC_PROJECT_VERSION;  // the project's, from CMake
    m.def("bench_key", &bench_key, py::arg("args"),
          "The testbench configuration the options need: jobs with the same key can share a process");
    m.def(
        "check", [](const std::vector<std::string>& args) { check_job_plan(parse(args)); }, py::arg("args"),
        "Refuses (UsageError) a job whose options, dimensions or memory need would refuse it, before "
        "any operand is copied");
    m.def("hold_signals", &hold_signals,
          "From now until release_signals(), SIGINT, SIGTERM and SIGHUP stop the job (which raises Stopped)");
    m.def(
        "release_signals", &release_signals,
        "Ends hold_signals() (the last holder puts the program's handlers back); the signal that came, or 0");
    m.def(
        "stop_signal", []() { return g_stop_signal.load(); },
        "The signal that came since hold_signals(), or 0");
    m.def("run", &run, py::arg("args"), py::arg("a"), py::arg("b"),
          "Runs one job with systolic-tb's options on A and B; returns c, report, summary and pass");
}

// libsystemc refers to sc_main, for sc_elab_and_sim; Python is the main program here, and the
// jobs call sc_start themselves. Visible, as pybind11 hides the module's other symbols.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char*[]) {
    return 2;
}
