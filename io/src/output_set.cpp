#include "io/output_set.h"

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "io/error.h"
#include "io/process.h"
#include "io/text.h"

namespace systolic::io {
namespace {

namespace fs = std::filesystem;

// A message about `p`: "--c-out c.npy is ..." / "--c-out c.npy: ...", or without an option
// "c.npy: is ..." / "c.npy: ...", so that it always starts with the path and a colon.
io_error failure(const named_path& p, const std::string& rest) {
    const std::string path = printable(p.path);
    if (p.option.empty()) return io_error(path + ":" + (rest.rfind(": ", 0) == 0 ? rest.substr(1) : rest));
    return io_error(p.option + " " + path + rest);
}

struct place {
    std::string dir;   // "." for a bare name
    std::string name;  // the last component
};

place place_of(const std::string& path) {
    const fs::path p(path);
    std::string dir = p.parent_path().string();
    return {dir.empty() ? "." : dir, p.filename().string()};
}

// What a path stands for: an existing file by its device and inode (after following symlinks); a
// new one by its directory's device and inode and its name. Equal identities are the same file
// however the paths are spelled.
struct identity {
    bool known = false;
    dev_t dev = 0;
    ino_t ino = 0;
    std::string name;
    bool operator==(const identity& o) const {
        return known && o.known && dev == o.dev && ino == o.ino && name == o.name;
    }
};

identity identify(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0) return {true, st.st_dev, st.st_ino, ""};
    const place pl = place_of(path);
    if (pl.name.empty() || ::stat(pl.dir.c_str(), &st) != 0) return {};
    return {true, st.st_dev, st.st_ino, pl.name};
}

// An existing file that a rename must not replace: a symlink (the link would become a file), a
// device, FIFO, socket or directory. Empty when the path is absent or a regular file, else the
// rest of a message that starts with the path.
std::string refuse_to_replace(const std::string& path) {
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return errno == ENOENT ? "" : ": " + errno_text(errno);
    if (S_ISLNK(st.st_mode)) return " is a symbolic link; refusing to replace it (name the file itself)";
    if (!S_ISREG(st.st_mode))
        return " exists and is " + file_kind(st.st_mode) + ", not a regular file; refusing to replace it";
    return "";
}

std::atomic<unsigned> g_temp_count{0};

std::string temp_name(const place& pl) {
    const std::string name = ".systolic-" + std::to_string(static_cast<long long>(::getpid())) + "-" +
                             std::to_string(g_temp_count++) + ".tmp";
    return pl.dir == "." ? name : (fs::path(pl.dir) / name).string();
}

bool write_all(int fd, std::string_view piece) {
    while (!piece.empty()) {
        const ssize_t n = ::write(fd, piece.data(), piece.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return false;
        }
        piece.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

}  // namespace

output_set::~output_set() {
    discard();
}

void output_set::add_input(const named_path& input) {
    if (!input.path.empty()) m_inputs.push_back(input);
}

void output_set::add(const named_path& out) {
    if (out.path.empty()) throw io_error(out.option + " needs a file name, got ''");
    const identity id = identify(out.path);
    for (const named_path& in : m_inputs)
        if (id == identify(in.path))
            throw failure(out, " is the input " + in.option + "; refusing to overwrite an input");
    for (const entry& e : m_entries)
        if (id == identify(e.out.path))
            throw failure(out, " is also " + e.out.option + "; give each output its own file");
    const place pl = place_of(out.path);
    if (pl.name.empty() || pl.name == "." || pl.name == "..")
        throw failure(out, " names a directory, not a file");
    struct stat st {};
    if (::stat(pl.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw failure(out, ": directory " + printable(pl.dir) + " does not exist");
    const long name_max = ::pathconf(pl.dir.c_str(), _PC_NAME_MAX);
    const std::size_t limit = name_max > 0 ? std::size_t(name_max) : NAME_MAX;
    if (pl.name.size() > limit)
        throw failure(out, ": the file name is " + std::to_string(pl.name.size()) +
                               " bytes, over its file system's limit of " + std::to_string(limit));
    if (out.path.size() >= PATH_MAX)
        throw failure(out, ": the path is " + std::to_string(out.path.size()) +
                               " bytes, over the system's limit of " + std::to_string(PATH_MAX - 1));
    if (const std::string why = refuse_to_replace(out.path); !why.empty()) throw failure(out, why);

    entry e;
    e.out = out;
    e.temp = temp_name(pl);
    // Registered before it exists, so that a signal never leaves it behind.
    e.slot = cleanup::add(e.temp, false);
    // O_EXCL: never write through a file or link someone placed at the temporary's name.
    const int fd = ::open(e.temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        const int err = errno;
        cleanup::drop(e.slot);
        throw failure(out, ": cannot create a file in " + printable(pl.dir) + ": " + errno_text(err));
    }
    ::close(fd);
    m_entries.push_back(std::move(e));
}

void output_set::make_directory(const named_path& dir) {
    if (dir.path.empty()) throw io_error(dir.option + " needs a directory name, got ''");
    const identity id = identify(dir.path);
    for (const named_path& in : m_inputs)
        if (id == identify(in.path))
            throw failure(dir, " is the input " + in.option + "; give the outputs a directory of their own");
    struct stat st {};
    if (::stat(dir.path.c_str(), &st) == 0) {
        if (!S_ISDIR(st.st_mode))
            throw failure(dir, " exists and is " +
                                   (S_ISREG(st.st_mode) ? std::string("a file") : file_kind(st.st_mode)) +
                                   ", not a directory");
        return;
    }
    std::string bare = dir.path;  // "out/" is the directory "out" in "."
    while (bare.size() > 1 && bare.back() == '/')
        bare.pop_back();
    const place pl = place_of(bare);
    if (::stat(pl.dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
        throw failure(dir, ": directory " + printable(pl.dir) + " does not exist (create it first)");
    created_dir d{dir.path, cleanup::add(dir.path, true)};
    if (::mkdir(dir.path.c_str(), 0777) != 0) {
        const int err = errno;
        cleanup::drop(d.slot);
        throw failure(dir, ": cannot create the directory: " + errno_text(err));
    }
    m_dirs.push_back(std::move(d));
}

output_set::entry& output_set::find(const std::string& path) {
    for (entry& e : m_entries)
        if (e.out.path == path) return e;
    throw std::logic_error("output_set: " + path + " was not added");
}

void output_set::set(const std::string& path, std::vector<std::string_view> pieces) {
    entry& e = find(path);
    e.pieces = std::move(pieces);
    e.has_bytes = true;
}

int output_set::stream(const std::string& path) {
    entry& e = find(path);
    const int fd = ::open(e.temp.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        throw failure(e.out, ": cannot open its temporary " + printable(e.temp) + ": " + errno_text(errno));
    e.streamed = true;
    return fd;
}

void output_set::discard() {
    for (entry& e : m_entries) {
        if (e.slot == nullptr) continue;
        ::unlink(e.temp.c_str());
        cleanup::drop(e.slot);
        e.slot = nullptr;
    }
    for (created_dir& d : m_dirs) {
        if (d.slot == nullptr) continue;
        if (!m_committed) ::rmdir(d.path.c_str());
        cleanup::drop(d.slot);
        d.slot = nullptr;
    }
}

void output_set::prepare() {
    for (entry& e : m_entries) {
        if (!e.has_bytes) continue;
        const int fd = ::open(e.temp.c_str(), O_WRONLY | O_TRUNC | O_NOFOLLOW | O_CLOEXEC);
        bool ok = fd >= 0;
        for (std::size_t i = 0; ok && i < e.pieces.size(); ++i)
            ok = write_all(fd, e.pieces[i]);
        ok = ok && ::fsync(fd) == 0;
        const int err = errno;
        if (fd >= 0) ok = (::close(fd) == 0) && ok;
        if (!ok) {
            discard();
            throw failure(e.out, ": write failed: " + errno_text(err));
        }
    }
}

namespace {

// SIGINT, SIGTERM and SIGHUP held while the renames run, so that a signal finds either every
// output in place or none (its handler then removes the temporaries): it is delivered when the
// commit is over. Other threads of the process still take them; the executables' threads are
// idle by the time they commit.
class signals_held {
public:
    signals_held() {
        sigset_t set;
        sigemptyset(&set);
        for (int sig : stop_signals)
            sigaddset(&set, sig);
        m_ok = ::pthread_sigmask(SIG_BLOCK, &set, &m_old) == 0;
    }
    ~signals_held() {
        if (m_ok) ::pthread_sigmask(SIG_SETMASK, &m_old, nullptr);
    }
    signals_held(const signals_held&) = delete;
    signals_held& operator=(const signals_held&) = delete;

private:
    sigset_t m_old{};
    bool m_ok = false;
};

}  // namespace

void output_set::commit() {
    std::vector<entry*> outputs;
    for (entry& e : m_entries)
        if (e.has_bytes || e.streamed) outputs.push_back(&e);
    // One transaction. First every target is checked again (it may have changed while the job
    // ran): one that may not be replaced stops the commit before any rename.
    for (entry* e : outputs)
        if (const std::string why = refuse_to_replace(e->out.path); !why.empty()) {
            discard();
            throw failure(e->out, why + " (it changed while the job ran)");
        }
    // Then the renames, each previous file kept as a hard link beside it (registered, so that a
    // signal removes the link and never the file), until all are in place; a rename that fails
    // puts the previous files back (or removes the new ones) and leaves the rest untouched.
    struct done {
        entry* e;
        bool existed;        // the target was there before
        std::string backup;  // where it is kept; empty where it did not exist or could not be linked
        cleanup::slot* slot;
    };
    std::vector<done> renamed;
    auto drop_backups = [&renamed] {
        for (done& d : renamed)
            if (d.slot) {
                ::unlink(d.backup.c_str());
                cleanup::drop(d.slot);
                d.slot = nullptr;
            }
    };
    auto undo = [&renamed, &drop_backups] {
        for (auto it = renamed.rbegin(); it != renamed.rend(); ++it) {
            if (it->backup.empty()) {
                // A new output goes; one whose previous file could not be kept stays, new.
                if (!it->existed) ::unlink(it->e->out.path.c_str());
                continue;
            }
            // Put back, or (if even that fails) left beside the output under its temporary name.
            std::rename(it->backup.c_str(), it->e->out.path.c_str());
            cleanup::drop(it->slot);
            it->slot = nullptr;
        }
        drop_backups();
    };
    {
        const signals_held held;
        for (entry* e : outputs) {
            struct stat st {};
            done d{e, ::lstat(e->out.path.c_str(), &st) == 0, "", nullptr};
            if (d.existed) {
                d.backup = temp_name(place_of(e->out.path));
                d.slot = cleanup::add(d.backup, false);
                if (::link(e->out.path.c_str(), d.backup.c_str()) != 0) {
                    // A file system without hard links: this previous file cannot be put back
                    // if a later rename fails (the checks above make that unlikely).
                    cleanup::drop(d.slot);
                    d.slot = nullptr;
                    d.backup.clear();
                }
            }
            if (std::rename(e->temp.c_str(), e->out.path.c_str()) != 0) {
                const int err = errno;
                if (d.slot) {
                    ::unlink(d.backup.c_str());
                    cleanup::drop(d.slot);
                }
                undo();
                discard();
                throw failure(e->out, ": cannot rename its temporary into place: " + errno_text(err) +
                                          " (no output was changed)");
            }
            cleanup::drop(e->slot);
            e->slot = nullptr;
            renamed.push_back(d);
        }
        drop_backups();
    }
    m_committed = true;
    // Outputs given no bytes keep what they had: only their temporaries go.
    discard();
    // The renames themselves survive a crash once their directories are synced.
    std::vector<std::string> dirs;
    for (const done& d : renamed)
        dirs.push_back(place_of(d.e->out.path).dir);
    for (const std::string& d : dirs) {
        const int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd >= 0) {
            ::fsync(fd);
            ::close(fd);
        }
    }
}

void write_file(const named_path& output, std::vector<std::string_view> pieces,
                const std::vector<named_path>& inputs) {
    output_set files;
    for (const named_path& in : inputs)
        files.add_input(in);
    files.add(output);
    files.set(output.path, std::move(pieces));
    files.prepare();
    files.commit();
}

}  // namespace systolic::io
