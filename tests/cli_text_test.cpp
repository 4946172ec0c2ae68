// The plain pieces behind what the executables print and parse: times in their own unit, the
// nearest name to a mistyped one (and systolic-regs, which has no other test of its command line).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cli_harness.h"
#include "cli_suggest.h"
#include "time_text.h"

namespace {

using namespace systolic::tb;

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

}  // namespace
