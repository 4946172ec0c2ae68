#include "io/process.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <mutex>

#include "io/error.h"
#include "io/text.h"

namespace systolic::io {

namespace cleanup {

// Slots are never freed, only reused, so the handler can walk the list while it grows.
struct slot {
    enum : int { free_slot, claimed, file, directory };
    std::atomic<int> state{claimed};
    char path[PATH_MAX] = {};
    slot* next = nullptr;
};

namespace {
std::atomic<slot*> g_head{nullptr};
std::mutex g_mutex;  // between add() and drop(); the handler only reads
}  // namespace

slot* add(const std::string& path, bool is_directory) {
    if (path.size() >= PATH_MAX)
        throw io_error(printable(path) + ": the path is longer than the system's limit of " +
                       std::to_string(PATH_MAX - 1) + " bytes");
    std::lock_guard<std::mutex> lock(g_mutex);
    slot* s = g_head.load();
    while (s != nullptr) {
        int expected = slot::free_slot;
        if (s->state.compare_exchange_strong(expected, slot::claimed)) break;
        s = s->next;
    }
    if (s == nullptr) {
        s = new slot;  // claimed until its path is in place
        s->next = g_head.load();
        g_head.store(s);
    }
    std::memcpy(s->path, path.c_str(), path.size() + 1);
    s->state.store(is_directory ? slot::directory : slot::file);
    return s;
}

void drop(slot* s) {
    if (s == nullptr) return;
    std::lock_guard<std::mutex> lock(g_mutex);
    s->state.store(slot::free_slot);
}

namespace {

// Async-signal-safe: atomic loads, unlink, rmdir, signal, raise.
void remove_all() {
    for (slot* s = g_head.load(); s != nullptr; s = s->next)
        if (s->state.load() == slot::file) ::unlink(s->path);
    for (slot* s = g_head.load(); s != nullptr; s = s->next)
        if (s->state.load() == slot::directory) ::rmdir(s->path);
}

}  // namespace
}  // namespace cleanup

const int stop_signals[3] = {SIGINT, SIGTERM, SIGHUP};

void end_by_signal(int sig) {
    cleanup::remove_all();
    // The default action: the process ends by the signal once it is unblocked (at once outside a
    // handler; when the handler returns inside one).
    ::signal(sig, SIG_DFL);
    ::raise(sig);
}

namespace {

extern "C" void on_fatal_signal(int sig) {
    const int saved = errno;
    end_by_signal(sig);
    errno = saved;
}

bool is_open(int fd) {
    return ::fcntl(fd, F_GETFD) != -1 || errno != EBADF;
}

void fill_with_dev_null(int fd, int flags) {
    const int null = ::open("/dev/null", flags | O_CLOEXEC);
    if (null >= 0 && null != fd) {
        ::dup2(null, fd);
        ::close(null);
    }
}

[[noreturn]] void stdout_failed(int err) {
    // Every executable writes stdout before it renames its outputs into place.
    throw io_error("writing to stdout failed: " + errno_text(err != 0 ? err : EIO) +
                   "; no output files written");
}

}  // namespace

int start(const char* program) {
    if (!is_open(STDIN_FILENO)) fill_with_dev_null(STDIN_FILENO, O_RDONLY);
    if (!is_open(STDERR_FILENO)) fill_with_dev_null(STDERR_FILENO, O_WRONLY);
    const bool stdout_closed = !is_open(STDOUT_FILENO);
    // Read-only, so that a write to it fails as it would have.
    if (stdout_closed) fill_with_dev_null(STDOUT_FILENO, O_RDONLY);
    ::signal(SIGPIPE, SIG_IGN);
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sigemptyset(&sa.sa_mask);
    for (const int sig : stop_signals)
        sigaddset(&sa.sa_mask, sig);
    for (const int sig : stop_signals) {
        struct sigaction old {};
        // A signal ignored by whoever started us (nohup) stays ignored.
        if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) continue;
        ::sigaction(sig, &sa, nullptr);
    }
    if (stdout_closed) {
        std::cerr << program << ": error: writing to stdout failed: stdout is closed; nothing was run\n";
        return 2;
    }
    return 0;
}

void write_stdout(std::string_view text) {
    errno = 0;
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    flush_stdout();
}

void flush_stdout() {
    if (!std::cout) stdout_failed(errno);
    errno = 0;
    std::cout.flush();
    if (!std::cout) stdout_failed(errno);
}

}  // namespace systolic::io
