#include "systolic/qemu_pci/mpqemu_link.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace systolic::qemu_pci {

namespace {

// QEMU's MPQemuMsg up to its payload: int cmd, 4 bytes of padding, size_t size.
constexpr std::size_t header_size = 16;
constexpr std::int32_t command_count = std::int32_t(std::size(mpqemu_cmd_names));

template <class T>
T field(const std::vector<std::uint8_t>& p, std::size_t at) {
    T v;
    std::memcpy(&v, p.data() + at, sizeof v);
    return v;
}
template <class T>
void put(std::vector<std::uint8_t>& p, std::size_t at, T v) {
    std::memcpy(p.data() + at, &v, sizeof v);
}

std::string os_error(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

void need(const mpqemu_message& m, mpqemu_cmd a, mpqemu_cmd b, std::size_t size) {
    if (m.cmd != a && m.cmd != b)
        throw link_error(std::string("expected ") + to_string(a) + " or " + to_string(b) + ", got " +
                         to_string(m.cmd));
    if (m.payload.size() < size)
        throw link_error(std::string(to_string(m.cmd)) + " carries " + std::to_string(m.payload.size()) +
                         " bytes, fewer than its " + std::to_string(size));
}

// Reads exactly n bytes (after the first recvmsg, which took the fds), or returns false at the end
// of the stream before the first byte.
bool read_all(int fd, std::uint8_t* out, std::size_t n, bool started) {
    std::size_t got = 0;
    while (got < n) {
        const ssize_t r = ::read(fd, out + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) throw link_error(os_error("reading from QEMU's socket"));
        if (r == 0) {
            if (got == 0 && !started) return false;
            throw link_error("QEMU's socket closed in the middle of a message");
        }
        got += std::size_t(r);
    }
    return true;
}

}  // namespace

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
    if (this != &o) {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = o.release();
    }
    return *this;
}

unique_fd::~unique_fd() {
    if (m_fd >= 0) ::close(m_fd);
}

config_access config_access_of(const mpqemu_message& m) {
    need(m, mpqemu_cmd::pci_cfgread, mpqemu_cmd::pci_cfgwrite, 12);
    config_access c{field<std::uint32_t>(m.payload, 0), field<std::uint32_t>(m.payload, 4),
                    field<std::int32_t>(m.payload, 8)};
    if (c.len != 1 && c.len != 2 && c.len != 4)
        throw link_error(std::string(to_string(m.cmd)) + " of " + std::to_string(c.len) + " bytes");
    return c;
}

bar_access bar_access_of(const mpqemu_message& m) {
    need(m, mpqemu_cmd::bar_read, mpqemu_cmd::bar_write, 21);
    bar_access b{field<std::uint64_t>(m.payload, 0), field<std::uint64_t>(m.payload, 8),
                 field<std::uint32_t>(m.payload, 16), m.payload[20] != 0};
    if (b.size != 1 && b.size != 2 && b.size != 4 && b.size != 8)
        throw link_error(std::string(to_string(m.cmd)) + " of " + std::to_string(b.size) + " bytes");
    return b;
}

std::vector<sysmem_region> regions_of(mpqemu_message& m) {
    need(m, mpqemu_cmd::sync_sysmem, mpqemu_cmd::sync_sysmem, max_payload);
    std::vector<sysmem_region> out;
    for (std::size_t i = 0; i < m.fds.size(); ++i) {
        sysmem_region r;
        r.gpa = field<std::uint64_t>(m.payload, 8 * i);
        r.size = field<std::uint64_t>(m.payload, 8 * (max_fds + i));
        r.offset = field<std::int64_t>(m.payload, 8 * (2 * max_fds + i));
        r.fd = std::move(m.fds[i]);
        out.push_back(std::move(r));
    }
    m.fds.clear();
    return out;
}

std::optional<mpqemu_message> mpqemu_link::receive() {
    // The header comes with the fds (QEMU sends the whole message in one sendmsg, the fds as one
    // SCM_RIGHTS); recvmsg on a stream socket may still return fewer bytes, read on.
    std::uint8_t header[header_size];
    alignas(cmsghdr) char control[CMSG_SPACE(max_fds * sizeof(int))];
    iovec iov{header, header_size};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    ssize_t r;
    do {
        r = ::recvmsg(m_fd.get(), &msg, MSG_CMSG_CLOEXEC);
    } while (r < 0 && errno == EINTR);
    if (r < 0) throw link_error(os_error("reading from QEMU's socket"));
    if (r == 0) return std::nullopt;
    mpqemu_message m;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        const std::size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (std::size_t i = 0; i < n; ++i) {
            int fd;
            std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
            m.fds.emplace_back(fd);
        }
    }
    if (msg.msg_flags & MSG_CTRUNC) throw link_error("a message from QEMU carries more than 8 fds");
    read_all(m_fd.get(), header + r, header_size - std::size_t(r), true);
    std::int32_t cmd;
    std::uint64_t size;
    std::memcpy(&cmd, header, sizeof cmd);
    std::memcpy(&size, header + 8, sizeof size);
    if (cmd < 0 || cmd >= command_count)
        throw link_error("unknown command " + std::to_string(cmd) + " from QEMU");
    if (size > max_payload)
        throw link_error("a " + std::string(to_string(mpqemu_cmd(cmd))) + " of " + std::to_string(size) +
                         " bytes, more than the protocol's " + std::to_string(max_payload));
    m.cmd = mpqemu_cmd(cmd);
    m.payload.assign(std::size_t(size), 0);
    read_all(m_fd.get(), m.payload.data(), m.payload.size(), true);
    // Only SYNC_SYSMEM and SET_IRQFD carry fds (QEMU's mpqemu_msg_valid).
    if (!m.fds.empty() && m.cmd != mpqemu_cmd::sync_sysmem && m.cmd != mpqemu_cmd::set_irqfd)
        throw link_error(std::string(to_string(m.cmd)) + " carries file descriptors");
    return m;
}

void mpqemu_link::reply(std::uint64_t value) {
    send(mpqemu_cmd::ret, &value, sizeof value);
}

void mpqemu_link::send(mpqemu_cmd cmd, const void* payload, std::size_t size, const std::vector<int>& fds) {
    if (size > max_payload || fds.size() > max_fds) throw link_error("a message too large to send");
    std::uint8_t header[header_size] = {};
    const std::int32_t c = std::int32_t(cmd);
    const std::uint64_t s = size;
    std::memcpy(header, &c, sizeof c);
    std::memcpy(header + 8, &s, sizeof s);
    iovec iov[2] = {{header, header_size}, {const_cast<void*>(payload), size}};
    alignas(cmsghdr) char control[CMSG_SPACE(max_fds * sizeof(int))] = {};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = size ? 2 : 1;
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(fds.size() * sizeof(int));
        cmsghdr* h = CMSG_FIRSTHDR(&msg);
        h->cmsg_level = SOL_SOCKET;
        h->cmsg_type = SCM_RIGHTS;
        h->cmsg_len = CMSG_LEN(fds.size() * sizeof(int));
        std::memcpy(CMSG_DATA(h), fds.data(), fds.size() * sizeof(int));
    }
    std::size_t left = header_size + size;
    while (left > 0) {
        const ssize_t w = ::sendmsg(m_fd.get(), &msg, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) throw link_error(os_error("writing to QEMU's socket"));
        left -= std::size_t(w);
        // A short write (rare on a UNIX socket): the rest, without the fds again.
        msg.msg_control = nullptr;
        msg.msg_controllen = 0;
        std::size_t skip = std::size_t(w);
        while (msg.msg_iovlen > 0 && skip >= msg.msg_iov[0].iov_len) {
            skip -= msg.msg_iov[0].iov_len;
            ++msg.msg_iov;
            --msg.msg_iovlen;
        }
        if (msg.msg_iovlen > 0) {
            msg.msg_iov[0].iov_base = static_cast<std::uint8_t*>(msg.msg_iov[0].iov_base) + skip;
            msg.msg_iov[0].iov_len -= skip;
        }
    }
}

std::vector<std::uint8_t> config_payload(const config_access& c) {
    std::vector<std::uint8_t> p(12);
    put(p, 0, c.addr);
    put(p, 4, c.value);
    put(p, 8, c.len);
    return p;
}

std::vector<std::uint8_t> bar_payload(const bar_access& b) {
    std::vector<std::uint8_t> p(24);
    put(p, 0, b.addr);
    put(p, 8, b.value);
    put(p, 16, b.size);
    p[20] = b.memory ? 1 : 0;
    return p;
}

}  // namespace systolic::qemu_pci
