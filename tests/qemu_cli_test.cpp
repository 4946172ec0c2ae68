// systolic-qemu run as a user runs it: everything it needs checked before QEMU starts (a missing or
// wrong QEMU, kernel, driver or program, bad usage: one line, exit 2); then a real Linux guest under
// Debian's QEMU: the program's output on stdout and its status as systolic-qemu's, the files of
// --guest-file in /data, a guest that hangs (--timeout, exit 4), a guest that ends without a verdict
// (exit 3). Skipped, visibly, where no guest can boot (no QEMU, kernel or driver here).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "cli_harness.h"

namespace {

using systolic::tb::testing::cli_fixture;
using systolic::tb::testing::cli_result;

const std::string k_qemu = std::string("exec ") + SYSTOLIC_QEMU;

class QemuCli : public cli_fixture {
protected:
    cli_result qemu(const std::string& args) const { return run_tool(k_qemu, args); }

    // A shell script for --run, in the test's directory.
    std::string script(const std::string& name, const std::string& body) const {
        std::ofstream(p(name)) << "#!/bin/sh\n" << body;
        std::filesystem::permissions(p(name), std::filesystem::perms::owner_all);
        return p(name);
    }

    // Why no guest can boot here, from systolic-qemu's own setup checks, or "".
    std::string no_guest() const {
        const cli_result r = qemu("--timeout 1ms --run " + script("probe.sh", "exit 0\n"));
        if (r.status != 2) return "";
        for (const char* missing :
             {"cannot be run", "no guest kernel", "no driver was built", "no /bin/busybox", "has no "})
            if (r.err.find(missing) != std::string::npos) return r.err;
        return "";
    }

    // A fake QEMU that says it is version `version`.
    std::string fake_qemu(const std::string& version) const {
        return script("fake-qemu", "echo 'QEMU emulator version " + version + " (Debian)'\n");
    }

    // Exit status 2 and one line on stderr holding `what`, nothing on stdout.
    static void expect_refused(const cli_result& r, const std::string& what) {
        EXPECT_EQ(r.status, 2) << r.err;
        EXPECT_NE(r.err.find(what), std::string::npos) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_EQ(r.out, "");
    }
};

TEST_F(QemuCli, RefusesWhatCannotRunBeforeQemuStarts) {
    const std::string ok = script("ok.sh", "exit 0\n");
    expect_refused(qemu("--qemu /nonexistent/qemu --run " + ok), "/nonexistent/qemu cannot be run");
    expect_refused(
        qemu("--qemu " + fake_qemu("8.2.2") + " --run " + ok),
        "is QEMU 8.2: the multi-process PCI link is QEMU-private, and systolic-qemu speaks QEMU 7.2's");
    expect_refused(qemu("--qemu " + fake_qemu("6.2.0") + " --run " + ok), "is QEMU 6.2");
    expect_refused(qemu("--kernel /nonexistent/vmlinuz --run " + ok),
                   "the kernel /nonexistent/vmlinuz: cannot be read");
    expect_refused(qemu("--kernel " + ok + " --run " + ok), "not a Linux x86 kernel (bzImage)");
    // The user's program and files are checked first: their refusals do not depend on a kernel here.
    expect_refused(qemu("--run /nonexistent/prog"), "--run /nonexistent/prog: cannot be read");
    expect_refused(qemu("--kernel /nonexistent/vmlinuz --qemu /nonexistent/qemu --run /nonexistent/prog"),
                   "--run /nonexistent/prog: cannot be read");
    expect_refused(qemu("--run " + std::string(SYSTOLIC_QEMU)),
                   "not a static x86-64 executable or a script (the guest has no libraries)");
    expect_refused(qemu("--guest-file /nonexistent/data --run " + ok),
                   "--guest-file /nonexistent/data: not a file");
    expect_refused(qemu("--run"), "--run needs a program");
    expect_refused(qemu("--initrd " + ok + " --run " + ok), "--initrd replaces the initramfs");
    expect_refused(qemu("--timeout 0 --run " + ok), "--timeout 0: not a time");
    expect_refused(qemu("--quantum 1us --run " + ok), "--quantum needs --time free");
    expect_refused(qemu("--time later --run " + ok), "--time");
    expect_refused(qemu("--inject nothing --run " + ok), "--inject");
    expect_refused(qemu("--json '' --run " + ok), "--json");
}

// The rules --help lists (from the one table the check uses) are docs/options.md's rows.
TEST_F(QemuCli, DocsListTheOptionRules) {
    systolic::tb::testing::expect_rules_documented(qemu("--help").out, "systolic-qemu");
}

// A kernel of a release no driver was built for: refused, naming the headers it needs (a bzImage
// header is all systolic-qemu reads of it).
TEST_F(QemuCli, RefusesAKernelTheDriverWasNotBuiltFor) {
    if (const std::string why = no_guest(); !why.empty()) GTEST_SKIP() << why;
    std::string image(0x400, '\0');
    image.replace(0x202, 4, "HdrS");
    image[0x20e] = 0x00;  // the release string at 0x200 + 0x100
    image[0x20f] = 0x01;
    image.replace(0x300, 31, "4.19.0-99-amd64 (someone@else) ");
    std::ofstream(p("vmlinuz-old"), std::ios::binary) << image;
    const cli_result r = qemu("--kernel " + p("vmlinuz-old") + " --run " + script("ok.sh", "exit 0\n"));
    expect_refused(
        r, "no driver was built for Linux 4.19.0-99-amd64 (it needs Debian's linux-headers-4.19.0-99-amd64");
}

TEST_F(QemuCli, TheProgramsOutputAndStatusAreTheRunsAndItsFilesAreInData) {
    if (const std::string why = no_guest(); !why.empty()) GTEST_SKIP() << why;
    std::filesystem::create_directories(path("inputs/deeper"));
    std::ofstream(p("inputs/deeper/x.txt")) << "forty-two\n";
    std::ofstream(p("single.txt")) << "one file\n";
    const std::string prog = script("show.sh",
                                    "echo \"args: $# [$1] [$2]\"\n"
                                    "cat /data/inputs/deeper/x.txt /data/single.txt\n"
                                    "grep -c '^systolic ' /proc/modules\n"
                                    "exit 7\n");
    const cli_result r = qemu("--guest-file " + p("inputs") + " --guest-file " + p("single.txt") + " --run " +
                              prog + " 'a b' -c");
    EXPECT_EQ(r.status, 7) << r.out << r.err;
    EXPECT_NE(r.out.find("args: 2 [a b] [-c]\nforty-two\none file\n1\n"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("the guest's program exited with 7"), std::string::npos) << r.err;
    EXPECT_NE(r.out.find("systolic-qemu: "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" 0 jobs checked, 0 interrupts, 0 failures, "), std::string::npos) << r.out;
}

TEST_F(QemuCli, AGuestThatHangsEndsAtTheTimeout) {
    if (const std::string why = no_guest(); !why.empty()) GTEST_SKIP() << why;
    const cli_result r = qemu("--timeout 10s --run " + script("hang.sh", "echo hanging; sleep 1000\n"));
    // (Whether the guest got as far as its echo depends on how fast this machine boots it.)
    EXPECT_EQ(r.status, 4) << r.out << r.err;
    EXPECT_NE(r.err.find("the guest did not finish within 10 s (--timeout)"), std::string::npos) << r.err;
}

TEST_F(QemuCli, AGuestThatEndsWithoutAVerdictIsExit3) {
    if (const std::string why = no_guest(); !why.empty()) GTEST_SKIP() << why;
    // No /init to run: the kernel panics, and panic=-1 with -no-reboot ends QEMU.
    const cli_result r = qemu("--append 'console=ttyS0 quiet panic=-1 rdinit=/nonexistent' --run " +
                              script("never.sh", "exit 0\n"));
    EXPECT_EQ(r.status, 3) << r.out << r.err;
    EXPECT_NE(r.err.find("the guest ended without a verdict (no write to the test-exit register"),
              std::string::npos)
        << r.err;
}

// A guest that writes and reads the accelerator's registers at random, with bus mastering off, never
// crashes the platform: every access is answered, every job is checked (refused, failed DMA or
// stopped), and the run ends with the guest's verdict.
TEST_F(QemuCli, RandomRegisterAccessesFromTheGuestAreAllAnsweredAndChecked) {
    if (const std::string why = no_guest(); !why.empty()) GTEST_SKIP() << why;
    const cli_result r = qemu("--array 4 --json " + p("report.json") + " --run " SYSTOLIC_QEMU_FUZZ " 3000");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("fuzz: done, 3000 accesses"), std::string::npos) << r.out;
    std::ifstream in(p("report.json"));
    const auto report = nlohmann::json::parse(in);
    EXPECT_GT(report["jobs"].size(), 100u) << "a third of the accesses start a job";
    EXPECT_EQ(report["failures"], 0);
    EXPECT_EQ(report["protocol_violations"], 0);
}

// The driver's tests in the guest, twice, with --json: every job checked and passed, one interrupt a
// job, and the same counters and scoreboard counts both times (time settle: how fast the guest runs
// does not reach the model).
TEST_F(QemuCli, TheSameGuestRunTwiceGivesTheSameJobsOneInterruptEach) {
    if (const std::string why = no_guest(); !why.empty()) GTEST_SKIP() << why;
    nlohmann::json reports[2];
    for (int i = 0; i < 2; ++i) {
        const std::string json = p("run" + std::to_string(i) + ".json");
        const cli_result r = qemu("--array 8 --json " + json + " --run " SYSTOLIC_LINUX_TEST " formats");
        ASSERT_EQ(r.status, 0) << r.out << r.err;
        std::ifstream in(json);
        reports[i] = nlohmann::json::parse(in);
    }
    const auto& jobs = reports[0]["jobs"];
    ASSERT_GT(jobs.size(), 10u);
    EXPECT_EQ(reports[0]["interrupts"], jobs.size()) << "one interrupt a job";
    EXPECT_EQ(reports[0]["failures"], 0);
    for (const auto& j : jobs)
        EXPECT_TRUE(j["pass"].get<bool>()) << j.dump();
    // Everything but where the kernel placed the buffers, which each boot chooses anew.
    for (auto& r : reports)
        for (auto& j : r["jobs"])
            j.erase("job");
    EXPECT_EQ(reports[0]["jobs"], reports[1]["jobs"]);
    EXPECT_EQ(reports[0]["interrupts"], reports[1]["interrupts"]);
}

}  // namespace
