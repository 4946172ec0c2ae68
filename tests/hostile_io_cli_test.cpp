// Every executable through the same hostile outputs and inputs (docs/reliability.md): each must
// refuse with exit 2 and one line on stderr, leave no temporary, and leave the target as it was.
// Device nodes are made with mknod in the scratch directory (never in /dev), as root only.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "cli_harness.h"
#include "io/npy.h"

namespace {

namespace fs = std::filesystem;
using systolic::tb::testing::cli_result;
using systolic::tb::testing::slurp;

// One executable: how it names one output file and one input file, and a run that writes o.out
// and prints on stdout.
struct tool {
    const char* name;
    const char* exe;
    std::function<std::string(const std::string&)> output;  // the arguments that write FILE
    std::function<std::string(const std::string&)> input;   // the arguments that read FILE (null: none)
    std::string input_file;                                 // the input `output` reads, for links to it
    std::string printing;
};

const std::string topology = "Layer, M, N, K,\nL0, 3, 2, 2,\n";
const std::string script = "job small m=2 k=3 p=2 seed=1\n";

std::vector<tool> tools() {
    const auto run_job = [](const std::string& f) {
        return "--topology t.csv --array 2 --job 2x2:0 --no-progress --job-out " + f;
    };
    return {
        {"systolic-tb", SYSTOLIC_TB, [](const std::string& f) { return "--a a.npy --b b.npy --c-out " + f; },
         [](const std::string& f) { return "--a " + f + " --b b.npy"; }, "a.npy", "--c-out o.out"},
        {"systolic-run", SYSTOLIC_RUN, run_job,
         [](const std::string& f) { return "--topology " + f + " --array 2 --out out --no-progress"; },
         "t.csv", "--topology t.csv --array 2 --out o.out --no-progress"},
        {"systolic-vp", SYSTOLIC_VP, [](const std::string& f) { return "--script s.vps --json " + f; },
         [](const std::string& f) { return "--script " + f; }, "s.vps", "--script s.vps --json o.out"},
        {"systolic-partition", SYSTOLIC_PARTITION,
         [](const std::string& f) { return "--m 4 --k 4 --p 4 --block 2 --json " + f; }, nullptr, "",
         "--m 4 --k 4 --p 4 --block 2 --json o.out"},
        // Its file outputs print nothing; what it prints is one of them.
        {"systolic-regs", SYSTOLIC_REGS, [](const std::string& f) { return "write markdown " + f; },
         [](const std::string& f) { return "check markdown " + f; }, "", "markdown"},
#ifdef SYSTOLIC_SOC
        // Where it is built: a firmware that prints a line, its UART to a file or to stdout.
        {"systolic-soc", SYSTOLIC_SOC, [](const std::string& f) { return "--uart " + f + " fw.elf"; },
         [](const std::string& f) { return f; }, "fw.elf", "fw.elf"},
#endif
    };
}

// What a path is, to see that it was left as it was.
struct snapshot {
    bool exists = false;
    unsigned mode = 0;
    ino_t ino = 0;
    std::string link_target, content;
    bool operator==(const snapshot& o) const {
        return exists == o.exists && mode == o.mode && ino == o.ino && link_target == o.link_target &&
               content == o.content;
    }
};

snapshot take(const fs::path& p) {
    snapshot s;
    struct stat st {};
    if (::lstat(p.c_str(), &st) != 0) return s;
    s.exists = true;
    s.mode = st.st_mode;
    s.ino = st.st_ino;
    if (S_ISLNK(st.st_mode)) s.link_target = fs::read_symlink(p).string();
    if (S_ISREG(st.st_mode)) s.content = slurp(p);
    return s;
}

class HostileIo : public systolic::tb::testing::cli_fixture {
protected:
    void SetUp() override {
        cli_fixture::SetUp();
        const std::vector<std::int32_t> v = {1, 2, 3, 4};
        systolic::io::write_npy(p("a.npy"), "<i4", 2, 2, v.data(), 16);
        systolic::io::write_npy(p("b.npy"), "<i4", 2, 2, v.data(), 16);
        put("t.csv", topology);
        put("s.vps", script);
#ifdef SYSTOLIC_SOC
        fs::copy_file(SYSTOLIC_SOC_FIRMWARE, path("fw.elf"));
#endif
    }
    void put(const std::string& name, const std::string& text) const {
        std::ofstream(path(name), std::ios::binary) << text;
    }
    // A character device like /dev/null (1,3) or /dev/zero (1,5), made here; false if not root.
    bool make_device(const std::string& name, unsigned minor) const {
        return ::geteuid() == 0 && ::mknod(p(name).c_str(), S_IFCHR | 0666, makedev(1, minor)) == 0;
    }
    void make_socket(const std::string& name) const {
        const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
        ASSERT_GE(fd, 0);
        sockaddr_un addr{};
        addr.sun_family = AF_UNIX;
        const std::string where = p(name);
        ASSERT_LT(where.size(), sizeof addr.sun_path);
        where.copy(addr.sun_path, where.size());
        ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
        ::close(fd);  // the socket file stays
    }
    cli_result run_on(const tool& t, const std::string& args, const std::string& redirect = "") const {
        // A FIFO that blocked the tool would hang: timeout turns that into exit 124.
        return run_tool(std::string("exec timeout 60 ") + t.exe, args, redirect);
    }
    void expect_refused(const cli_result& r, const std::string& needle = "") const {
        EXPECT_EQ(r.status, 2) << r.err << r.out;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_EQ(r.err.find('\0'), std::string::npos) << "a raw NUL on stderr";
        if (!needle.empty()) {
            EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err;
        }
        expect_no_temporaries();
    }
};

// --- Hostile outputs -------------------------------------------------------------------------------

TEST_F(HostileIo, EveryToolRunsCleanFirst) {
    for (const tool& t : tools()) {
        SCOPED_TRACE(t.name);
        const auto r = run_on(t, t.output("ok.out"));
        EXPECT_EQ(r.status, 0) << r.err << r.out;
        EXPECT_TRUE(fs::is_regular_file(path("ok.out")));
        expect_no_temporaries();
        fs::remove(path("ok.out"));
    }
}

TEST_F(HostileIo, SpecialFileOutputsAreRefusedAndLeftAlone) {
    ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
    fs::create_directory(path("dir"));
    fs::create_symlink("a.npy", path("to_a"));
    fs::create_symlink("victim", path("to_victim"));
    put("victim", "keep me\n");
    const bool root = make_device("null", 3);
    if (!root) std::cout << "[ SKIPPED  ] device-node outputs: mknod needs root\n";
    struct target {
        std::string file, needle;
    };
    std::vector<target> targets = {{"fifo", "exists and is a FIFO"},
                                   {"dir", "exists and is a directory"},
                                   {"to_victim", "is a symbolic link"}};
    if (root) targets.push_back({"null", "exists and is a character device"});
    for (const tool& t : tools()) {
        for (const target& g : targets) {
            SCOPED_TRACE(std::string(t.name) + " -> " + g.file);
            const snapshot before = take(path(g.file)), victim = take(path("victim"));
            expect_refused(run_on(t, t.output(g.file)), g.needle);
            EXPECT_TRUE(take(path(g.file)) == before);
            EXPECT_TRUE(take(path("victim")) == victim);
        }
    }
}

TEST_F(HostileIo, AnOutputThatIsAnInputIsRefused) {
    for (const tool& t : tools()) {
        if (t.input_file.empty()) {
            std::cout << "[ SKIPPED  ] " << t.name << ": its run reads no file\n";
            continue;
        }
        SCOPED_TRACE(t.name);
        fs::remove(path("link"));
        fs::remove(path("hard"));
        fs::create_symlink(t.input_file, path("link"));
        ASSERT_EQ(::link(p(t.input_file).c_str(), p("hard").c_str()), 0);
        const snapshot in = take(path(t.input_file));
        for (const char* out : {"link", "hard", "./"}) {
            const std::string file = std::string(out) == "./" ? "./" + t.input_file : out;
            SCOPED_TRACE(file);
            expect_refused(run_on(t, t.output(file)), "is the input");
            EXPECT_TRUE(take(path(t.input_file)) == in);
        }
    }
}

// Temporaries used to be "NAME.tmp.PID": a name of 246 to 255 bytes was accepted and failed only
// after the job, when the temporary's name was too long. Now any name the file system takes
// works, and a longer one is refused before anything runs.
TEST_F(HostileIo, LongNamesWorkUpToTheLimitAndAreRefusedBeyond) {
    const std::string longest(255, 'x'), too_long(256, 'y');
    for (const tool& t : tools()) {
        SCOPED_TRACE(t.name);
        const auto ok = run_on(t, t.output(longest));
        EXPECT_EQ(ok.status, 0) << ok.err;
        EXPECT_TRUE(fs::is_regular_file(path(longest)));
        fs::remove(path(longest));
        expect_refused(run_on(t, t.output(too_long)), "over its file system's limit of 255");
        EXPECT_NE(::access(p(too_long).c_str(), F_OK), 0);
    }
}

TEST_F(HostileIo, FailedStdoutWritesNoFile) {
    const bool root = make_device("full", 7);
    if (!root) std::cout << "[ SKIPPED  ] a full stdout: mknod needs root\n";
    std::vector<std::string> redirects = {">&-"};
    if (root) redirects.push_back(">full");
    for (const tool& t : tools()) {
        for (const std::string& redirect : redirects) {
            SCOPED_TRACE(std::string(t.name) + " " + redirect);
            expect_refused(run_on(t, t.printing, redirect), "writing to stdout failed");
            EXPECT_FALSE(fs::exists(path("o.out")));
        }
    }
}

// --- Hostile inputs --------------------------------------------------------------------------------

TEST_F(HostileIo, SpecialFileInputsAreRefusedAtOnce) {
    ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
    fs::create_directory(path("dir"));
    make_socket("sock");
    struct input {
        std::string file, needle;
    };
    // systolic-tb's option parser names a directory itself ("File is actually a directory").
    std::vector<input> inputs = {{"fifo", "not a regular file (a FIFO)"},
                                 {"dir", "directory"},
                                 {"sock", "not a regular file (a socket)"}};
    // Reading /dev/zero is harmless; before, it was read forever into memory.
    if (make_device("zero", 5))
        inputs.push_back({"zero", "not a regular file (a character device)"});
    else
        inputs.push_back({"/dev/zero", "not a regular file (a character device)"});
    for (const tool& t : tools()) {
        if (!t.input) continue;  // systolic-partition reads no file
        for (const input& in : inputs) {
            SCOPED_TRACE(std::string(t.name) + " <- " + in.file);
            const auto started = std::chrono::steady_clock::now();
            expect_refused(run_on(t, t.input(in.file)), in.needle);
            EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
            EXPECT_FALSE(fs::exists(path("out")));
        }
    }
    // systolic-run's other text input, and the operands of systolic-tb.
    for (const input& in : inputs) {
        SCOPED_TRACE("--sweep " + in.file);
        expect_refused(run_tool(std::string("exec timeout 60 ") + SYSTOLIC_RUN,
                                "--topology t.csv --out out --sweep " + in.file),
                       in.needle);
        EXPECT_FALSE(fs::exists(path("out")));
    }
}

// A NUL byte used to cut the message short; control characters are printed as \xNN.
TEST_F(HostileIo, NulBytesInInputsAreRefusedInOneEscapedLine) {
    put("nul.csv", std::string("Layer, M, N, K,\nL\0, 3, 2, 2,\n", 30));
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_RUN, "--topology nul.csv --out out"),
                   "nul.csv: not a text file (it holds NUL bytes)");
    EXPECT_FALSE(fs::exists(path("out")));
    put("nul.vps", std::string("job a\0b m=2 k=2 p=2\n", 20));
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_VP, "--script nul.vps --c-out c"),
                   "nul.vps:1: the job name 'a\\x00b' holds control characters");
    EXPECT_FALSE(fs::exists(path("c")));
    // An .npy header with a NUL and a newline inside its dtype.
    std::string dict = std::string("{'descr': '<i\0\n4', 'fortran_order': False, 'shape': (2, 2), }", 61);
    dict.append(128 - 10 - dict.size() - 1, ' ');
    dict += '\n';
    std::string npy = std::string("\x93NUMPY\x01\x00", 8);
    npy += static_cast<char>(dict.size() & 0xff);
    npy += static_cast<char>(dict.size() >> 8);
    npy += dict + std::string(16, '\0');
    put("nul.npy", npy);
    const auto r = run_tool(std::string("exec ") + SYSTOLIC_TB, "--a nul.npy --b b.npy --c-out c.npy");
    expect_refused(r, "nul.npy: ");
    EXPECT_NE(r.err.find("\\x00"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(path("c.npy")));
}

TEST_F(HostileIo, NonUtf8TextIsRefusedInOneLine) {
    put("bad.csv", "Layer, M, N, K,\nL\xff\xfe, 3, 2, 2,\n");
    expect_refused(
        run_tool(std::string("exec ") + SYSTOLIC_RUN, "--topology bad.csv --out out --no-progress"));
    EXPECT_FALSE(fs::exists(path("out")));
    put("bad.vps", "job \xff\xfe m=2 k=2 p=2\n");
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_VP, "--script bad.vps --json r.json"));
    EXPECT_FALSE(fs::exists(path("r.json")));
    // systolic-regs compares bytes: a file that is not the generated text simply differs.
    put("bad.md", "\xff\xfe");
    const auto r = run_tool(std::string("exec ") + SYSTOLIC_REGS, "check markdown bad.md");
    EXPECT_EQ(r.status, 1) << r.err;
}

// /proc files report a size of 0 and used to be "empty": a .npy one is refused as having no known
// size, and a text one is read as what it holds.
TEST_F(HostileIo, ProcFilesAreNotEmpty) {
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_TB, "--a /proc/self/status --b b.npy"),
                   "/proc/self/status: not a regular file with a known size");
    const auto r = run_tool(std::string("exec ") + SYSTOLIC_RUN, "--topology /proc/self/status --out out");
    expect_refused(r, "/proc/self/status:1: the header is neither");
    EXPECT_FALSE(fs::exists(path("out")));
}

TEST_F(HostileIo, ByteOrderMarkHasItsOwnMessage) {
    put("bom.csv", "\xef\xbb\xbf" + topology);
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_RUN, "--topology bom.csv --out out"),
                   "bom.csv:1: the file starts with a UTF-8 byte order mark");
    // The SCALE-Sim .cfg reader names the mark the same way; it once printed the mark raw in
    // "not a [section] line: '\xef\xbb\xbf[general]'".
    put("bom.cfg", "\xef\xbb\xbf[general]\nrun_name = bom\n");
    const auto r =
        run_tool(std::string("exec ") + SYSTOLIC_RUN, "--topology t.csv --config bom.cfg --out out");
    expect_refused(r, "bom.cfg:1: the file starts with a UTF-8 byte order mark (EF BB BF)");
    EXPECT_EQ(r.err.find("\xef\xbb\xbf"), std::string::npos) << "the mark printed raw: " << r.err;
    EXPECT_FALSE(fs::exists(path("out")));
}

// --- Signals and pipes -----------------------------------------------------------------------------

// Starts `exe args` with stdout into `out_fd` (or a file), in the scratch directory.
pid_t spawn(const fs::path& dir, const std::string& exe, const std::vector<std::string>& args, int out_fd) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        if (::chdir(dir.c_str()) != 0) ::_exit(127);
        ::dup2(out_fd, STDOUT_FILENO);
        const int err = ::open("stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(err, STDERR_FILENO);
        std::vector<char*> argv = {const_cast<char*>(exe.c_str())};
        for (const auto& a : args)
            argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        ::execv(exe.c_str(), argv.data());
        ::_exit(127);
    }
    return pid;
}

bool has_temporary(const fs::path& dir) {
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().filename().string().rfind(".systolic-", 0) == 0) return true;
    return false;
}

// A SIGINT used to leave a 665 MB "w.vcd.tmp.PID": now every temporary goes, and the process ends
// by the signal (the shell's 128 + N).
TEST_F(HostileIo, SignalsRemoveTheTemporaries) {
    for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
        SCOPED_TRACE(sig);
        const int null = ::open("/dev/null", O_WRONLY);
        const pid_t pid = spawn(m_dir, SYSTOLIC_TB,
                                {"--array", "8", "--m", "512", "--k", "512", "--p", "512", "--vcd", "w.vcd",
                                 "--c-out", "c.npy", "--json", "r.json", "--no-progress"},
                                null);
        ::close(null);
        // Its temporaries exist from before the job starts; the job takes seconds.
        for (int i = 0; i < 2000 && !has_temporary(m_dir); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(5));
        std::this_thread::sleep_for(std::chrono::milliseconds(300));
        ASSERT_EQ(::kill(pid, sig), 0);
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, 0), pid);
        EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << status;
        expect_no_temporaries();
        for (const char* f : {"w.vcd", "c.npy", "r.json"})
            EXPECT_FALSE(fs::exists(path(f))) << f;
    }
}

// --c-out used to be renamed into place before --json's target turned out to have become a
// directory while the job ran, so a failed run left a new C beside the old report. The outputs are
// one transaction: every target is checked before any is renamed, and a failure leaves every
// previous file as it was. The run is stopped (SIGSTOP) while its temporaries exist, the report's
// target is made a directory, and the run goes on: no waiting on the clock decides the outcome.
TEST_F(HostileIo, OutputsAreAllOrNothingWhenATargetChangesDuringTheRun) {
    put("c.npy", "the previous C");
    put("r.json", "the previous report");
    const int null = ::open("/dev/null", O_WRONLY);
    const pid_t pid = spawn(m_dir, SYSTOLIC_TB,
                            {"--array", "8", "--m", "512", "--k", "512", "--p", "512", "--c-out", "c.npy",
                             "--json", "r.json", "--no-progress"},
                            null);
    ::close(null);
    while (!has_temporary(m_dir)) {
        int status = 0;
        ASSERT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "the run ended before its outputs were planned";
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    ASSERT_EQ(::kill(pid, SIGSTOP), 0);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, WUNTRACED), pid);
    ASSERT_TRUE(WIFSTOPPED(status));
    // Stopped before its commit: its temporaries are all there and C is the previous one.
    ASSERT_TRUE(has_temporary(m_dir));
    ASSERT_TRUE(slurp(path("c.npy")) == "the previous C") << "C was replaced before the commit";
    fs::remove(path("r.json"));
    fs::create_directory(path("r.json"));
    ASSERT_EQ(::kill(pid, SIGCONT), 0);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << status;
    EXPECT_EQ(WEXITSTATUS(status), 2);
    const std::string err = slurp(path("stderr.txt"));
    EXPECT_EQ(std::count(err.begin(), err.end(), '\n'), 1) << err;
    EXPECT_NE(err.find("--json r.json exists and is a directory"), std::string::npos) << err;
    EXPECT_TRUE(slurp(path("c.npy")) == "the previous C") << "C was renamed into place";
    EXPECT_TRUE(fs::is_directory(path("r.json")));
    expect_no_temporaries();
}

// `--json - | head -c 10` used to die of SIGPIPE with its finished temporaries left behind.
TEST_F(HostileIo, ABrokenPipeIsAFailedStdout) {
    int fds[2];
    ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);  // the child keeps only its stdout end
    // A report far larger than the pipe's buffer, so that the write is still going when it closes.
    const pid_t pid = spawn(m_dir, SYSTOLIC_TB,
                            {"--array", "2", "--m", "128", "--k", "2", "--p", "128", "--json", "-", "--c-out",
                             "c.npy", "--no-progress"},
                            fds[1]);
    ::close(fds[1]);
    char head[10];
    ASSERT_EQ(::read(fds[0], head, sizeof head), ssize_t(sizeof head));
    ::close(fds[0]);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 2);
    const std::string err = slurp(path("stderr.txt"));
    EXPECT_NE(err.find("systolic-tb: error: writing to stdout failed: Broken pipe"), std::string::npos)
        << err;
    EXPECT_FALSE(fs::exists(path("c.npy")));
    expect_no_temporaries();
}

// --- systolic-vp --c-out and systolic-run --out ----------------------------------------------------

TEST_F(HostileIo, VpJobNamesAreFileNames) {
    fs::create_directory(path("c"));
    put("escape.vps", "job ../victim m=2 k=2 p=2\n");
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_VP, "--script escape.vps --c-out c"),
                   "escape.vps:1: job name '../victim' cannot name a file under --c-out");
    EXPECT_FALSE(fs::exists(path("victim.npy")));
    put("twice.vps", "job x m=2 k=2 p=2\njob x m=3 k=2 p=2\n");
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_VP, "--script twice.vps --c-out c"),
                   "twice.vps:2: job name 'x' is also on line 1");
    EXPECT_TRUE(fs::is_empty(path("c")));
    // --c-out creates its directory, not missing parents, and removes it again on a failure.
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_VP, "--script s.vps --c-out no/such"),
                   "directory no does not exist");
    expect_refused(run_tool(std::string("exec ") + SYSTOLIC_VP, "--script s.vps --c-out new", ">&-"));
    EXPECT_FALSE(fs::exists(path("new")));
    const auto r = run_tool(std::string("exec ") + SYSTOLIC_VP, "--script s.vps --c-out new");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(path("new/small.npy")));
}

TEST_F(HostileIo, RunOutIsCheckedAfterEveryInputAndNeverBuildsParents) {
    const std::string run = std::string("exec ") + SYSTOLIC_RUN;
    // An --out that is an input, or whose report would be one.
    expect_refused(run_tool(run, "--topology t.csv --out t.csv"), "--out t.csv is the input --topology");
    fs::create_directory(path("out"));
    put("out/report.json", topology);
    expect_refused(run_tool(run, "--topology out/report.json --out out"),
                   "--out out/report.json is the input --topology");
    EXPECT_EQ(slurp(path("out/report.json")), topology);
    fs::remove_all(path("out"));
    fs::create_directory(path("data"));
    const std::vector<std::int8_t> a(6, 1), b(4, 1);
    systolic::io::write_npy(p("data/L0.a.npy"), "|i1", 3, 2, a.data(), a.size());
    systolic::io::write_npy(p("data/L0.b.npy"), "|i1", 2, 2, b.data(), b.size());
    expect_refused(run_tool(run, "--topology t.csv --data data --out data"),
                   "--out data is the input --data");
    fs::create_directory(path("nodata"));
    // Every input is checked before --out exists: a bad sweep, a missing data file.
    put("bad.sweep", "4x\n");
    expect_refused(run_tool(run, "--topology t.csv --sweep bad.sweep --out out"));
    expect_refused(run_tool(run, "--topology t.csv --data nodata --out out"), "nodata/L0.a.npy");
    EXPECT_FALSE(fs::exists(path("out")));
    // No parents made; nothing left when the run fails after --out was created.
    expect_refused(run_tool(run, "--topology t.csv --out no/such/dir"), "directory no/such does not exist");
    EXPECT_FALSE(fs::exists(path("no")));
    expect_refused(run_tool(run, "--topology t.csv --out out --no-progress", ">&-"));
    EXPECT_FALSE(fs::exists(path("out")));
    const bool root = make_device("full", 7);
    if (root) {
        expect_refused(run_tool(run, "--topology t.csv --out out --no-progress", ">full"),
                       "writing to stdout failed");
        EXPECT_FALSE(fs::exists(path("out")));
    }
    const auto r = run_tool(run, "--topology t.csv --out out --no-progress");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::is_regular_file(path("out/report.json")));
}

}  // namespace
