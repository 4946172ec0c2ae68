// systolic-tb against a hostile user: conversions that used to be undefined, inputs that
// are not regular files, jobs too large for memory, outputs that must be all-or-nothing, numbers
// out of range, and .npy files that numpy itself accepts. Each test failed before its fix.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "io/npy.h"

namespace {

namespace fs = std::filesystem;
using systolic::tb::testing::slurp;

class Hardening : public systolic::tb::testing::cli_fixture {
protected:
    void write_i8(const std::string& name, std::uint64_t rows, std::uint64_t cols,
                  const std::vector<std::int8_t>& v) {
        systolic::io::write_npy(p(name), "|i1", rows, cols, v.data(), v.size());
    }
    void write_i32(const std::string& name, std::uint64_t rows, std::uint64_t cols,
                   const std::vector<std::int32_t>& v) {
        systolic::io::write_npy(p(name), "<i4", rows, cols, v.data(), v.size() * 4);
    }
};

// --- Per-partial quantization with a scale that overflows int32 -----------------------------------

// A = [[100,100]], B = [[100],[100]], K split into two chunks of one term: each partial is 10000,
// times the scale it is far beyond int32, so it saturates to 2^31-1. With --overflow saturate the
// two saturated partials stay at 2^31-1 and the int8 code saturates to 127. Before the fix the
// conversion was undefined (x86 gave INT_MIN) and C was 0 while the scoreboard said PASS.
// End-to-end this depends on the reference GEMM computing the same rule on its own.
TEST_F(Hardening, HugeScaleSaturatesPartials) {
    write_i8("a.npy", 1, 2, {100, 100});
    write_i8("b.npy", 2, 1, {100, 100});
    for (const char* scale : {"1e6", "1e308"}) {
        SCOPED_TRACE(scale);
        const auto r =
            run("--dtype int8 --a a.npy --b b.npy --k-tile 1 --k-policy partials --out-dtype int8 "
                "--quantize-partials --overflow saturate --scale " +
                std::string(scale) + " --c-out c.npy");
        ASSERT_EQ(r.status, 0) << r.err << r.out;
        EXPECT_NE(r.out.find("C=[[127]]"), std::string::npos) << r.out;
        const auto c = systolic::io::read_matrix(p("c.npy"), "|i1", "int8");
        EXPECT_EQ(static_cast<std::int8_t>(c.data.at(0)), 127);
    }
}

// --scale 1e6 per partial, with the default --overflow wrap: the partials saturate to 2^31-1
// each, and their sum wraps (counted) to -2, which is C. Defined, reported, and the same every time.
TEST_F(Hardening, HugeScaleWithWrappingCombination) {
    write_i8("a.npy", 1, 2, {100, 100});
    write_i8("b.npy", 2, 1, {100, 100});
    const auto r =
        run("--dtype int8 --a a.npy --b b.npy --k-tile 1 --k-policy partials --out-dtype int8 "
            "--quantize-partials --scale 1e6 --json -");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["overflow"]["wraps"], 1);
    EXPECT_NE(r.err.find("C=[[-2]]"), std::string::npos) << r.err;
}

// --- Inputs that are not regular files -------------------------------------------------------------

TEST_F(Hardening, FifoInputIsRefusedAtOnce) {
    write_i32("b.npy", 2, 2, {1, 2, 3, 4});
    ASSERT_EQ(::mkfifo(p("f.npy").c_str(), 0600), 0);
    expect_refused(run("--a f.npy --b b.npy"), "f.npy: cannot open: not a regular file (a FIFO)");
    expect_refused(run("--a b.npy --b /dev/zero"), "not a regular file (a character device)");
}

// --- Memory ----------------------------------------------------------------------------------------

// Jobs that would each grow past 6 GiB: refused with one line naming the
// figure, before anything large is allocated (the peak RSS stays small).
TEST_F(Hardening, JobsOverTheMemoryLimitAreRefused) {
    write_i32("tall.npy", 30000, 1, std::vector<std::int32_t>(30000, 1));
    write_i32("wide.npy", 1, 30000, std::vector<std::int32_t>(30000, 1));
    for (const std::string args : {"--m 18000 --k 18000 --p 18000", "--array 1 --m 1 --k 1000000000 --p 1",
                                   "--array 1024 --m 1 --k 1 --p 400000000", "--a tall.npy --b wide.npy"}) {
        SCOPED_TRACE(args);
        const auto r = run(args + " --max-memory 4G --json r.json --c-out c.npy");
        expect_refused(r, "the job needs about ");
        EXPECT_NE(r.err.find("over the limit of 4.0 GiB set by --max-memory"), std::string::npos) << r.err;
        EXPECT_LT(r.max_rss_bytes, std::uint64_t{200} << 20);
        EXPECT_FALSE(fs::exists(path("r.json")));
        EXPECT_FALSE(fs::exists(path("c.npy")));
    }
    // A fabric's link buffers: 2L slots per link, 35 GiB here.
    {
        const auto r = run("--fabric 8x8x8 --array 4 --link-latency 1048576 --max-memory 1G");
        expect_refused(r, "the job needs about 35 GiB of memory (PEs and engine state 35 GiB");
        EXPECT_LT(r.max_rss_bytes, std::uint64_t{200} << 20);
    }
    // The default limit is a share of physical memory: no machine has room for this one.
    const auto r = run("--m 100000 --k 100000 --p 100000");
    expect_refused(r, "half of physical memory; --max-memory changes it");
}

TEST_F(Hardening, MaxMemoryOption) {
    expect_refused(run("--max-memory 1M"), "over the limit of 1.0 MiB set by --max-memory");
    // Enough digits to show the difference: 2000M is 1.95 GiB, not "2.0 GiB" like the estimate.
    expect_refused(run("--array 1 --m 1 --k 38000000 --p 1 --max-memory 2000M"),
                   "the job needs about 1.99 GiB of memory (memory image and its shadow copy 1.4 GiB, "
                   "operands 290 MiB), over the limit of 1.95 GiB set by --max-memory");
    EXPECT_EQ(run("--max-memory 1G").status, 0);
    EXPECT_EQ(run("--max-memory 1073741824").status, 0);
    EXPECT_EQ(run("--max-memory 512MiB").status, 0);
    expect_refused(run("--max-memory 12Q"), "--max-memory '12Q' is not a size");
    expect_refused(run("--max-memory -1"), "--max-memory '-1' is not a size");
    expect_refused(run("--max-memory 99999999999999999999"),
                   "--max-memory '99999999999999999999' is out of range");
}

#if !defined(SYSTOLIC_SANITIZED)  // ASan's shadow memory makes both the RSS and ulimit -v meaningless
// The estimate against what the process really used, across the things that dominate: PEs, tiles,
// the memory image, a long K, K-splitting with a second reference, and files.
TEST_F(Hardening, MemoryEstimateIsWithinOneAndAHalfOfThePeak) {
    write_i32("a.npy", 700, 900, std::vector<std::int32_t>(700 * 900, 3));
    write_i32("b.npy", 900, 500, std::vector<std::int32_t>(900 * 500, -2));
    for (const std::string args :
         {"--array 1 --m 1 --k 1 --p 1", "--array 256", "--array 1 --m 300 --k 1 --p 300",
          "--array 16 --m 1000 --k 1000 --p 1000", "--array 2 --m 2 --k 3000000 --p 2",
          "--dtype int8 --array 8 --m 600 --k 600 --p 600 --k-tile 100 --k-policy partials --out-dtype int8 "
          "--quantize-partials",
          "--array 8 --a a.npy --b b.npy",
          // Many small arrays (three modules and an engine node each) and long links.
          "--fabric 32x32x32 --array 1", "--fabric 8x8x8 --array 4 --link-latency 4096"}) {
        SCOPED_TRACE(args);
        const auto r = run(args + " --json r.json");
        ASSERT_EQ(r.status, 0) << r.err;
        // Not parsed as a whole: a large report would grow this process, and with it the next child's RSS.
        const std::string report = slurp(path("r.json"));
        const auto at = report.find("\"memory_estimate_bytes\": ");
        ASSERT_NE(at, std::string::npos);
        const double estimate = std::stod(report.substr(at + 25, 24));
        const double peak = double(r.max_rss_bytes);
        EXPECT_LE(estimate, 1.5 * peak) << "estimate " << estimate << ", peak " << peak;
        EXPECT_LE(peak, 1.5 * estimate) << "estimate " << estimate << ", peak " << peak;
    }
}

// An allocation that fails anyway (here: an address-space limit below the estimate) says what it
// was for, never a bare std::bad_alloc.
TEST_F(Hardening, AllocationFailureSaysWhat) {
    const auto r = run_tool("ulimit -v 600000 && exec " + std::string(SYSTOLIC_TB),
                            "--max-memory 100G --array 1 --m 1 --k 200000000 --p 1");
    expect_refused(r, "out of memory while generating random A and B (1x200000000 and 200000000x1)");
    EXPECT_EQ(r.err.find("std::bad_alloc"), std::string::npos) << r.err;
}
#endif

// --- Outputs ---------------------------------------------------------------------------------------

TEST_F(Hardening, NoReportWhenCCannotBeWritten) {
    expect_refused(run("--json r.json --c-out nodir/c.npy"),
                   "--c-out nodir/c.npy: directory nodir does not exist");
    EXPECT_FALSE(fs::exists(path("r.json")));
    expect_no_temporaries();
}

TEST_F(Hardening, NoFilesWhenStdoutFails) {
    for (const char* redirect : {">/dev/full", ">&-"}) {
        SCOPED_TRACE(redirect);
        for (const char* json : {"--json -", "--json r.json"}) {
            const auto r = run(std::string(json) + " --c-out c.npy", redirect);
            EXPECT_EQ(r.status, 2) << r.err;
            EXPECT_NE(r.err.find("writing to stdout failed"), std::string::npos) << r.err;
            EXPECT_FALSE(fs::exists(path("c.npy")));
            EXPECT_FALSE(fs::exists(path("r.json")));
            expect_no_temporaries();
        }
    }
}

TEST_F(Hardening, OutputOverAnInputIsRefused) {
    write_i32("a.npy", 2, 2, {1, 2, 3, 4});
    write_i32("b.npy", 2, 2, {5, 6, 7, 8});
    ASSERT_EQ(::link(p("b.npy").c_str(), p("b_link.npy").c_str()), 0);
    const std::string a_before = slurp(path("a.npy")), b_before = slurp(path("b.npy"));
    const std::string in = "--a a.npy --b b.npy ";
    expect_refused(run(in + "--c-out a.npy"), "--c-out a.npy is the input --a");
    expect_refused(run(in + "--c-out ./b.npy"), "--c-out ./b.npy is the input --b");
    expect_refused(run(in + "--c-out b_link.npy"), "--c-out b_link.npy is the input --b");
    expect_refused(run(in + "--json a.npy"), "--json a.npy is the input --a");
    expect_refused(run(in + "--c-out c.npy --json c.npy"), "--json c.npy is also --c-out");
    expect_refused(run(in + "--c-out c.npy --json ../" + m_dir.filename().string() + "/c.npy"),
                   "is also --c-out");
    EXPECT_EQ(slurp(path("a.npy")), a_before);
    EXPECT_EQ(slurp(path("b.npy")), b_before);
    EXPECT_FALSE(fs::exists(path("c.npy")));
}

TEST_F(Hardening, NonRegularOutputIsRefused) {
    ASSERT_EQ(::mkfifo(p("fifo").c_str(), 0600), 0);
    fs::create_directory(path("dir"));
    expect_refused(run("--json /dev/null"), "--json /dev/null exists and is a character device");
    expect_refused(run("--c-out /dev/null"), "--c-out /dev/null exists and is a character device");
    expect_refused(run("--c-out fifo"), "--c-out fifo exists and is a FIFO");
    expect_refused(run("--json dir"), "--json dir exists and is a directory");
    struct stat st {};
    ASSERT_EQ(::stat("/dev/null", &st), 0);
    EXPECT_TRUE(S_ISCHR(st.st_mode));
    EXPECT_TRUE(fs::is_fifo(path("fifo")));
}

TEST_F(Hardening, EmptyOutputNameIsAnError) {
    expect_refused(run("--c-out ''"), "--c-out needs a file name, got ''");
    expect_refused(run("--json ''"), "--json needs a file name");
}

TEST_F(Hardening, OutputsAreWrittenWhenEverythingWorks) {
    const auto r = run("--c-out c.npy --json r.json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(fs::exists(path("c.npy")));
    EXPECT_TRUE(nlohmann::json::parse(slurp(path("r.json")))["pass"].get<bool>());
    expect_no_temporaries();
}

// --- Errors after the simulation ----------------------------------------------------------------

// An output that passes every check before the run (its temporary is created then) but cannot be
// written afterwards: a file size limit of 512 bytes (SIGXFSZ ignored, so the write fails with
// EFBIG) is hit by C's 16 KiB, after sc_start. In the sanitizer build such an error used to end
// in a false ASan stack-buffer-overflow and exit status 1 (see tb/asan_fiber_fix.cpp).
TEST_F(Hardening, ErrorAfterTheSimulationExitsTwo) {
    const auto r = run_tool("trap '' XFSZ; ulimit -f 1; exec " + std::string(SYSTOLIC_TB),
                            "--m 64 --k 2 --p 64 --json r.json --c-out c.npy");
    expect_refused(r, "--c-out c.npy: write failed: File too large");
    EXPECT_FALSE(fs::exists(path("r.json")));
    EXPECT_FALSE(fs::exists(path("c.npy")));
    expect_no_temporaries();
}

// --- Numbers out of range --------------------------------------------------------------------------

TEST_F(Hardening, OutOfRangeNumbersAreRefusedQuotingTheText) {
    expect_refused(run("--seed 18446744073709551616"), "--seed '18446744073709551616' is out of range");
    expect_refused(run("--seed 99999999999999999999999"), "--seed '99999999999999999999999' is out of range");
    expect_refused(run("--seed -1"), "--seed '-1' is out of range [0, 18446744073709551615]");
    expect_refused(run("--seed 1x"), "--seed '1x' is not a non-negative integer");
    expect_refused(run("--m 99999999999999999999 --k 1 --p 1"), "--m '99999999999999999999' is out of range");
    expect_refused(run("--k-tile -99999999999999999999"), "--k-tile '-99999999999999999999' is out of range");
    expect_refused(run("--out-dtype int8 --scale 1e400"), "--scale '1e400' is out of the range of a double");
    expect_refused(run("--out-dtype int8 --scale 2x"), "--scale '2x' is not a number");
    expect_refused(run("--out-dtype int8 --zero-point 1e3"), "--zero-point '1e3' is not an integer");
    EXPECT_EQ(run("--order random --seed 18446744073709551615").status, 0);
    EXPECT_EQ(run("--m 3 --k 3 --p 3 --seed +7 --array 3").status, 0);
}

// Found by fuzz/cli_fuzz.cpp: a newline typed into an argument split the error message in two.
TEST_F(Hardening, ErrorsStayOnOneLineWhateverWasTyped) {
    // /bin/sh is dash on Debian: printf makes the newline.
    expect_refused(run("\"$(printf -- '--seed-1\\n2')\""), "--seed-1\\x0a2");
    expect_refused(run("--seed \"$(printf '1\\n2')\""), "--seed '1\\x0a2' is not a non-negative integer");
    write_i32("b.npy", 1, 1, {1});
    expect_refused(run("--a \"$(printf 'no\\nfile.npy')\" --b b.npy"), "no\\x0afile.npy");
}

// --- Numpy compatibility ---------------------------------------------------------------------------

TEST_F(Hardening, TrailingBytesAfterTheDataAreIgnoredAsNumpyDoes) {
    write_i32("a.npy", 3, 3, {1, 2, 3, 4, 5, 6, 7, 8, 9});
    write_i32("b.npy", 3, 3, {1, 0, 2, 0, 1, 0, 2, 0, 1});
    std::ofstream(path("a.npy"), std::ios::binary | std::ios::app) << "trailing bytes";
    const auto r = run("--a a.npy --b b.npy");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("C=[[7,2,5],[16,5,14],[25,8,23]]"), std::string::npos) << r.out;
}

}  // namespace
