// Runs systolic-tb (or any command) through /bin/sh as a user would, in a scratch directory of its
// own, and collects the exit status, stdout, stderr and the child's peak resident set size.
#pragma once

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace systolic::tb::testing {

#ifdef SYSTOLIC_OPTIONS_DOC
// The option rules an executable's --help lists ("  OPT needs NEED: WHY", from the one table its
// check uses) are exactly docs/options.md's rows "| EXE | `OPT` | NEED | WHY |" for that executable.
inline void expect_rules_documented(const std::string& help, const std::string& exe) {
    std::ifstream in(SYSTOLIC_OPTIONS_DOC);
    std::ostringstream os;
    os << in.rdbuf();
    const std::string doc = os.str();
    const std::string head = "Options refused without what they need:\n";
    const auto at = help.find(head);
    ASSERT_NE(at, std::string::npos) << help;
    std::istringstream lines(help.substr(at + head.size()));
    std::size_t rules = 0;
    for (std::string line; std::getline(lines, line) && line.rfind("  ", 0) == 0;) {
        const auto needs = line.find(" needs "), why = line.find(": ");
        ASSERT_TRUE(needs != std::string::npos && why != std::string::npos && needs < why) << line;
        const std::string row = "| " + exe + " | `" + line.substr(2, needs - 2) + "` | " +
                                line.substr(needs + 7, why - needs - 7) + " | " + line.substr(why + 2) +
                                " |\n";
        EXPECT_NE(doc.find(row), std::string::npos) << "docs/options.md lacks the row\n" << row;
        ++rules;
    }
    EXPECT_GT(rules, 0u) << help;
    std::size_t rows = 0;
    for (auto p = doc.find("\n| " + exe + " | `"); p != std::string::npos;
         p = doc.find("\n| " + exe + " | `", p + 1))
        ++rows;
    EXPECT_EQ(rows, rules) << "docs/options.md has rows for " << exe << " that its --help does not list";
}
#endif

struct cli_result {
    int status = -1;
    std::string out;
    std::string err;
    std::uint64_t max_rss_bytes = 0;  // the child's peak resident set size
};

inline std::string slurp(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

class cli_fixture : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        m_dir =
            std::filesystem::temp_directory_path() / ("systolic_" + std::string(info->test_suite_name()) +
                                                      "_" + info->name() + "_" + std::to_string(::getpid()));
        std::filesystem::remove_all(m_dir);
        std::filesystem::create_directories(m_dir);
    }
    void TearDown() override {
        std::error_code ec;
        std::filesystem::remove_all(m_dir, ec);
    }

    std::filesystem::path path(const std::string& name) const { return m_dir / name; }
    std::string p(const std::string& name) const { return path(name).string(); }

    // `tool` is a shell command (it may start with other commands, e.g. "ulimit -v N; exec ...");
    // `args` are appended to it; `redirect` replaces the default capture of stdout (e.g. ">/dev/full"
    // or ">&-"); stderr is always captured. Keep this process small before measuring a child's peak
    // RSS: a forked child starts its count at the parent's resident size.
    cli_result run_tool(const std::string& tool, const std::string& args,
                        const std::string& redirect = "") const {
        const auto out = path("stdout.txt"), err = path("stderr.txt");
        std::filesystem::remove(out);
        const std::string cmd = "cd " + m_dir.string() + " && " + tool + " " + args + " " +
                                (redirect.empty() ? ">" + out.string() : redirect) + " 2>" + err.string();
        cli_result r;
        const pid_t pid = ::fork();
        if (pid == 0) {
            ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
            ::_exit(127);
        }
        int raw = 0;
        struct rusage usage {};
        ::wait4(pid, &raw, 0, &usage);
        r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
        r.max_rss_bytes = static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
        r.out = slurp(out);
        r.err = slurp(err);
        return r;
    }

#ifdef SYSTOLIC_TB
    cli_result run(const std::string& args, const std::string& redirect = "") const {
        return run_tool(std::string("exec ") + SYSTOLIC_TB, args, redirect);
    }
#endif

    // A refused invocation: exit 2, one line on stderr containing `needle`.
    void expect_refused(const cli_result& r, const std::string& needle) const {
        EXPECT_EQ(r.status, 2) << r.err << r.out;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err;
    }

    // No temporary output (".systolic-PID-N.tmp", io/output_set.h) left behind in `dir` or below.
    void expect_no_temporaries(const std::filesystem::path& dir) const {
        for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
            const std::string name = e.path().filename().string();
            EXPECT_NE(name.rfind(".systolic-", 0), 0u) << e.path();
            EXPECT_EQ(name.find(".tmp."), std::string::npos) << e.path();
        }
    }
    void expect_no_temporaries() const {
        expect_no_temporaries(m_dir);
    }

    std::filesystem::path m_dir;
};

}  // namespace systolic::tb::testing
