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
#include "systolic/qemu_pci/pci_device.h"

namespace {

using namespace systolic::qemu_pci;
using systolic::test::tiny_device;

constexpr std::uint64_t ram_gpa = 0x10000, bar = 0xfe000000;

// QEMU's side of the conversation, and what it saw.
struct fake_qemu {
    explicit fake_qemu(unique_fd fd) : link(std::move(fd)) {}
    mpqemu_link link;
    std::vector<std::string> failures;
    std::uint64_t status_without_master = 0, status_with_master = 0, beyond_device = 0, beyond_bar = 0;
    std::vector<std::uint8_t> bytes_at_reply;

    std::uint64_t answer() {
        const auto m = link.receive();
        if (!m || m->cmd != mpqemu_cmd::ret || m->payload.size() != 8) {
            failures.push_back("no RET");
            return 0;
        }
        std::uint64_t v;
        std::memcpy(&v, m->payload.data(), 8);
        return v;
    }
    void config_write(std::uint32_t addr, std::uint32_t value, int len) {
        const auto p = config_payload({addr, value, len});
        link.send(mpqemu_cmd::pci_cfgwrite, p.data(), p.size());
        answer();
    }
    std::uint64_t bar_op(mpqemu_cmd cmd, std::uint64_t addr, std::uint64_t value = 0) {
        const auto p = bar_payload({addr, value, 4, true});
        link.send(cmd, p.data(), p.size());
        return answer();
    }

    void run(int ram_fd, const std::uint8_t* ram) {
        std::vector<std::uint8_t> sync(max_payload, 0);
        const std::uint64_t size = 4096;
        std::memcpy(&sync[0], &ram_gpa, 8);
        std::memcpy(&sync[64], &size, 8);
        link.send(mpqemu_cmd::sync_sysmem, sync.data(), sync.size(), {ram_fd});
        config_write(0x10, std::uint32_t(bar), 4);
        config_write(0x04, command_memory, 2);  // memory space on, bus mastering off
        bar_op(mpqemu_cmd::bar_write, bar + TINY_DMA_LO, ram_gpa);
        bar_op(mpqemu_cmd::bar_write, bar + TINY_GO, 1);
        status_without_master = bar_op(mpqemu_cmd::bar_read, bar + TINY_STATUS);
        config_write(0x04, command_memory | command_bus_master, 2);
        bar_op(mpqemu_cmd::bar_write, bar + TINY_GO, 1);
        // Read at once: with time::settle the copy happened before the RET was sent.
        bytes_at_reply.assign(ram + TINY_DMA_BYTES, ram + 2 * TINY_DMA_BYTES);
        status_with_master = bar_op(mpqemu_cmd::bar_read, bar + TINY_STATUS);
        beyond_device = bar_op(mpqemu_cmd::bar_read, bar + 0x800);  // in BAR0, past the device's registers
        beyond_bar = bar_op(mpqemu_cmd::bar_read, bar + 0x1000);    // past BAR0
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
        ::shutdown(qemu.link.fd(), SHUT_RDWR);  // QEMU is gone: the simulation ends
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
