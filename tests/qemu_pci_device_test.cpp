// The QEMU PCI component's SystemC shell (pci_device.h) against a fake QEMU on a socketpair, which
// plays a scripted conversation from a thread of its own while the simulation serves it: guest RAM
// from a memfd, the config space, BAR accesses forwarded to the tiny device (qemu_tiny_model.h) and
// refused outside it, DMA refused without bus mastering and done with it, and time::settle: the
// reply to the write that starts the DMA comes after the DMA, so the bytes are in guest RAM when
// QEMU hears back. Then QEMU closes the link, and the simulation ends.
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <systemc>
#include <thread>
#include <vector>

#include "qemu_tiny_device.h"
#include "qemu_tiny_model.h"
#include "scripted_qemu.h"
#include "systolic/qemu_pci/pci_device.h"

namespace {

using namespace systolic::qemu_pci;
using systolic::test::tiny_device;

constexpr std::uint64_t ram_gpa = 0x10000, bar = 0xfe000000;

// QEMU's side of the conversation, and what it saw.
struct fake_qemu : systolic::test::scripted_qemu {
    using scripted_qemu::scripted_qemu;
    std::uint64_t status_without_master = 0, status_with_master = 0, beyond_device = 0, beyond_bar = 0;
    std::vector<std::uint8_t> bytes_at_reply;

    void run(int ram_fd, const std::uint8_t* ram) {
        sync_sysmem(ram_gpa, 4096, ram_fd);
        config_write(0x10, std::uint32_t(bar), 4);
        config_write(0x04, command_memory, 2);  // memory space on, bus mastering off
        bar_write(bar + TINY_DMA_LO, ram_gpa);
        bar_write(bar + TINY_GO, 1);
        status_without_master = bar_read(bar + TINY_STATUS);
        config_write(0x04, command_memory | command_bus_master, 2);
        bar_write(bar + TINY_GO, 1);
        // Read at once: with time::settle the copy happened before the RET was sent.
        bytes_at_reply.assign(ram + TINY_DMA_BYTES, ram + 2 * TINY_DMA_BYTES);
        status_with_master = bar_read(bar + TINY_STATUS);
        beyond_device = bar_read(bar + 0x800);  // in BAR0, past the device's registers
        beyond_bar = bar_read(bar + 0x1000);    // past BAR0
    }
};

TEST(QemuPciDevice, AScriptedQemuThroughTheShell) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    systolic::test::fake_guest_ram guest(5);
    const int ram_fd = guest.fd;
    std::uint8_t* ram = guest.bytes;

    systolic::test::tiny_function f{unique_fd(sv[0])};
    pci_device& dev = f.dev;
    tiny_device& tiny = f.tiny;

    fake_qemu qemu{unique_fd(sv[1])};
    std::thread peer([&] {
        qemu.run(ram_fd, ram);
        qemu.hang_up();
    });
    sc_core::sc_start();
    peer.join();

    EXPECT_TRUE(qemu.failures.empty()) << qemu.failures.front();
    EXPECT_EQ(dev.link_failure(), "");
    EXPECT_EQ(qemu.status_without_master, 2u) << "DMA without bus mastering must fail";
    EXPECT_EQ(qemu.status_with_master, 1u);
    ASSERT_EQ(qemu.bytes_at_reply.size(), std::size_t(TINY_DMA_BYTES));
    for (int i = 0; i < TINY_DMA_BYTES; ++i)
        ASSERT_EQ(qemu.bytes_at_reply[std::size_t(i)], std::uint8_t(5 * i + 1))
            << "byte " << i << " at the reply";
    EXPECT_EQ(qemu.beyond_device, 0xffffffffu);
    EXPECT_EQ(qemu.beyond_bar, 0xffffffffu);
    EXPECT_EQ(dev.refused_bar_accesses(), 2u);
    EXPECT_EQ(tiny.copies, 2u);
    EXPECT_EQ(dev.requests(mpqemu_cmd::sync_sysmem), 1u);
    EXPECT_GT(sc_core::sc_time_stamp(), sc_core::SC_ZERO_TIME);
}

}  // namespace
