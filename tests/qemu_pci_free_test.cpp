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
#include "scripted_qemu.h"
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

    systolic::test::scripted_qemu qemu{unique_fd(sv[1])};
    std::uint64_t status_at_once = 99, polls = 0, status = 0;
    std::vector<std::uint8_t> bytes;
    std::thread peer([&] {
        const std::uint64_t gpa = 0x10000, bar = 0xfe000000;
        qemu.sync_sysmem(gpa, 4096, ram_fd);
        qemu.config_write(0x10, std::uint32_t(bar), 4);
        qemu.config_write(0x04, command_memory | command_bus_master, 2);
        qemu.bar_write(bar + TINY_DMA_LO, gpa);
        qemu.bar_write(bar + TINY_GO, 1);
        status_at_once = qemu.bar_read(bar + TINY_STATUS);
        for (status = status_at_once; status == 0 && polls < 100000; ++polls)
            status = qemu.bar_read(bar + TINY_STATUS);
        bytes.assign(ram + TINY_DMA_BYTES, ram + 2 * TINY_DMA_BYTES);
        qemu.hang_up();
    });
    sc_core::sc_start();
    peer.join();

    EXPECT_TRUE(qemu.failures.empty()) << qemu.failures.front();
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
