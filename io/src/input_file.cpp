#include "io/input_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "io/error.h"
#include "io/text.h"

namespace systolic::io {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& message) {
    throw io_error(printable(path) + ": " + message);
}

// The limits are whole MiB.
std::string byte_count(std::uint64_t bytes) {
    return bytes % (1 << 20) == 0 ? std::to_string(bytes >> 20) + " MiB" : std::to_string(bytes) + " bytes";
}

std::string not_regular(unsigned mode) {
    return "cannot open: not a regular file (" + file_kind(mode) + ")";
}

}  // namespace

input_file::input_file(const std::string& path) : m_path(path) {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer.
    m_fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (m_fd < 0) {
        const int err = errno;
        // A socket cannot be opened at all (ENXIO, "No such device or address"): say what it is.
        struct stat st {};
        if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) fail(path, not_regular(st.st_mode));
        fail(path, "cannot open: " + errno_text(err));
    }
    struct stat st {};
    if (::fstat(m_fd, &st) != 0) {
        const int err = errno;
        ::close(m_fd);
        fail(path, "cannot stat: " + errno_text(err));
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(m_fd);
        fail(path, not_regular(st.st_mode));
    }
    const int flags = ::fcntl(m_fd, F_GETFL);
    if (flags >= 0) ::fcntl(m_fd, F_SETFL, flags & ~O_NONBLOCK);
    m_size = static_cast<std::uint64_t>(st.st_size);
}

input_file::~input_file() {
    if (m_fd >= 0) ::close(m_fd);
}

std::uint64_t input_file::known_size() {
    if (m_size != 0) return m_size;
    char probe = 0;
    const ssize_t got = ::pread(m_fd, &probe, 1, 0);
    if (got > 0)
        fail(m_path,
             "not a regular file with a known size (it reports 0 bytes but holds data, as /proc files do)");
    return 0;
}

bool input_file::read(void* dst, std::size_t n) {
    auto* p = static_cast<unsigned char*>(dst);
    while (n > 0) {
        const ssize_t got = ::read(m_fd, p, n < (std::size_t{1} << 30) ? n : (std::size_t{1} << 30));
        if (got < 0 && errno == EINTR) continue;
        if (got <= 0) return false;
        p += got;
        n -= static_cast<std::size_t>(got);
    }
    return true;
}

std::string input_file::read_all(std::uint64_t limit) {
    if (m_size > limit) fail(m_path, "larger than " + byte_count(limit) + "; refusing to read it");
    std::string out;
    out.reserve(static_cast<std::size_t>(m_size));
    char buf[1 << 16];
    while (true) {
        const ssize_t got = ::read(m_fd, buf, sizeof buf);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) fail(m_path, "read error: " + errno_text(errno));
        if (got == 0) break;
        if (out.size() + static_cast<std::size_t>(got) > limit)
            fail(m_path, "larger than " + byte_count(limit) + "; refusing to read it");
        out.append(buf, static_cast<std::size_t>(got));
    }
    return out;
}

std::string read_text_file(const std::string& path, std::uint64_t limit) {
    return input_file(path).read_all(limit);
}

}  // namespace systolic::io
