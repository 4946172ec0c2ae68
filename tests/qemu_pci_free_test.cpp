// The QEMU PCI component's shell in time::free (pci_device.h): requests are answered at once and the
// simulation advances a quantum at a time while none waits. A scripted QEMU starts the tiny
// device's DMA (qemu_tiny_model.h) and polls its status, as a driver's wait loop does, until the
// copy is done; then the bytes are in guest RAM and the simulation has advanced in whole quanta
// (time::settle would have answered nothing but the final status, and at no quantum boundary).
// (time::settle is qemu_pci_device_test's.)
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <systemc>
#include <thread>
#include <vector>

#include "qemu_tiny_model.h"
#include "systolic/qemu_pci/pci_device.h"

namespace {

using namespace systolic::qemu_pci;

TEST(QemuPciFree, TheSimulationRunsBetweenRequests) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    systolic::test::fake_guest_ram guest(7);
    const int ram_fd = guest.fd;
    std::uint8_t* ram = guest.bytes;
    systolic::test::tiny_function f{unique_fd(sv[0]), time_mode::free};

    mpqemu_link qemu{unique_fd(sv[1])};
    std::uint64_t status_at_once = 99, polls = 0, status = 0;
    std::vector<std::uint8_t> bytes;
    std::thread peer([&] {
        auto answer = [&] {
            const auto m = qemu.receive();
            std::uint64_t v = 0;
            if (m && m->payload.size() == 8) std::memcpy(&v, m->payload.data(), 8);
            return v;
        };
        auto config_write = [&](std::uint32_t addr, std::uint32_t value, int len) {
            const auto p = config_payload({addr, value, len});
            qemu.send(mpqemu_cmd::pci_cfgwrite, p.data(), p.size());
            answer();
        };
        auto bar_op = [&](mpqemu_cmd cmd, std::uint64_t addr, std::uint64_t value = 0) {
            const auto p = bar_payload({addr, value, 4, true});
            qemu.send(cmd, p.data(), p.size());
            return answer();
        };
        std::vector<std::uint8_t> sync(max_payload, 0);
        const std::uint64_t gpa = 0x10000, size = 4096, bar = 0xfe000000;
        std::memcpy(&sync[0], &gpa, 8);
        std::memcpy(&sync[64], &size, 8);
        qemu.send(mpqemu_cmd::sync_sysmem, sync.data(), sync.size(), {ram_fd});
        config_write(0x10, std::uint32_t(bar), 4);
        config_write(0x04, command_memory | command_bus_master, 2);
        bar_op(mpqemu_cmd::bar_write, bar + TINY_DMA_LO, gpa);
        bar_op(mpqemu_cmd::bar_write, bar + TINY_GO, 1);
        status_at_once = bar_op(mpqemu_cmd::bar_read, bar + TINY_STATUS);
        for (status = status_at_once; status == 0 && polls < 100000; ++polls)
            status = bar_op(mpqemu_cmd::bar_read, bar + TINY_STATUS);
        bytes.assign(ram + TINY_DMA_BYTES, ram + 2 * TINY_DMA_BYTES);
        ::shutdown(qemu.fd(), SHUT_RDWR);
    });
    sc_core::sc_start();
    peer.join();

    EXPECT_EQ(f.dev.link_failure(), "");
    // Whether the first read already finds the copy done depends on how soon the read arrives
    // (the simulation runs a quantum whenever no request waits): the wait loop ends either way.
    EXPECT_EQ(status, 1u) << "after " << polls << " polls, the first " << status_at_once;
    ASSERT_EQ(bytes.size(), std::size_t(TINY_DMA_BYTES));
    for (int i = 0; i < TINY_DMA_BYTES; ++i)
        ASSERT_EQ(bytes[std::size_t(i)], std::uint8_t(7 * i + 1)) << "byte " << i;
    // Time passed a quantum (1 us) at a time.
    EXPECT_GE(sc_core::sc_time_stamp(), sc_core::sc_time(1, sc_core::SC_US));
    EXPECT_EQ(sc_core::sc_time_stamp().value() % sc_core::sc_time(1, sc_core::SC_US).value(), 0u);
}

}  // namespace
