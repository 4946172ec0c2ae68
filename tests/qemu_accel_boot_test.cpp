// The accelerator, behind the verification environment's passive checker (checked_accelerator), as
// the PCI function of Debian's QEMU through the QEMU PCI component, driven by a real Linux: a static
// guest program (qemu_guest_accel.c) finds it on the bus, maps BAR0 from user space and runs an int8
// job with the project's C driver, its operands and C in a page of its own. The guest checks C; the
// passive checker checks the job (C, the memory outside it, the counters) and every DMA transaction
// on its own, from the SystemC side. Skipped, visibly, where no guest can boot (qemu_guest.h).
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <cstdio>
#include <string>
#include <systemc>

#include "checked_accelerator.h"
#include "qemu_guest.h"
#include "systolic/accelerator_regs.h"
#include "systolic/qemu_pci/pci_device.h"

namespace {

using namespace systolic::qemu_pci;

TEST(QemuAccelBoot, LinuxRunsAJobOnTheCheckedAccelerator) {
    if (const auto why = systolic::test::no_guest()) GTEST_SKIP() << *why;
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    pci_device::config cfg;
    cfg.identity = {SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE,
                    SYSTOLIC_PCI_CLASS};  // <systolic/accelerator_regs.h>
    pci_device dev("dev", unique_fd(sv[0]), cfg);
    systolic::accelerator::config ac;
    ac.array_size = 4;
    systolic::components::checked_accelerator accel("accel", ac, 0, std::uint64_t{256} << 20);
    sc_core::sc_signal<bool> irq("irq");
    dev.bar0.bind(accel.regs);
    accel.dma.bind(dev.dma);
    accel.irq.bind(irq);
    dev.irq(irq);

    char command[64];
    std::snprintf(command, sizeof command, "/bin/accel %x %x", SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE);
    const auto guest =
        systolic::test::boot_guest(unique_fd(sv[1]), {file_from(SYSTOLIC_QEMU_GUEST, "bin/accel")}, command);
    accel.finish();

    EXPECT_EQ(dev.link_failure(), "");
    EXPECT_NE(guest.console.find("accel: PASS on a 4x4 array"), std::string::npos) << guest.console;
    EXPECT_EQ(guest.status, 0) << "QEMU powered off";
    EXPECT_EQ(accel.jobs_checked(), 1u) << guest.console;
    EXPECT_TRUE(accel.failures().empty()) << accel.failures().front();
    EXPECT_GT(accel.bus_transactions_checked(), 0u);
    EXPECT_TRUE(accel.protocol_violations().empty()) << accel.protocol_violations().front();
    EXPECT_TRUE(accel.accelerator_errors().empty()) << accel.accelerator_errors().front();
}

}  // namespace
