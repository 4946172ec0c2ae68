// QEMU's multi-process PCI link (QEMU 7.2, hw/remote/: `-device x-pci-proxy-dev,fd=N`), the device
// process's end: QEMU forwards one PCI function's config space and BAR accesses over a UNIX stream
// socket and hands over guest RAM as memory file descriptors; the device answers each request with
// RET (docs/qemu.md). Plain C++ over a file descriptor, no SystemC, so that it is tested against a
// fake peer and against a real QEMU alike. The protocol is QEMU-private: these are 7.2's messages.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "systolic/names.h"

namespace systolic::qemu_pci {

// The messages, by their number on the wire (QEMU's MPQemuCmd, in its order).
enum class mpqemu_cmd : std::int32_t {
    sync_sysmem,
    ret,
    pci_cfgwrite,
    pci_cfgread,
    bar_write,
    bar_read,
    set_irqfd,
    device_reset,
};
inline constexpr enum_name<mpqemu_cmd> mpqemu_cmd_names[] = {
    {mpqemu_cmd::sync_sysmem, "SYNC_SYSMEM", "QEMU: guest RAM's regions as memory fds (no reply)"},
    {mpqemu_cmd::ret, "RET", "the device's reply: one 64-bit value"},
    {mpqemu_cmd::pci_cfgwrite, "PCI_CFGWRITE", "QEMU: a config space write (RET)"},
    {mpqemu_cmd::pci_cfgread, "PCI_CFGREAD", "QEMU: a config space read (RET with the value)"},
    {mpqemu_cmd::bar_write, "BAR_WRITE", "QEMU: a write into a BAR (RET)"},
    {mpqemu_cmd::bar_read, "BAR_READ", "QEMU: a read from a BAR (RET with the value)"},
    {mpqemu_cmd::set_irqfd, "SET_IRQFD", "QEMU: the INTx irqfd and resamplefd, KVM only (no reply)"},
    {mpqemu_cmd::device_reset, "DEVICE_RESET", "QEMU: reset the function (RET)"},
};
static_assert(names_in_order(mpqemu_cmd_names));
constexpr const char* to_string(mpqemu_cmd c) {
    return name_of(mpqemu_cmd_names, c);
}

// A malformed or unexpected message, or a failed read or write on the socket: one line.
struct link_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// A file descriptor that closes itself.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) : m_fd(fd) {}
    unique_fd(unique_fd&& o) noexcept : m_fd(o.release()) {}
    unique_fd& operator=(unique_fd&& o) noexcept;
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    ~unique_fd();
    int get() const { return m_fd; }
    int release() {
        const int fd = m_fd;
        m_fd = -1;
        return fd;
    }

private:
    int m_fd = -1;
};

// The wire's limits (QEMU's REMOTE_MAX_FDS and its union of payloads).
inline constexpr std::size_t max_fds = 8;
inline constexpr std::size_t max_payload = 3 * 8 * max_fds;  // SYNC_SYSMEM's three arrays

// One message as it came off the socket: its command, payload bytes and file descriptors.
struct mpqemu_message {
    mpqemu_cmd cmd = mpqemu_cmd::ret;
    std::vector<std::uint8_t> payload;
    std::vector<unique_fd> fds;
};

// The payloads, decoded (native x86-64 layout, little-endian).
struct config_access {
    std::uint32_t addr = 0, value = 0;
    std::int32_t len = 0;  // 1, 2 or 4 bytes
};
struct bar_access {
    std::uint64_t addr = 0;  // the absolute guest-physical address, not an offset into the BAR
    std::uint64_t value = 0;
    std::uint32_t size = 0;  // 1, 2, 4 or 8 bytes
    bool memory = true;      // false: an I/O BAR
};
struct sysmem_region {
    std::uint64_t gpa = 0, size = 0;
    std::int64_t offset = 0;  // into the fd
    unique_fd fd;
};

// Throw link_error unless the message is a well-formed `cmd` of its kind.
config_access config_access_of(const mpqemu_message& m);
bar_access bar_access_of(const mpqemu_message& m);
// Takes the message's fds: one region per fd.
std::vector<sysmem_region> regions_of(mpqemu_message& m);

// The device's end of the socket (it owns the fd).
class mpqemu_link {
public:
    explicit mpqemu_link(unique_fd fd) : m_fd(std::move(fd)) {}
    int fd() const { return m_fd.get(); }
    // The next message, or nothing when QEMU closed the socket (its process ended). Blocks until a
    // whole message is there; throws link_error on a malformed one.
    std::optional<mpqemu_message> receive();
    // The reply to a request (RET).
    void reply(std::uint64_t value);
    // Any message (what QEMU sends: the tests' fake peer speaks through this).
    void send(mpqemu_cmd cmd, const void* payload, std::size_t size, const std::vector<int>& fds = {});

private:
    unique_fd m_fd;
};

// Payloads as QEMU lays them out, for a peer that sends them (the tests).
std::vector<std::uint8_t> config_payload(const config_access& c);
std::vector<std::uint8_t> bar_payload(const bar_access& b);

}  // namespace systolic::qemu_pci
