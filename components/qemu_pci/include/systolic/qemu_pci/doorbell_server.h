// The interrupt bridge that works under TCG: the server end of a companion
// `-device ivshmem-doorbell,chardev=ID,vectors=N` whose `-chardev socket,id=ID,fd=M` is a socket
// this process holds the other end of (QEMU's ivshmem protocol, docs/specs/ivshmem-spec.rst). The
// server hands QEMU a shared memory (a small memfd nobody uses) and one eventfd per vector; QEMU
// makes each an MSI-X vector of that device, so that writing vector i's eventfd raises it in the
// guest, once the guest's driver has enabled MSI-X and bus mastering on the device. Under TCG this
// is the only way a device process interrupts the guest: QEMU wires the proxy's INTx to KVM alone.
// Plain C++.
#pragma once

#include <cstdint>
#include <vector>

#include "systolic/qemu_pci/mpqemu_link.h"

namespace systolic::qemu_pci {

class doorbell_server {
public:
    // Greets QEMU on `socket` at once (QEMU reads it when it realizes the device): the protocol's
    // version, QEMU's peer id, the shared memory's fd, then the peer's eventfds, in that order (with
    // the fd before the eventfds, or QEMU 7.2 crashes in realize). Throws link_error.
    explicit doorbell_server(unique_fd socket, unsigned vectors = 1, std::uint64_t shared_bytes = 4096);

    // Raises MSI-X vector `vector` in the guest (a write to its eventfd; QEMU coalesces repeats the
    // guest has not yet taken).
    void ring(unsigned vector = 0);
    unsigned vectors() const { return unsigned(m_events.size()); }

    // The peer id this server gives QEMU, as its vectors' messages carry it.
    static constexpr std::int64_t peer_id = 1;

private:
    void send(std::int64_t value, int fd = -1);
    unique_fd m_socket, m_shared;
    std::vector<unique_fd> m_events;
};

}  // namespace systolic::qemu_pci
