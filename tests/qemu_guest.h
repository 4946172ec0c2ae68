// A Linux guest for the QEMU PCI tests: Debian's kernel in Debian's QEMU, with the function under
// test behind the proxy device and an initramfs written here (busybox, the test's static programs,
// an /init that mounts proc and sys, runs the test's command and powers off).
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <systemc>
#include <thread>
#include <vector>

#include "systolic/qemu_pci/initramfs.h"
#include "systolic/qemu_pci/qemu_child.h"

namespace systolic::test {

inline constexpr const char* qemu_binary = "qemu-system-x86_64";

// SYSTOLIC_QEMU_KERNEL, else the newest Debian kernel that scripts/setup unpacked into the build
// directory, else the newest in /boot.
inline std::optional<std::string> guest_kernel() {
    namespace fs = std::filesystem;
    if (const char* k = std::getenv("SYSTOLIC_QEMU_KERNEL")) return std::string(k);
    for (const fs::path& dir : {fs::path(SYSTOLIC_GUEST_KERNEL_DIR) / "boot", fs::path("/boot")}) {
        std::optional<std::string> best;
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(dir, ec))
            if (e.path().filename().string().rfind("vmlinuz-", 0) == 0 &&
                (!best || e.path().string() > *best))
                best = e.path().string();
        if (best) return best;
    }
    return std::nullopt;
}

// Why a guest cannot boot here (the test is then skipped), or nothing.
inline std::optional<std::string> no_guest() {
    using namespace qemu_pci;
    if (!version_of(qemu_binary)) return std::string(qemu_binary) + " not found";
    if (!has_device(qemu_binary, "x-pci-proxy-dev"))
        return std::string(qemu_binary) + " has no x-pci-proxy-dev";
    if (!guest_kernel())
        return std::string("no guest kernel (scripts/setup downloads one; or SYSTOLIC_QEMU_KERNEL)");
    if (!std::filesystem::exists("/bin/busybox")) return std::string("no /bin/busybox (busybox-static)");
    return std::nullopt;
}

struct guest_result {
    int status = -1;      // QEMU's exit status
    std::string console;  // what the guest printed
};

// Boots the guest with `link_end` as the proxy device's socket, /init running `command` (the
// `programs` are in /bin), and runs the simulation until QEMU closes the link; a guest that takes
// longer than `timeout` is killed.
inline guest_result boot_guest(qemu_pci::unique_fd link_end,
                               const std::vector<qemu_pci::initramfs_entry>& programs,
                               const std::string& command,
                               std::chrono::seconds timeout = std::chrono::seconds(120)) {
    namespace fs = std::filesystem;
    using namespace qemu_pci;
    char dir_template[] = "/tmp/qemu_guest.XXXXXX";
    if (!::mkdtemp(dir_template)) throw std::runtime_error("mkdtemp");
    const fs::path dir = dir_template;
    const fs::path initrd = dir / "initrd.cpio", console = dir / "console.txt";
    using kind = initramfs_entry::kind;
    std::vector<initramfs_entry> entries = {{kind::directory, "bin", "", 0755},
                                            {kind::directory, "proc", "", 0755},
                                            {kind::directory, "sys", "", 0755},
                                            file_from("/bin/busybox", "bin/busybox")};
    entries.insert(entries.end(), programs.begin(), programs.end());
    entries.push_back({kind::file, "init",
                       "#!/bin/busybox sh\n"
                       "/bin/busybox mount -t proc proc /proc\n"
                       "/bin/busybox mount -t sysfs sysfs /sys\n" +
                           command +
                           "\n"
                           "/bin/busybox poweroff -f\n",
                       0755});
    write_initramfs(initrd.string(), entries);
    qemu_child qemu(qemu_binary,
                    {"-M",
                     "pc,memory-backend=mem",
                     "-m",
                     "256M",
                     "-object",
                     "memory-backend-memfd,id=mem,size=256M,share=on",
                     "-nodefaults",
                     "-nographic",
                     "-no-reboot",
                     "-serial",
                     "file:" + console.string(),
                     "-monitor",
                     "none",
                     "-kernel",
                     *guest_kernel(),
                     "-initrd",
                     initrd.string(),
                     "-append",
                     "console=ttyS0 quiet panic=-1",
                     "-device",
                     "x-pci-proxy-dev,id=dev0,fd=3"},
                    std::move(link_end));
    std::mutex m;
    std::condition_variable done_cv;
    bool done = false;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> lock(m);
        if (!done_cv.wait_for(lock, timeout, [&] { return done; })) ::kill(qemu.pid(), SIGKILL);
    });
    sc_core::sc_start();
    {
        std::lock_guard<std::mutex> lock(m);
        done = true;
    }
    done_cv.notify_one();
    watchdog.join();
    guest_result r;
    r.status = qemu.stop();
    std::ifstream in(console);
    r.console.assign(std::istreambuf_iterator<char>(in), {});
    fs::remove_all(dir);
    return r;
}

}  // namespace systolic::test
