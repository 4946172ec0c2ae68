#include "systolic/observe/file_sink.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace systolic::observe {

file_sink::file_sink(int fd, std::string name) : m_fd(fd), m_name(std::move(name)) {
    m_buf.reserve(capacity);
}

file_sink::~file_sink() {
    if (m_fd >= 0) ::close(m_fd);
}

void file_sink::flush() {
    std::string_view rest(m_buf);
    while (m_error.empty() && !rest.empty()) {
        const ssize_t n = ::write(m_fd, rest.data(), rest.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            m_error = m_name + ": write failed: " + std::strerror(n < 0 ? errno : EIO);
            break;
        }
        rest.remove_prefix(static_cast<std::size_t>(n));
        m_written += static_cast<std::uint64_t>(n);
    }
    m_buf.clear();
}

std::string file_sink::finish() {
    if (m_fd < 0) return m_error;
    flush();
    if (m_error.empty() && ::fsync(m_fd) != 0) m_error = m_name + ": sync failed: " + std::strerror(errno);
    if (::close(m_fd) != 0 && m_error.empty()) m_error = m_name + ": close failed: " + std::strerror(errno);
    m_fd = -1;
    return m_error;
}

}  // namespace systolic::observe
