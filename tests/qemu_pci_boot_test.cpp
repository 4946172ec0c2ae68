// A SystemC model of its own behind the QEMU PCI component, driven by a real Linux (docs/qemu.md):
// Debian's qemu-system-x86_64 boots Debian's kernel with an initramfs written here (busybox and a
// static guest program, qemu_guest_probe.c); the program finds the tiny device below on the PCI
// bus, enables it through its config space, maps BAR0 from user space and checks its registers
// and a DMA into one of its own pages, which the device copies through guest RAM; its verdict
// comes back through a register. The example qbox users ask for (a SystemC peripheral of their own,
// driven by Linux) as a test. Skipped, visibly, where QEMU, its proxy device, a kernel or
// busybox-static is missing (qemu_guest.h).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <string>

#include "qemu_guest.h"
#include "qemu_tiny_model.h"
#include "systolic/qemu_pci/initramfs.h"
#include "systolic/qemu_pci/pci_device.h"

namespace {

using namespace systolic::qemu_pci;
using systolic::test::tiny_device;

TEST(QemuPciBoot, LinuxDrivesATinySystemCDeviceThroughTheComponent) {
    if (const auto why = systolic::test::no_guest()) GTEST_SKIP() << *why;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    systolic::test::tiny_function f{unique_fd(sv[0])};
    pci_device& dev = f.dev;
    tiny_device& tiny = f.tiny;
    const auto guest = systolic::test::boot_guest(
        unique_fd(sv[1]), {file_from(SYSTOLIC_QEMU_GUEST, "bin/probe")}, "/bin/probe");

    EXPECT_EQ(dev.link_failure(), "");
    ASSERT_TRUE(tiny.exit_code) << "the guest never wrote its verdict; QEMU ended with " << guest.status
                                << "; its console:\n"
                                << guest.console;
    EXPECT_EQ(*tiny.exit_code, 0u) << guest.console;
    EXPECT_EQ(tiny.copies, 1u);
    EXPECT_EQ(guest.status, 0) << "QEMU powered off";
    EXPECT_NE(guest.console.find("probe: every check passed"), std::string::npos) << guest.console;
    EXPECT_GT(dev.requests(mpqemu_cmd::bar_read), 0u);
    EXPECT_GT(dev.requests(mpqemu_cmd::sync_sysmem), 0u);
    EXPECT_EQ(dev.refused_bar_accesses(), 0u);
}

}  // namespace
