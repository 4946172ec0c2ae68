// A SystemC model of its own behind the QEMU PCI component, driven by a real Linux (docs/qemu.md):
// Debian's qemu-system-x86_64 boots Debian's kernel with an initramfs written here (busybox and a
// static guest program, qemu_guest_probe.c); the program finds the tiny device below on the PCI
// bus, enables it through its config space, maps BAR0 from user space and checks its registers
// and a DMA into one of its own pages, which the device copies through guest RAM; its verdict
// comes back through a register. The example qbox users ask for (a SystemC peripheral of their own,
// driven by Linux) as a test. Skipped, visibly, where QEMU, its proxy device, a kernel in /boot or
// busybox-static is missing.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <string>
#include <systemc>
#include <thread>
#include <tlm>
#include <vector>

#include "qemu_tiny_device.h"
#include "qemu_tiny_model.h"
#include "systolic/qemu_pci/initramfs.h"
#include "systolic/qemu_pci/pci_device.h"
#include "systolic/qemu_pci/qemu_child.h"

namespace {

namespace fs = std::filesystem;
using namespace systolic::qemu_pci;
using systolic::test::tiny_device;

// SYSTOLIC_QEMU_KERNEL, else the newest Debian kernel that scripts/setup unpacked into the build
// directory, else the newest in /boot.
std::optional<std::string> kernel() {
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

std::string text_of(const fs::path& p) {
    std::ifstream in(p);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(QemuPciBoot, LinuxDrivesATinySystemCDeviceThroughTheComponent) {
    const char* qemu_binary = "qemu-system-x86_64";
    if (!version_of(qemu_binary)) GTEST_SKIP() << qemu_binary << " not found";
    if (!has_device(qemu_binary, "x-pci-proxy-dev")) GTEST_SKIP() << qemu_binary << " has no x-pci-proxy-dev";
    const auto image = kernel();
    if (!image) GTEST_SKIP() << "no guest kernel (scripts/setup downloads one; or SYSTOLIC_QEMU_KERNEL)";
    if (!fs::exists("/bin/busybox")) GTEST_SKIP() << "no /bin/busybox (busybox-static)";

    char dir_template[] = "/tmp/qemu_pci_boot.XXXXXX";
    ASSERT_NE(::mkdtemp(dir_template), nullptr);
    const fs::path dir = dir_template;
    const fs::path initrd = dir / "initrd.cpio", console = dir / "console.txt";
    using kind = initramfs_entry::kind;
    write_initramfs(initrd.string(), {{kind::directory, "bin", "", 0755},
                                      {kind::directory, "proc", "", 0755},
                                      {kind::directory, "sys", "", 0755},
                                      file_from("/bin/busybox", "bin/busybox"),
                                      file_from(SYSTOLIC_QEMU_GUEST_PROBE, "bin/probe"),
                                      {kind::file, "init",
                                       "#!/bin/busybox sh\n"
                                       "/bin/busybox mount -t proc proc /proc\n"
                                       "/bin/busybox mount -t sysfs sysfs /sys\n"
                                       "/bin/probe\n"
                                       "/bin/busybox poweroff -f\n",
                                       0755}});

    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    systolic::test::tiny_function f{unique_fd(sv[0])};
    pci_device& dev = f.dev;
    tiny_device& tiny = f.tiny;

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
                     *image,
                     "-initrd",
                     initrd.string(),
                     "-append",
                     "console=ttyS0 quiet panic=-1",
                     "-device",
                     "x-pci-proxy-dev,id=dev0,fd=3"},
                    unique_fd(sv[1]));
    // A guest that hangs: QEMU is killed, the link closes, and the simulation ends.
    std::mutex m;
    std::condition_variable done_cv;
    bool done = false;
    std::thread watchdog([&] {
        std::unique_lock<std::mutex> lock(m);
        if (!done_cv.wait_for(lock, std::chrono::seconds(120), [&] { return done; }))
            ::kill(qemu.pid(), SIGKILL);
    });
    sc_core::sc_start();
    {
        std::lock_guard<std::mutex> lock(m);
        done = true;
    }
    done_cv.notify_one();
    watchdog.join();
    const int status = qemu.stop();
    const std::string guest = text_of(console);

    EXPECT_EQ(dev.link_failure(), "");
    ASSERT_TRUE(tiny.exit_code) << "the guest never wrote its verdict; QEMU ended with " << status
                                << "; its console:\n"
                                << guest;
    EXPECT_EQ(*tiny.exit_code, 0u) << guest;
    EXPECT_EQ(tiny.copies, 1u);
    EXPECT_EQ(status, 0) << "QEMU powered off";
    EXPECT_NE(guest.find("probe: every check passed"), std::string::npos) << guest;
    EXPECT_GT(dev.requests(mpqemu_cmd::bar_read), 0u);
    EXPECT_GT(dev.requests(mpqemu_cmd::sync_sysmem), 0u);
    EXPECT_EQ(dev.refused_bar_accesses(), 0u);
    fs::remove_all(dir);
}

}  // namespace
