// QEMU as the device process's child: the platform makes a socketpair, starts qemu-system-x86_64
// with the other end as its fd 3 (`-device x-pci-proxy-dev,fd=3`) and serves it; more sockets (the
// doorbell's) become fds 4, 5, ... The child never
// outlives the platform: it is killed when the platform's thread ends (PR_SET_PDEATHSIG, so also
// when the platform is killed) and when the qemu_child is destroyed. Plain C++ (POSIX).
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "systolic/qemu_pci/mpqemu_link.h"

namespace systolic::qemu_pci {

// What `BINARY --version` says, e.g. {7, 2}; nothing when it cannot be run or read.
struct qemu_version {
    int major = 0, minor = 0;
};
std::optional<qemu_version> version_of(const std::string& binary);
// Whether `BINARY -device help` lists the device (x-pci-proxy-dev is experimental: a build may
// leave it out).
bool has_device(const std::string& binary, const std::string& device);

class qemu_child {
public:
    // Starts binary with args: `device_end` becomes the child's fd 3 (`-device x-pci-proxy-dev,fd=3`)
    // and more[i] its fd 4 + i (the doorbell's socket: `-chardev socket,id=...,fd=4`); all are
    // closed here. Throws link_error when the process cannot be started.
    qemu_child(const std::string& binary, const std::vector<std::string>& args, unique_fd device_end,
               std::vector<unique_fd> more = {});
    qemu_child(const qemu_child&) = delete;
    qemu_child& operator=(const qemu_child&) = delete;
    // Ends the child if it still runs: SIGTERM, then SIGKILL after a grace period.
    ~qemu_child();

    pid_t pid() const { return m_pid; }
    // Its exit status (or 128 + the signal that ended it) once it has ended; nothing while it runs.
    std::optional<int> poll();
    // Ends it now (as the destructor does) and returns how it ended.
    int stop();

private:
    pid_t m_pid = -1;
    std::optional<int> m_status;
};

}  // namespace systolic::qemu_pci
