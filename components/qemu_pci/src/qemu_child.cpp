#include "systolic/qemu_pci/qemu_child.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <regex>
#include <thread>

namespace systolic::qemu_pci {

namespace {

// argv for execvp, made before fork: the child of a threaded program may not allocate.
std::vector<char*> argv_of(const std::string& binary, const std::vector<std::string>& args) {
    std::vector<char*> argv{const_cast<char*>(binary.c_str())};
    for (const auto& a : args)
        argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    return argv;
}

// The whole standard output of `binary args...` (stderr discarded), or nothing when it cannot run
// or fails.
std::optional<std::string> output_of(const std::string& binary, const std::vector<std::string>& args) {
    int out[2];
    if (::pipe2(out, O_CLOEXEC) != 0) return std::nullopt;
    std::vector<char*> argv = argv_of(binary, args);
    const pid_t pid = ::fork();
    if (pid < 0) {
        ::close(out[0]);
        ::close(out[1]);
        return std::nullopt;
    }
    if (pid == 0) {
        ::dup2(out[1], 1);
        const int null = ::open("/dev/null", O_RDWR);
        if (null >= 0) {
            ::dup2(null, 0);
            ::dup2(null, 2);
        }
        ::execvp(binary.c_str(), argv.data());
        ::_exit(127);
    }
    ::close(out[1]);
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t r = ::read(out[0], buf, sizeof buf);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        text.append(buf, std::size_t(r));
    }
    ::close(out[0]);
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
    return text;
}

int exit_code(int status) {
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

}  // namespace

std::optional<qemu_version> version_of(const std::string& binary) {
    const auto text = output_of(binary, {"--version"});
    std::smatch m;
    if (!text || !std::regex_search(*text, m, std::regex(R"(version (\d+)\.(\d+))"))) return std::nullopt;
    return qemu_version{std::stoi(m[1]), std::stoi(m[2])};
}

bool has_device(const std::string& binary, const std::string& device) {
    const auto text = output_of(binary, {"-device", "help"});
    return text && text->find("name \"" + device + "\"") != std::string::npos;
}

qemu_child::qemu_child(const std::string& binary, const std::vector<std::string>& args, unique_fd device_end,
                       std::vector<unique_fd> more) {
    std::vector<unique_fd> fds;
    fds.push_back(std::move(device_end));
    for (unique_fd& f : more)
        fds.push_back(std::move(f));
    // An exec that fails is told through a close-on-exec pipe: errno, or nothing when exec worked.
    // Its ends sit above the child's fds 3, 4, ..., which the child's dup2 would otherwise clobber.
    int report[2];
    if (::pipe2(report, O_CLOEXEC) != 0) throw link_error(std::string("pipe: ") + std::strerror(errno));
    for (int& end : report) {
        const int high = ::fcntl(end, F_DUPFD_CLOEXEC, 64);
        ::close(end);
        end = high;
    }
    if (report[0] < 0 || report[1] < 0) throw link_error(std::string("pipe: ") + std::strerror(errno));
    const pid_t parent = ::getpid();
    std::vector<char*> argv = argv_of(binary, args);
    std::vector<int> sources;
    for (const unique_fd& f : fds)
        sources.push_back(f.get());
    m_pid = ::fork();
    if (m_pid < 0) {
        const int err = errno;
        ::close(report[0]);
        ::close(report[1]);
        throw link_error(std::string("cannot start ") + binary + ": " + std::strerror(err));
    }
    if (m_pid == 0) {
        // Killed when the thread that started it ends, and at once if the platform already has.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != parent) ::_exit(127);
        // Its own process group: a Ctrl-C on the terminal reaches the platform, which ends it.
        ::setpgid(0, 0);
        // fds[i] to 3 + i: each first out of the way (a source may sit on another's target).
        for (int& fd : sources)
            if ((fd = ::fcntl(fd, F_DUPFD_CLOEXEC, 64)) < 0) ::_exit(127);
        for (std::size_t i = 0; i < sources.size(); ++i)
            if (::dup2(sources[i], int(3 + i)) < 0) ::_exit(127);
        sigset_t none;
        sigemptyset(&none);
        ::sigprocmask(SIG_SETMASK, &none, nullptr);
        ::execvp(binary.c_str(), argv.data());
        const int err = errno;
        (void)!::write(report[1], &err, sizeof err);
        ::_exit(127);
    }
    ::close(report[1]);
    int err = 0;
    ssize_t r;
    do {
        r = ::read(report[0], &err, sizeof err);
    } while (r < 0 && errno == EINTR);
    ::close(report[0]);
    if (r == sizeof err) {
        int status;
        ::waitpid(m_pid, &status, 0);
        m_pid = -1;
        throw link_error(std::string("cannot run ") + binary + ": " + std::strerror(err));
    }
}

qemu_child::~qemu_child() {
    if (m_pid > 0) stop();
}

std::optional<int> qemu_child::poll() {
    if (m_status || m_pid <= 0) return m_status;
    int status;
    const pid_t r = ::waitpid(m_pid, &status, WNOHANG);
    if (r == m_pid) m_status = exit_code(status);
    return m_status;
}

int qemu_child::stop() {
    if (poll()) return *m_status;
    ::kill(m_pid, SIGTERM);
    for (int i = 0; i < 200 && !poll(); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    if (!m_status) {
        ::kill(m_pid, SIGKILL);
        int status;
        while (::waitpid(m_pid, &status, 0) < 0 && errno == EINTR) {
        }
        m_status = exit_code(status);
    }
    return *m_status;
}

}  // namespace systolic::qemu_pci
