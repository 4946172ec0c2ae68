#include "output_files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <stdexcept>
#include <system_error>

#include "cli_options.h"
#include "npy.h"

namespace systolic::tb {
namespace {

namespace fs = std::filesystem;


// Same file: the same inode when both exist, else the same normalised absolute path.
bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (fs::exists(a, ec) && fs::exists(b, ec)) return fs::equivalent(a, b, ec) && !ec;
    const fs::path pa = fs::weakly_canonical(fs::absolute(a, ec), ec);
    const fs::path pb = fs::weakly_canonical(fs::absolute(b, ec), ec);
    return pa == pb;
}

std::string errno_text() {
    return std::strerror(errno);
}

}  // namespace

void check_output_paths(const std::vector<named_path>& outputs, const std::vector<named_path>& inputs) {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const named_path& out = outputs[i];
        if (out.path.empty()) throw usage_error(out.option + " needs a file name, got ''");
        for (const named_path& in : inputs) {
            if (!in.path.empty() && same_file(out.path, in.path))
                throw usage_error(out.option + " " + out.path + " is the input " + in.option +
                                  "; refusing to overwrite an input");
        }
        for (std::size_t j = 0; j < i; ++j) {
            if (same_file(out.path, outputs[j].path))
                throw usage_error(out.option + " " + out.path + " is also " + outputs[j].option +
                                  "; give each output its own file");
        }
        struct stat st {};
        if (::stat(out.path.c_str(), &st) == 0) {
            if (!S_ISREG(st.st_mode))
                throw usage_error(out.option + " " + out.path + " exists and is " + file_kind(st.st_mode) +
                                  ", not a regular file; refusing to replace it");
        } else if (errno != ENOENT) {
            throw usage_error(out.option + " " + out.path + ": " + errno_text());
        }
        std::error_code ec;
        fs::path dir = fs::path(out.path).parent_path();
        if (dir.empty()) dir = ".";
        if (!fs::is_directory(dir, ec))
            throw usage_error(out.option + " " + out.path + ": directory " + dir.string() +
                              " does not exist");
    }
}

output_set::~output_set() {
    discard();
}

std::string output_set::temp_for(const std::string& path) {
    return path + ".tmp." + std::to_string(static_cast<long long>(::getpid()));
}

int output_set::add_streamed(const std::string& path) {
    entry e;
    e.path = path;
    e.temp = temp_for(path);
    e.streamed = true;
    const int fd = ::open(e.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0)
        throw std::runtime_error(e.path + ": cannot create temporary file '" + e.temp + "': " + errno_text());
    e.written = true;
    m_entries.push_back(std::move(e));
    return fd;
}

void output_set::add(const std::string& path, std::vector<std::string_view> pieces) {
    entry e;
    e.path = path;
    e.temp = temp_for(path);
    e.pieces = std::move(pieces);
    m_entries.push_back(std::move(e));
}

void output_set::discard() {
    for (entry& e : m_entries) {
        if (e.written && !e.committed) ::unlink(e.temp.c_str());
        e.written = false;
    }
}

void output_set::prepare() {
    for (entry& e : m_entries) {
        if (e.streamed) continue;
        // O_EXCL: never write through a file or link someone placed at the temporary's name.
        const int fd = ::open(e.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0) {
            const std::string why = errno_text();
            discard();
            throw std::runtime_error(e.path + ": cannot create temporary file '" + e.temp + "': " + why);
        }
        e.written = true;
        bool ok = true;
        for (std::string_view piece : e.pieces) {
            while (ok && !piece.empty()) {
                const ssize_t n = ::write(fd, piece.data(), piece.size());
                if (n < 0 && errno == EINTR) continue;
                ok = n > 0;
                if (ok) piece.remove_prefix(static_cast<std::size_t>(n));
            }
        }
        ok = ok && ::fsync(fd) == 0;
        const std::string why = ok ? "" : errno_text();
        ok = (::close(fd) == 0) && ok;
        if (!ok) {
            discard();
            throw std::runtime_error(e.path + ": write to '" + e.temp +
                                     "' failed: " + (why.empty() ? errno_text() : why));
        }
    }
}

void output_set::commit() {
    for (entry& e : m_entries) {
        struct stat st {};
        if (::stat(e.path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
            discard();
            throw std::runtime_error(e.path + ": became " + file_kind(st.st_mode) +
                                     " while the job ran; not replaced");
        }
        if (std::rename(e.temp.c_str(), e.path.c_str()) != 0) {
            const std::string why = errno_text();
            discard();
            throw std::runtime_error(e.path + ": cannot rename '" + e.temp + "' into place: " + why);
        }
        e.committed = true;
    }
}

bool write_stdout(std::string_view text) {
    std::cout.write(text.data(), static_cast<std::streamsize>(text.size()));
    std::cout.flush();
    return static_cast<bool>(std::cout);
}

}  // namespace systolic::tb
