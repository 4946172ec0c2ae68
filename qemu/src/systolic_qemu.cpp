// systolic-qemu: the accelerator as a PCI function of Debian's stock QEMU, driven by a Linux guest
// (platform.h, guest.h, docs/linux.md). Exit status: the guest program's status when it finished and
// every check passed; 1 when a job, or a TLM-2.0 rule on BAR0 or the DMA path, failed its check; 2
// for bad usage or a missing or unusable QEMU, kernel, driver or program; 3 when the guest ended
// without a verdict (no write to the test-exit register: a kernel panic, QEMU gone); 4 when
// --timeout (wall-clock) ran out first.
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <iostream>
#include <mutex>
#include <string>
#include <systemc>
#include <thread>
#include <tlm>

#include "accelerator_pricing.h"
#include "checked_report.h"
#include "cli_values.h"
#include "guest.h"
#include "io/output_set.h"
#include "io/process.h"
#include "observer_outputs.h"
#include "platform.h"
#include "qemu_options.h"
#include "systolic/qemu_pci/doorbell_server.h"
#include "systolic/qemu_pci/qemu_child.h"
#include "time_text.h"

namespace {

using namespace systolic;
namespace qp = qemu_pci;

constexpr int exit_failed = 1, exit_usage = 2, exit_no_verdict = 3, exit_timeout = 4;

int fail(const std::string& what) {
    std::cerr << "systolic-qemu: error: " << cli::one_line(what) << "\n";
    return exit_usage;
}

// A connected pair of stream sockets: [0] this process's end, [1] QEMU's.
std::pair<qp::unique_fd, qp::unique_fd> socket_pair(const char* what) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        throw qemu::setup_error(std::string("socketpair for the ") + what + ": " + std::strerror(errno));
    return {qp::unique_fd(sv[0]), qp::unique_fd(sv[1])};
}

// The initramfs as an anonymous file QEMU reads as /dev/fd/6: nothing is written to disk, so
// nothing is left behind, whatever ends the run.
qp::unique_fd initramfs_file(const std::vector<qp::initramfs_entry>& entries) {
    qp::unique_fd fd(::memfd_create("systolic-initrd", MFD_CLOEXEC));
    if (fd.get() < 0) throw qemu::setup_error(std::string("memfd_create: ") + std::strerror(errno));
    qp::write_initramfs("/proc/self/fd/" + std::to_string(fd.get()), entries);
    return fd;
}

// Copies the guest's serial console to stdout as it comes, until QEMU closes it, with the
// console's line ends ("\r\n", as a terminal needs them) as the host's ("\n").
void copy_console(int from, std::atomic<bool>& line_open) {
    char buf[4096];
    std::string out;
    bool held_cr = false;  // a '\r' that ended the last read
    for (;;) {
        const ssize_t r = ::read(from, buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        out.clear();
        for (ssize_t i = 0; i < r; ++i) {
            if (held_cr && buf[i] != '\n') out += '\r';
            held_cr = buf[i] == '\r';
            if (!held_cr) out += buf[i];
        }
        for (std::size_t done = 0; done < out.size();) {
            const ssize_t w = ::write(1, out.data() + done, out.size() - done);
            if (w < 0 && errno == EINTR) continue;
            if (w <= 0) return;
            done += std::size_t(w);
        }
        if (!out.empty()) line_open = out.back() != '\n';
    }
    if (held_cr && ::write(1, "\r", 1) == 1) line_open = true;
}

// The exit status, with its reason on stderr: the timeout, then a missing verdict, then the guest's
// own code, then the checks.
int exit_status(qemu::platform& chip, bool timed_out, const qemu::qemu_options& o, int qemu_status) {
    if (timed_out) {
        std::cerr << "systolic-qemu: timeout: the guest did not finish within " << o.timeout.count() / 1000.0
                  << " s (--timeout)\n";
        return exit_timeout;
    }
    if (!chip.pci.link_failure().empty()) {
        std::cerr << "systolic-qemu: QEMU's link failed: " << chip.pci.link_failure() << "\n";
        return exit_no_verdict;
    }
    const auto& code = chip.exit_code();
    if (!code) {
        std::cerr << "systolic-qemu: the guest ended without a verdict (no write to the test-exit register; "
                     "QEMU's status "
                  << qemu_status << ")\n";
        return exit_no_verdict;
    }
    const bool checks = chip.job_failures().empty() && chip.protocol_violations().empty();
    if (*code != 0) {
        std::cerr << "systolic-qemu: the guest's program exited with " << *code << "\n";
        return int(*code & 0xff) ? int(*code & 0xff) : exit_failed;
    }
    return checks ? 0 : exit_failed;
}

std::string report_json(qemu::platform& chip, std::size_t array, int status, std::uint64_t interrupts,
                        bool energy) {
    nlohmann::json r =
        components::checked_run_json(chip.accel, array, status, chip.protocol_violations().size(), energy);
    r["guest_exit_code"] = chip.exit_code() ? nlohmann::json(*chip.exit_code()) : nlohmann::json();
    r["interrupts"] = interrupts;
    return r.dump(2) + "\n";
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    qemu::qemu_options o;
    if (const auto status = qemu::parse_options(argc, argv, o, exit_usage)) return *status;
    qemu::platform::config pc;
    pc.array_size = o.array;
    pc.engine = o.engine;
    pc.inject = o.inject;
    pc.time = o.time;
    pc.quantum = o.quantum;
    pc.guest_ram = std::uint64_t{qemu::guest_ram_mib} << 20;
    io::output_set files;
    cli::observer_outputs waves(o.outputs, "systolic-qemu");
    std::string kernel, initrd;
    qp::unique_fd initrd_fd;
    try {  // everything the run needs, checked before QEMU starts: one line and exit 2 otherwise
        if (o.json) files.add({"--json", *o.json});
        waves.plan(files);
        if (o.energy.table)
            pc.price = components::accelerator_pricing(
                components::load_accelerator_table(*o.energy.table, o.energy.tech_node), o.energy.tech_node);
        // The user's program and files first: they do not depend on this machine's QEMU or kernel.
        qemu::guest_payload user = qemu::guest_payload_of(o.run, o.guest_files);
        qemu::check_qemu(o.qemu);
        kernel = o.kernel ? *o.kernel : qemu::default_kernel();
        const std::string release = qemu::kernel_release(kernel);
        if (o.initrd) {
            initrd = *o.initrd;
            files.add_input({"--initrd", initrd});
        } else {
            const qemu::guest_parts parts = qemu::find_guest_parts(release);
            if (const std::string built_for = qemu::module_release(parts.module); built_for != release)
                throw qemu::setup_error("the driver " + parts.module + " was built for Linux " + built_for +
                                        ", not " + release);
            // With no program, the built-in example: the seeds' job through the driver.
            if (o.run.empty() && !parts.driver_tests.empty()) {
                o.run = {parts.driver_tests, "seed"};
                qemu::guest_payload example = qemu::guest_payload_of(o.run, {});
                user.files.insert(user.files.end(), example.files.begin(), example.files.end());
                user.command = example.command;
            }
            initrd_fd = initramfs_file(qemu::guest_image(parts, user));
            initrd = "/dev/fd/6";
        }
    } catch (const std::exception& e) {  // setup_error, io_error, energy_error
        return fail(e.what());
    }

    sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
    // The accelerator's controller runs the array a global quantum at a time, as in systolic-soc;
    // with none it would yield to the kernel after every edge.
    tlm::tlm_global_quantum::instance().set(o.quantum);
    std::optional<qemu::platform> chip;
    std::optional<qp::doorbell_server> doorbell;
    std::optional<qp::qemu_child> qemu;
    qp::unique_fd console;
    std::uint64_t interrupts = 0;  // rising edges of the accelerator's irq the doorbell rang
    try {
        auto [link, link_qemu] = socket_pair("accelerator");
        auto [bell, bell_qemu] = socket_pair("doorbell");
        auto [serial, serial_qemu] = socket_pair("console");
        console = std::move(serial);
        doorbell.emplace(std::move(bell));
        chip.emplace("qemu", std::move(link), pc);
        // The accelerator's level interrupt as the doorbell's MSI-X vector 0, once per rising edge:
        // the driver reads IRQ_STATUS when it comes.
        chip->pci.set_interrupt_bridge([&](bool level) {
            if (!level) return;
            doorbell->ring(0);
            ++interrupts;
        });
        waves.open(files);
        std::vector<qp::unique_fd> more;
        more.push_back(std::move(bell_qemu));
        more.push_back(std::move(serial_qemu));
        if (initrd_fd.get() >= 0) more.push_back(std::move(initrd_fd));
        std::vector<std::string> args = qemu::qemu_args(kernel, initrd, o.append);
        args.insert(args.end(), o.qemu_args.begin(), o.qemu_args.end());
        qemu.emplace(o.qemu, args, std::move(link_qemu), std::move(more));
    } catch (const std::exception& e) {  // setup_error, link_error, io_error
        return fail(e.what());
    }
    waves.watch(chip->accel.dut, o.array);

    std::atomic<bool> line_open{false};
    std::thread console_copier(copy_console, console.get(), std::ref(line_open));
    std::mutex m;
    std::condition_variable done_cv;
    bool done = false, timed_out = false;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> lock(m);
        if (!done_cv.wait_for(lock, o.timeout, [&] { return done; })) {
            timed_out = true;
            ::kill(qemu->pid(), SIGKILL);  // the link closes, and the simulation stops
        }
    });
    const auto wall_begin = std::chrono::steady_clock::now();
    sc_core::sc_start();
    const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_begin).count();
    {
        std::lock_guard<std::mutex> lock(m);
        done = true;
    }
    done_cv.notify_one();
    watchdog.join();
    const int qemu_status = qemu->stop();
    console_copier.join();
    chip->finish_checks();
    waves.stop(sc_core::sc_time_stamp());
    const int status = exit_status(*chip, timed_out, o, qemu_status);
    if (line_open) std::cout << "\n";
    const auto violations = chip->protocol_violations();
    components::print_check_lines(std::cout, chip->accel, violations);
    char wall_text[32];
    std::snprintf(wall_text, sizeof wall_text, "%.1f", wall);
    std::cout << "systolic-qemu: " << wall_text << " s, " << cli::format_time(sc_core::sc_time_stamp())
              << " simulated, " << chip->jobs_checked() << " jobs checked, " << interrupts << " interrupts, "
              << chip->job_failures().size() << " failures, " << chip->bus_transactions_checked()
              << " bus transactions checked, " << violations.size() << " protocol violations\n";
    try {
        waves.finish(files);
        const std::string report =
            o.json ? report_json(*chip, o.array, status, interrupts, bool(o.energy.table)) : "";
        if (o.json) files.set(*o.json, {report});
        files.prepare();
        io::flush_stdout();
        files.commit();
    } catch (const std::exception& e) {
        return fail(e.what());
    }
    return status;
}

int main(int argc, char* argv[]) {
    if (const int status = systolic::io::start("systolic-qemu"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
