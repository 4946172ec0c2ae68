// The plain pieces behind what the executables print and parse: times in their own unit, the
// progress bars' rate and width, the nearest name to a mistyped one (and systolic-regs, which has
// no other test of its command line).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <map>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "cli_suggest.h"
#include "progress_bar.h"
#include "progress_meter.h"
#include "time_text.h"

namespace {

using namespace systolic::cli;

TEST(format_time_test, ThreeSignificantDigitsInTheUnitThatSuits) {
    EXPECT_EQ(format_time_ps(0), "0 s");
    EXPECT_EQ(format_time_ps(1), "1.00 ps");
    EXPECT_EQ(format_time_ps(4000), "4.00 ns");
    EXPECT_EQ(format_time_ps(20000), "20.0 ns");
    EXPECT_EQ(format_time_ps(264000), "264 ns");
    EXPECT_EQ(format_time_ps(450000), "450 ns");
    EXPECT_EQ(format_time_ps(1200000), "1.20 us");
    EXPECT_EQ(format_time_ps(3e6), "3.00 us");
    EXPECT_EQ(format_time_ps(1392640e3), "1.39 ms");
    EXPECT_EQ(format_time_ps(61463e3), "61.5 us");
    EXPECT_EQ(format_time_ps(2.5e12), "2.50 s");
    EXPECT_EQ(format_time_ps(4000e12), "4000 s");  // no unit above seconds
}

TEST(format_time_test, AValueThatRoundsUpTakesTheNextUnit) {
    EXPECT_EQ(format_time_ps(9996), "10.0 ns");
    EXPECT_EQ(format_time_ps(99960), "100 ns");
    EXPECT_EQ(format_time_ps(999400), "999 ns");
    EXPECT_EQ(format_time_ps(999700), "1.00 us");
    EXPECT_EQ(format_time_ps(999.99999), "1.00 ns");  // 1 ns as a double from sc_time::to_seconds
}

TEST(nearest_name_test, ATypoFindsItsOptionAndNoiseFindsNone) {
    const std::vector<std::string> names = {"--array",    "--m",   "--k",       "--p",       "--k-tile",
                                            "--k-policy", "--vcd", "--vcd-pes", "--threads", "--trace"};
    EXPECT_EQ(edit_distance("arry", "array"), 1u);
    EXPECT_EQ(edit_distance("arary", "array"), 1u);  // two neighbours swapped
    EXPECT_EQ(edit_distance("", "abc"), 3u);
    EXPECT_EQ(nearest_name("--arry", names), "--array");
    EXPECT_EQ(nearest_name("--aray", names), "--array");
    EXPECT_EQ(nearest_name("--k-tiel", names), "--k-tile");
    EXPECT_EQ(nearest_name("--ktile", names), "--k-tile");
    EXPECT_EQ(nearest_name("-threads", names), "--threads");  // one dash too few
    EXPECT_EQ(nearest_name("--vcdpes", names), "--vcd-pes");
    EXPECT_EQ(nearest_name("--x", names), std::nullopt);  // one letter away from --m, but all of it
    EXPECT_EQ(nearest_name("--zzzz", names), std::nullopt);
    EXPECT_EQ(nearest_name("--banana", names), std::nullopt);
    EXPECT_EQ(unknown_name_message("option", "--arry", names),
              "unknown option --arry; did you mean --array?");
    EXPECT_EQ(unknown_name_message("option", "--zzzz", names), "unknown option --zzzz (see --help)");
}

// A job whose first second shows no progress (set-up, a first tile), then runs at 1000 edges/s:
// the time left is what the current pace says, not the average since the start (1.25 s here).
TEST(rate_estimator_test, TheTimeBeforeTheFirstProgressIsNotCounted) {
    rate_estimator r;
    for (double t = 0; t < 1.05; t += 0.1)
        r.add(t, 0);
    EXPECT_EQ(r.rate(), std::nullopt);
    for (int i = 11; i <= 50; ++i)
        r.add(i / 10.0, 1000 * (i / 10.0 - 1));
    ASSERT_TRUE(r.rate());
    EXPECT_NEAR(*r.rate(), 1000, 1);
    ASSERT_TRUE(r.seconds_left(5000, 5.0));
    EXPECT_NEAR(*r.seconds_left(5000, 5.0), 1.0, 0.01);
}

// 100 edges/s for 10 s, then 1000 edges/s for 6 s: the estimate follows the recent pace.
TEST(rate_estimator_test, OldProgressDropsOutOfTheWindow) {
    rate_estimator r(5.0);
    for (int i = 0; i <= 100; ++i)
        r.add(i / 10.0, 10.0 * i);
    for (int i = 1; i <= 60; ++i)
        r.add(10 + i / 10.0, 1000 + 100.0 * i);
    ASSERT_TRUE(r.rate());
    EXPECT_NEAR(*r.rate(), 1000, 1);
    EXPECT_NEAR(*r.seconds_left(10000, 16.0), 3.0, 0.01);
}

TEST(rate_estimator_test, NoEstimateUntilProgressSpansATenthOfASecondAndNeverNegative) {
    rate_estimator r;
    r.add(0, 10);
    r.add(0.05, 20);
    EXPECT_EQ(r.rate(), std::nullopt);
    EXPECT_EQ(r.seconds_left(100, 0.05), std::nullopt);
    r.add(1.0, 110);
    EXPECT_NEAR(*r.rate(), 100, 1e-9);
    EXPECT_NEAR(*r.seconds_left(210, 1.0), 1.0, 1e-9);
    EXPECT_NEAR(*r.seconds_left(210, 1.5), 0.5, 1e-9);  // the clock runs on between points
    EXPECT_EQ(*r.seconds_left(210, 9.0), 0.0);          // a stall past the estimate: 0, never negative
    r.add(2.0, 50);                                     // not progress: ignored
    EXPECT_NEAR(*r.rate(), 100, 1e-9);
}

TEST(progress_meter_test, TimeLeftText) {
    EXPECT_EQ(time_left_text(0.2), "1 s left");
    EXPECT_EQ(time_left_text(3), "3 s left");
    EXPECT_EQ(time_left_text(82), "1 min 22 s left");
    EXPECT_EQ(time_left_text(119.7), "2 min 00 s left");
}

TEST(progress_meter_test, WidthFromTheTerminalThenColumnsThen80) {
    EXPECT_EQ(fit_width("abcdef", 4), "abc");
    EXPECT_EQ(fit_width("ab", 80), "ab");
    const int null = ::open("/dev/null", O_WRONLY);
    ASSERT_GE(null, 0);
    ::setenv("COLUMNS", "37", 1);
    EXPECT_EQ(terminal_width(null), 37u);
    ::setenv("COLUMNS", "wide", 1);
    EXPECT_EQ(terminal_width(null), 80u);
    ::unsetenv("COLUMNS");
    EXPECT_EQ(terminal_width(null), 80u);
    ::close(null);
}

// A pane 30 columns wide: the bar's every redraw fits in it, so the terminal never wraps a line.
TEST(progress_meter_test, TheBarFitsANarrowTerminal) {
    const int master = ::posix_openpt(O_RDWR | O_NOCTTY);
    ASSERT_GE(master, 0);
    ASSERT_EQ(::grantpt(master), 0);
    ASSERT_EQ(::unlockpt(master), 0);
    const int slave = ::open(::ptsname(master), O_RDWR | O_NOCTTY);
    ASSERT_GE(slave, 0);
    winsize ws{};
    ws.ws_col = 30;
    ws.ws_row = 10;
    ASSERT_EQ(::ioctl(slave, TIOCSWINSZ, &ws), 0);
    EXPECT_EQ(terminal_width(slave), 30u);
    std::FILE* out = ::fdopen(slave, "w");
    ASSERT_NE(out, nullptr);
    {
        progress_bar bar(
            progress_bar::mode::forced, 4000,
            [](const progress_state& s) {
                return progress_line(1, 40, std::uint64_t(s.done), 4000, s.rate, s.seconds_left, s.columns);
            },
            out);
        bar.update(100);
        bar.finish();
    }
    std::fclose(out);
    std::string seen;
    char buf[512];
    ::fcntl(master, F_SETFL, O_NONBLOCK);
    for (ssize_t n; (n = ::read(master, buf, sizeof buf)) > 0;)
        seen.append(buf, std::size_t(n));
    ::close(master);
    int redraws = 0;
    for (std::size_t at = seen.find('\r'); at != std::string::npos; at = seen.find('\r', at + 1)) {
        const std::size_t end = seen.find("\x1b[K", at);
        if (end == std::string::npos) continue;
        ++redraws;
        EXPECT_LE(end - at - 1, 29u) << seen;
    }
    EXPECT_EQ(redraws, 2) << seen;
}

using systolic::tb::testing::cli_fixture;
using SystolicRegs = cli_fixture;

TEST_F(SystolicRegs, UnknownCommandSuggestsTheNearestOne) {
    const std::string regs = std::string("exec ") + SYSTOLIC_REGS;
    auto r = run_tool(regs, "markdwn");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-regs: error: unknown command markdwn; did you mean markdown?\n");
    r = run_tool(regs, "check c-heder x.h");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-regs: error: unknown command c-heder; did you mean c-header?\n");
    r = run_tool(regs, "--markdown");
    EXPECT_EQ(r.err, "systolic-regs: error: unknown command --markdown; did you mean markdown?\n");
    r = run_tool(regs, "frobnicate");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-regs: error: unknown command frobnicate (systolic-regs c-header|markdown)\n");
    EXPECT_EQ(run_tool(regs, "markdown").status, 0);
}

// The option group every simulating executable declares through cli::add_output_options: each of
// its options has one help line, the same in systolic-tb, systolic-vp and systolic-soc (where
// built); systolic-run shares --log-level.
using OutputOptions = cli_fixture;

TEST_F(OutputOptions, EveryExecutableShowsTheSameHelpLine) {
    std::map<std::string, std::string> tools = {{"systolic-tb", SYSTOLIC_TB}, {"systolic-vp", SYSTOLIC_VP}};
#ifdef SYSTOLIC_SOC
    tools["systolic-soc"] = SYSTOLIC_SOC;
#endif
    for (const std::string option : {"--vcd ", "--trace ", "--log-level "}) {
        std::map<std::string, std::string> lines;
        auto with_run = tools;
        if (option == "--log-level ") with_run["systolic-run"] = SYSTOLIC_RUN;
        for (const auto& [name, tool] : with_run) {
            const auto r = run_tool("exec " + tool, "--help");
            ASSERT_EQ(r.status, 0) << name << ": " << r.err;
            const std::size_t at = r.out.find("\n  " + option);
            ASSERT_NE(at, std::string::npos) << name << " has no " << option << "in --help:\n" << r.out;
            lines[name] = r.out.substr(at + 1, r.out.find('\n', at + 1) - at - 1);
        }
        for (const auto& [name, line] : lines)
            EXPECT_EQ(line, lines.at("systolic-tb"))
                << name << "'s " << option << "differs from systolic-tb's";
    }
}

}  // namespace
