#include "systolic/qemu_pci/doorbell_server.h"

#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace systolic::qemu_pci {

namespace {

std::string os_error(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

doorbell_server::doorbell_server(unique_fd socket, unsigned vectors, std::uint64_t shared_bytes)
    : m_socket(std::move(socket)) {
    if (vectors == 0) throw link_error("the doorbell needs at least one vector");
    m_shared = unique_fd(::memfd_create("systolic-doorbell", MFD_CLOEXEC));
    if (m_shared.get() < 0 || ::ftruncate(m_shared.get(), off_t(shared_bytes)) != 0)
        throw link_error(os_error("the doorbell's shared memory"));
    for (unsigned i = 0; i < vectors; ++i) {
        m_events.emplace_back(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
        if (m_events.back().get() < 0) throw link_error(os_error("the doorbell's eventfd"));
    }
    send(0);        // the protocol's version
    send(peer_id);  // QEMU's own id
    send(-1, m_shared.get());
    for (const unique_fd& e : m_events)
        send(peer_id, e.get());  // QEMU's vectors, in order
}

void doorbell_server::ring(unsigned vector) {
    if (vector >= m_events.size())
        throw link_error("the doorbell has " + std::to_string(m_events.size()) + " vectors, not " +
                         std::to_string(vector + 1));
    const std::uint64_t one = 1;
    ssize_t w;
    do {
        w = ::write(m_events[vector].get(), &one, sizeof one);
    } while (w < 0 && errno == EINTR);
    // EAGAIN: the counter is full of rings QEMU has not taken; one more changes nothing.
    if (w < 0 && errno != EAGAIN) throw link_error(os_error("ringing the doorbell"));
}

void doorbell_server::send(std::int64_t value, int fd) {
    iovec iov{&value, sizeof value};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    if (fd >= 0) {
        msg.msg_control = control;
        msg.msg_controllen = sizeof control;
        cmsghdr* h = CMSG_FIRSTHDR(&msg);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(sizeof(int));
        std::memcpy(CMSG_DATA(h), &fd, sizeof fd);
    }
    ssize_t w;
    do {
        w = ::sendmsg(m_socket.get(), &msg, MSG_NOSIGNAL);
    } while (w < 0 && errno == EINTR);
    if (w != ssize_t(sizeof value)) throw link_error(os_error("greeting QEMU's ivshmem-doorbell"));
}

}  // namespace systolic::qemu_pci
