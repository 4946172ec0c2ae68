// QEMU's side of the link played from a test's own thread, as a script: the requests a real QEMU
// sends (guest RAM, config writes, BAR accesses), each waiting for the device's RET. For the shell's
// and the platforms' tests that need no real QEMU.
#pragma once

#include <sys/socket.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "systolic/qemu_pci/mpqemu_link.h"
#include "systolic/qemu_pci/pci_config.h"

namespace systolic::test {

struct scripted_qemu {
    explicit scripted_qemu(qemu_pci::unique_fd fd) : link(std::move(fd)) {}
    qemu_pci::mpqemu_link link;
    std::vector<std::string> failures;  // replies that were not a RET with a value

    std::uint64_t answer() {
        const auto m = link.receive();
        if (!m || m->cmd != qemu_pci::mpqemu_cmd::ret || m->payload.size() != 8) {
            failures.push_back("no RET");
            return 0;
        }
        std::uint64_t v;
        std::memcpy(&v, m->payload.data(), 8);
        return v;
    }
    // Guest RAM: `size` bytes of `fd` at guest-physical `gpa` (SYNC_SYSMEM, which has no reply).
    void sync_sysmem(std::uint64_t gpa, std::uint64_t size, int fd) {
        std::vector<std::uint8_t> sync(qemu_pci::max_payload, 0);
        std::memcpy(&sync[0], &gpa, 8);
        std::memcpy(&sync[64], &size, 8);
        link.send(qemu_pci::mpqemu_cmd::sync_sysmem, sync.data(), sync.size(), {fd});
    }
    void config_write(std::uint32_t addr, std::uint32_t value, int len) {
        const auto p = qemu_pci::config_payload({addr, value, len});
        link.send(qemu_pci::mpqemu_cmd::pci_cfgwrite, p.data(), p.size());
        answer();
    }
    std::uint64_t bar_op(qemu_pci::mpqemu_cmd cmd, std::uint64_t addr, std::uint64_t value = 0) {
        const auto p = qemu_pci::bar_payload({addr, value, 4, true});
        link.send(cmd, p.data(), p.size());
        return answer();
    }
    std::uint64_t bar_read(std::uint64_t addr) { return bar_op(qemu_pci::mpqemu_cmd::bar_read, addr); }
    void bar_write(std::uint64_t addr, std::uint64_t value) {
        bar_op(qemu_pci::mpqemu_cmd::bar_write, addr, value);
    }
    // QEMU is gone: the device's simulation ends.
    void hang_up() { ::shutdown(link.fd(), SHUT_RDWR); }
};

}  // namespace systolic::test
