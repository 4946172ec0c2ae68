// QEMU's multi-process PCI link, the device's end (components/qemu_pci): the messages against a fake
// QEMU on a socketpair (every kind, fds passed, malformed ones refused), the PCI function's config
// space (BAR sizing, writable bits), guest RAM from memory fds, and then against the real thing:
// Debian's qemu-system-x86_64 with the proxy device, whose firmware (SeaBIOS) enumerates the bus,
// sizes and places BAR0 and enables the function, all through this process, while guest RAM is
// shared with it. Skipped (visible in CTest) where QEMU or its proxy device is missing.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "systolic/qemu_pci/doorbell_server.h"
#include "systolic/qemu_pci/guest_memory.h"
#include "systolic/qemu_pci/mpqemu_link.h"
#include "systolic/qemu_pci/pci_config.h"
#include "systolic/qemu_pci/qemu_child.h"

namespace {

using namespace systolic::qemu_pci;

struct link_pair {
    link_pair() {
        int sv[2];
        if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
            throw std::runtime_error("socketpair");
        qemu = std::make_unique<mpqemu_link>(unique_fd(sv[0]));
        device = std::make_unique<mpqemu_link>(unique_fd(sv[1]));
    }
    std::unique_ptr<mpqemu_link> qemu, device;
};

unique_fd memfd_with(const std::vector<std::uint8_t>& bytes) {
    unique_fd fd(::memfd_create("qemu_pci_test", MFD_CLOEXEC));
    if (fd.get() < 0 || ::ftruncate(fd.get(), off_t(bytes.size())) != 0 ||
        ::pwrite(fd.get(), bytes.data(), bytes.size(), 0) != ssize_t(bytes.size()))
        throw std::runtime_error("memfd");
    return fd;
}

// The raw bytes of a message header, for the malformed ones.
void send_raw(int fd, std::int32_t cmd, std::uint64_t size, std::size_t payload_bytes) {
    std::vector<std::uint8_t> m(16 + payload_bytes, 0);
    std::memcpy(m.data(), &cmd, 4);
    std::memcpy(m.data() + 8, &size, 8);
    ASSERT_EQ(::write(fd, m.data(), m.size()), ssize_t(m.size()));
}

TEST(MpqemuLink, EveryRequestDecodesAndIsAnswered) {
    link_pair p;
    const auto cfg = config_payload({0x10, 0xffffffffu, 4});
    p.qemu->send(mpqemu_cmd::pci_cfgwrite, cfg.data(), cfg.size());
    auto m = p.device->receive();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->cmd, mpqemu_cmd::pci_cfgwrite);
    const config_access c = config_access_of(*m);
    EXPECT_EQ(c.addr, 0x10u);
    EXPECT_EQ(c.value, 0xffffffffu);
    EXPECT_EQ(c.len, 4);

    const auto bar = bar_payload({0xfebf0008, 0x1122334455667788ull, 8, true});
    p.qemu->send(mpqemu_cmd::bar_write, bar.data(), bar.size());
    m = p.device->receive();
    ASSERT_TRUE(m);
    const bar_access b = bar_access_of(*m);
    EXPECT_EQ(b.addr, 0xfebf0008u);
    EXPECT_EQ(b.value, 0x1122334455667788ull);
    EXPECT_EQ(b.size, 8u);
    EXPECT_TRUE(b.memory);
    EXPECT_THROW(config_access_of(*m), link_error);  // a BAR access is no config access

    p.device->reply(0xabcdef);
    m = p.qemu->receive();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->cmd, mpqemu_cmd::ret);
    ASSERT_EQ(m->payload.size(), 8u);
    std::uint64_t v;
    std::memcpy(&v, m->payload.data(), 8);
    EXPECT_EQ(v, 0xabcdefu);

    p.qemu->send(mpqemu_cmd::device_reset, nullptr, 0);
    m = p.device->receive();
    ASSERT_TRUE(m);
    EXPECT_EQ(m->cmd, mpqemu_cmd::device_reset);
    EXPECT_TRUE(m->payload.empty());
}

TEST(MpqemuLink, SyncSysmemHandsOverTheRegionsAndTheirFds) {
    link_pair p;
    std::vector<std::uint8_t> low(8192, 0), high(4096, 0);
    low[4096 + 5] = 0x5a;  // gpa 0x105 of the region that starts at 0x100 with offset 0x1000
    high[7] = 0xa5;
    const unique_fd a = memfd_with(low), b = memfd_with(high);
    std::vector<std::uint8_t> payload(max_payload, 0);
    const std::uint64_t gpas[] = {0x100, 0x100000}, sizes[] = {4096, 4096};
    const std::int64_t offsets[] = {4096, 0};
    for (int i = 0; i < 2; ++i) {
        std::memcpy(&payload[8 * i], &gpas[i], 8);
        std::memcpy(&payload[8 * (8 + i)], &sizes[i], 8);
        std::memcpy(&payload[8 * (16 + i)], &offsets[i], 8);
    }
    p.qemu->send(mpqemu_cmd::sync_sysmem, payload.data(), payload.size(), {a.get(), b.get()});
    auto m = p.device->receive();
    ASSERT_TRUE(m);
    ASSERT_EQ(m->fds.size(), 2u);
    guest_memory ram;
    ram.map(regions_of(*m));
    EXPECT_EQ(ram.regions(), 2u);
    EXPECT_EQ(ram.generation(), 1u);
    ASSERT_NE(ram.find(0x105, 1), nullptr);
    EXPECT_EQ(*ram.find(0x105, 1), 0x5a);
    EXPECT_EQ(*ram.find(0x100007, 1), 0xa5);
    EXPECT_EQ(ram.find(0x100 + 4095, 2), nullptr);  // crosses the region's end
    EXPECT_EQ(ram.find(0x50, 1), nullptr);
    // Shared: a DMA write is the guest's RAM (the memfd's bytes).
    *ram.find(0x100008, 1) = 0x77;
    std::uint8_t back = 0;
    ASSERT_EQ(::pread(b.get(), &back, 1, 8), 1);
    EXPECT_EQ(back, 0x77);
    // A new map replaces the old one.
    ram.map({});
    EXPECT_EQ(ram.regions(), 0u);
    EXPECT_EQ(ram.generation(), 2u);
    EXPECT_EQ(ram.find(0x105, 1), nullptr);
}

TEST(MpqemuLink, AMapThatFailsLeavesNoRegion) {
    guest_memory ram;
    std::vector<sysmem_region> r(1);
    r[0].gpa = 0x1000;
    r[0].size = 4096;
    r[0].fd = unique_fd(::open("/dev/null", O_RDONLY | O_CLOEXEC));  // cannot be mapped shared, writable
    try {
        ram.map(std::move(r));
        FAIL() << "mapped /dev/null read-only as guest RAM";
    } catch (const link_error& e) {
        EXPECT_NE(std::string(e.what()).find("cannot map guest RAM at 0x1000"), std::string::npos)
            << e.what();
    }
    EXPECT_EQ(ram.regions(), 0u);
}

TEST(MpqemuLink, MalformedMessagesAreRefused) {
    {
        link_pair p;
        send_raw(p.qemu->fd(), 42, 0, 0);
        EXPECT_THROW(p.device->receive(), link_error);
    }
    {
        link_pair p;
        send_raw(p.qemu->fd(), 3, 4096, 0);  // more payload than any message has
        EXPECT_THROW(p.device->receive(), link_error);
    }
    {
        link_pair p;  // fds on a config read
        const unique_fd f = memfd_with({1});
        const auto cfg = config_payload({0, 0, 4});
        p.qemu->send(mpqemu_cmd::pci_cfgread, cfg.data(), cfg.size(), {f.get()});
        EXPECT_THROW(p.device->receive(), link_error);
    }
    {
        link_pair p;  // a config access of 3 bytes
        const auto cfg = config_payload({0, 0, 3});
        p.qemu->send(mpqemu_cmd::pci_cfgread, cfg.data(), cfg.size());
        const auto m = p.device->receive();
        ASSERT_TRUE(m);
        EXPECT_THROW(config_access_of(*m), link_error);
    }
    {
        link_pair p;  // QEMU gone: the end of the stream, then in the middle of a message
        p.qemu.reset();
        EXPECT_FALSE(p.device->receive());
    }
    {
        link_pair p;
        send_raw(p.qemu->fd(), 3, 12, 4);
        p.qemu.reset();
        EXPECT_THROW(p.device->receive(), link_error);
    }
}

// One message of the ivshmem protocol as QEMU reads it: an int64 and at most one fd.
std::pair<std::int64_t, int> doorbell_message(int fd) {
    std::int64_t v = 0;
    iovec iov{&v, sizeof v};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    if (::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC) != ssize_t(sizeof v)) return {-99, -1};
    int passed = -1;
    if (cmsghdr* c = CMSG_FIRSTHDR(&msg)) std::memcpy(&passed, CMSG_DATA(c), sizeof passed);
    return {v, passed};
}

TEST(Doorbell, GreetsAsTheIvshmemServerAndRingsEachVector) {
    int sv[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    const unique_fd qemu(sv[1]);
    doorbell_server bell(unique_fd(sv[0]), 2);
    // The version, QEMU's id, the shared memory (fd, with -1), then QEMU's two vectors.
    EXPECT_EQ(doorbell_message(qemu.get()).first, 0);
    EXPECT_EQ(doorbell_message(qemu.get()).first, doorbell_server::peer_id);
    const auto [minus_one, shm] = doorbell_message(qemu.get());
    EXPECT_EQ(minus_one, -1);
    ASSERT_GE(shm, 0);
    const unique_fd shared(shm);
    EXPECT_EQ(::lseek(shm, 0, SEEK_END), 4096);
    std::vector<unique_fd> vectors;
    for (int i = 0; i < 2; ++i) {
        const auto [id, fd] = doorbell_message(qemu.get());
        EXPECT_EQ(id, doorbell_server::peer_id);
        ASSERT_GE(fd, 0);
        vectors.emplace_back(fd);
    }
    bell.ring(1);
    bell.ring(1);
    std::uint64_t count = 0;
    ASSERT_EQ(::read(vectors[1].get(), &count, sizeof count), ssize_t(sizeof count));
    EXPECT_EQ(count, 2u);
    ::fcntl(vectors[0].get(), F_SETFL, O_NONBLOCK);
    EXPECT_LT(::read(vectors[0].get(), &count, sizeof count), 0) << "vector 0 never rang";
    EXPECT_THROW(bell.ring(2), link_error);
}

const pci_identity identity{0x1234, 0x5678, 0x120000, 2, 0x1af4, 0x1100};

TEST(PciConfig, IdentityAndHeader) {
    pci_config c(identity, 4096);
    EXPECT_EQ(c.read(reg::vendor, 2), 0x1234u);
    EXPECT_EQ(c.read(reg::vendor, 4), 0x56781234u);
    EXPECT_EQ(c.read(reg::revision, 4), 0x12000002u);  // class 0x12 (accelerator), subclass 0, rev 2
    EXPECT_EQ(c.read(reg::header_type, 1), 0u);
    EXPECT_EQ(c.read(reg::subsystem_vendor, 4), 0x11001af4u);
    EXPECT_EQ(c.read(reg::interrupt_pin, 1), 1u);
    EXPECT_EQ(c.read(0x100, 4), 0u);  // extended config space: none
    EXPECT_EQ(c.read(0xfe, 4), 0u);   // crosses the end
    c.write(reg::vendor, 0xffffffff, 4);
    EXPECT_EQ(c.read(reg::vendor, 4), 0x56781234u);  // read-only
}

TEST(PciConfig, Bar0IsSizedAndPlacedAsThePciSpecSays) {
    pci_config c(identity, 4096);
    c.write(reg::bar0, 0xffffffff, 4);
    EXPECT_EQ(c.read(reg::bar0, 4), 0xfffff000u);  // size 4 KiB, memory, 32-bit, not prefetchable
    for (std::uint32_t bar = reg::bar0 + 4; bar <= 0x24; bar += 4) {
        c.write(bar, 0xffffffff, 4);
        EXPECT_EQ(c.read(bar, 4), 0u) << "BAR at 0x" << std::hex << bar;  // not implemented
    }
    c.write(0x30, 0xffffffff, 4);
    EXPECT_EQ(c.read(0x30, 4), 0u);  // no expansion ROM
    c.write(reg::bar0, 0xfebf1234, 4);
    EXPECT_EQ(c.bar0_address(), 0xfebf1000u);
    std::uint32_t off = 0;
    EXPECT_FALSE(c.in_bar0(0xfebf1008, 4, off)) << "memory space still off";
    c.write(reg::command, 0xffff, 2);
    EXPECT_EQ(c.command(), command_memory | command_bus_master | command_intx_disable);
    EXPECT_TRUE(c.in_bar0(0xfebf1008, 4, off));
    EXPECT_EQ(off, 8u);
    EXPECT_FALSE(c.in_bar0(0xfebf1ffe, 4, off));
    EXPECT_FALSE(c.in_bar0(0xfebf2000, 1, off));
    // Byte writes into the BAR's address (as a guest may do).
    c.write(reg::bar0 + 3, 0xe0, 1);
    EXPECT_EQ(c.bar0_address(), 0xe0bf1000u);
    c.set_interrupt_pending(true);
    EXPECT_EQ(c.read(reg::status, 2) & status_interrupt, status_interrupt);
    c.write(reg::status, 0xffff, 2);  // not writable here
    EXPECT_EQ(c.read(reg::status, 2), status_interrupt);
    c.reset();
    EXPECT_EQ(c.command(), 0u);
    EXPECT_EQ(c.bar0_address(), 0u);
    EXPECT_EQ(c.read(reg::status, 2), 0u);
    EXPECT_THROW(pci_config(identity, 3000), std::invalid_argument);
}

// ---- Against Debian's QEMU

const char* const qemu_binary = "qemu-system-x86_64";

TEST(RealQemu, FirmwareEnumeratesTheFunctionThroughThisProcess) {
    const auto version = version_of(qemu_binary);
    if (!version) GTEST_SKIP() << qemu_binary << " not found";
    if (!has_device(qemu_binary, "x-pci-proxy-dev")) GTEST_SKIP() << qemu_binary << " has no x-pci-proxy-dev";
    EXPECT_EQ(version->major, 7) << "the link speaks QEMU 7.2's private protocol";

    int sv[2], db[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, db), 0);
    mpqemu_link link{unique_fd(sv[0])};
    // The interrupt bridge's companion device too: QEMU 7.2 crashes in its realize when the
    // greeting is out of order, so the firmware getting on with the bus checks the greeting as well.
    doorbell_server bell{unique_fd(db[0])};
    std::vector<unique_fd> more;
    more.emplace_back(db[1]);
    qemu_child qemu(qemu_binary,
                    {"-M", "pc,memory-backend=mem", "-m", "64M", "-object",
                     "memory-backend-memfd,id=mem,size=64M,share=on", "-nodefaults", "-nographic", "-serial",
                     "none", "-monitor", "none", "-device", "x-pci-proxy-dev,id=acc0,fd=3", "-chardev",
                     "socket,id=doorbell,fd=4", "-device", "ivshmem-doorbell,chardev=doorbell,vectors=1"},
                    unique_fd(sv[1]), std::move(more));

    pci_config config(identity, 4096);
    guest_memory ram;
    std::map<mpqemu_cmd, int> seen;
    bool vendor_read = false;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    // SeaBIOS enables the memory space once it has placed the BARs; then the test has what it wants.
    while (!(config.memory_enabled() && config.bar0_address() != 0) &&
           std::chrono::steady_clock::now() < deadline) {
        pollfd pfd{link.fd(), POLLIN, 0};
        if (::poll(&pfd, 1, 100) <= 0) {
            ASSERT_FALSE(qemu.poll()) << "QEMU ended with " << *qemu.poll();
            continue;
        }
        auto m = link.receive();
        ASSERT_TRUE(m) << "QEMU closed the link";
        ++seen[m->cmd];
        switch (m->cmd) {
            case mpqemu_cmd::sync_sysmem:
                ram.map(regions_of(*m));
                break;
            case mpqemu_cmd::pci_cfgread: {
                const config_access c = config_access_of(*m);
                vendor_read = vendor_read || c.addr == reg::vendor;
                link.reply(config.read(c.addr, unsigned(c.len)));
                break;
            }
            case mpqemu_cmd::pci_cfgwrite: {
                const config_access c = config_access_of(*m);
                config.write(c.addr, c.value, unsigned(c.len));
                link.reply(0);
                break;
            }
            case mpqemu_cmd::bar_read:
            case mpqemu_cmd::bar_write:
                bar_access_of(*m);
                link.reply(0);
                break;
            case mpqemu_cmd::device_reset:
                config.reset();
                link.reply(0);
                break;
            default:
                break;
        }
    }
    ASSERT_TRUE(config.memory_enabled()) << "the firmware never enabled the function's memory space";
    EXPECT_TRUE(vendor_read);
    EXPECT_GT(seen[mpqemu_cmd::sync_sysmem], 0);
    EXPECT_GT(seen[mpqemu_cmd::pci_cfgwrite], 0);
    EXPECT_NE(config.bar0_address(), 0u);
    EXPECT_EQ(config.bar0_address() % config.bar0_size(), 0u) << "BAR0 is naturally aligned";
    // Guest RAM is shared: the firmware has written its interrupt vector table at 0.
    ASSERT_GT(ram.regions(), 0u);
    const std::uint8_t* ivt = ram.find(0, 1024);
    ASSERT_NE(ivt, nullptr);
    bool written = false;
    for (int i = 0; i < 1024; ++i)
        written = written || ivt[i] != 0;
    EXPECT_TRUE(written) << "guest RAM at 0 reads as zeros here";
    EXPECT_FALSE(qemu.poll()) << "QEMU ended early";
}

}  // namespace
