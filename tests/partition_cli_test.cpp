// systolic-partition as a user runs it: the seed's 15^3 figures in text and JSON, --dep, the two
// counting methods giving the same report, and bad input (one line on stderr, exit 2, no file).
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_harness.h"

namespace {

namespace fs = std::filesystem;

using systolic::tb::testing::cli_result;
using systolic::tb::testing::slurp;

class SystolicPartition : public systolic::tb::testing::cli_fixture {
protected:
    cli_result run(const std::string& args) const {
        return run_tool(std::string("exec ") + SYSTOLIC_PARTITION, args);
    }

    nlohmann::json run_json(const std::string& args) const {
        const auto r = run(args + " --json -");
        EXPECT_EQ(r.status, 0) << args << "\n" << r.err;
        return nlohmann::json::parse(r.out);
    }

    void expect_usage_error(const std::string& args, const std::string& needle) {
        const auto json = path("r.json");
        SCOPED_TRACE(args);
        const auto r = run(args + " --json " + json.string());
        expect_refused(r, needle);
        EXPECT_TRUE(r.out.empty()) << r.out;
        EXPECT_FALSE(fs::exists(json));
    }
};

TEST_F(SystolicPartition, SeedCubePrintsHalosAndTheSchedule) {
    const auto r = run("--m 15 --k 15 --p 15 --block 5");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(r.err.empty()) << r.err;
    for (const char* line : {"a 3 x 3 x 3 grid (I x J x K) of 27 blocks; counts enumerated point by point",
                             "halo words by face: +i 450, -i 0, +j 450, -j 0, +k 450, -k 0; corner 0",
                             "crossing edges: 1350 halo, 0 long-range, 0 collective",
                             "surface to volume: 1350 halo words for 3375 points = 0.4",
                             "takes Ti+Tj+Tk-2 = 13 steps (43 over the whole cube)",
                             "C[0][0] = A[0][0]*B[0][0] + A[0][1]*B[1][0] + A[0][2]*B[2][0]",
                             "systolic-tb --array 5 --m 15 --k 15 --p 15 --k-tile 5 --order row visits",
                             "(0,0,0) (0,0,1) (0,0,2)\n"})
        EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
}

TEST_F(SystolicPartition, JsonHasHalosGridScheduleAndBlocks) {
    const auto j = run_json("--m 15 --k 15 --p 15 --block 5");
    EXPECT_EQ(j["halo_words"], (nlohmann::json{{"a", 450}, {"b", 450}, {"c", 450}}));
    EXPECT_EQ(j["long_range_edges"], 0);
    EXPECT_EQ(j["collective_edges"], 0);
    EXPECT_EQ(j["grid"]["blocks"], 27);
    EXPECT_EQ(j["method"], "enumerated");
    EXPECT_DOUBLE_EQ(j["surface_to_volume"]["ratio"].get<double>(), 0.4);
    ASSERT_EQ(j["blocks"].size(), 27u);
    EXPECT_EQ(j["blocks"][13]["index"], nlohmann::json::array({1, 1, 1}));
    EXPECT_EQ(j["blocks"][13]["halo_words"], 75);
    EXPECT_EQ(j["schedule"]["block_wavefront_steps"], 13);
    EXPECT_EQ(j["schedule"]["cube_wavefront_steps"], 43);
    EXPECT_EQ(j["schedule"]["visits"].size(), 27u);
    EXPECT_EQ(j["schedule"]["systolic_tb"],
              "systolic-tb --array 5 --m 15 --k 15 --p 15 --k-tile 5 --order row");
}

// Ti != Tj runs on a rectangular array: Ti rows of Tj PEs.
TEST_F(SystolicPartition, RectangularBlocksNameARectangularArray) {
    const auto j = run_json("--m 7 --k 5 --p 9 --block 3,2,4");
    EXPECT_EQ(j["schedule"]["systolic_tb"],
              "systolic-tb --array 3x4 --m 7 --k 5 --p 9 --k-tile 2 --order row");
    const auto r = run("--m 7 --k 5 --p 9 --block 3,2,4");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("systolic-tb --array 3x4 --m 7 --k 5 --p 9 --k-tile 2 --order row visits"),
              std::string::npos)
        << r.out;
}

// --block Ti,Tk,Tj follows --m --k --p: 7x5x9 in 3,2,3 is 3 blocks along each axis, the last of
// each shorter.
TEST_F(SystolicPartition, BlockTakesTiTkTj) {
    const auto j = run_json("--m 7 --k 5 --p 9 --block 3,2,3 --order snake");
    EXPECT_EQ(j["block"], (nlohmann::json{{"i", 3}, {"j", 3}, {"k", 2}}));
    EXPECT_EQ(j["grid"], (nlohmann::json{{"i", 3}, {"j", 3}, {"k", 3}, {"blocks", 27}}));
    EXPECT_EQ(j["blocks"][26]["i"], nlohmann::json::array({6, 7}));
    EXPECT_EQ(j["blocks"][26]["j"], nlohmann::json::array({6, 9}));
    EXPECT_EQ(j["blocks"][26]["k"], nlohmann::json::array({4, 5}));
    EXPECT_EQ(j["blocks"][26]["volume"], 1 * 3 * 1);
    // Snake: tile row 1 runs right to left, so the fourth output tile is (1,2).
    EXPECT_EQ(j["schedule"]["visits"][9], nlohmann::json::array({1, 2, 0}));
}

TEST_F(SystolicPartition, DepAddsLongRangeAndCollectives) {
    const auto j = run_json("--m 15 --k 15 --p 15 --block 5 --dep far:0,-7,0 --dep sum:reduce-k");
    ASSERT_EQ(j["dependences"].size(), 5u);
    const auto& far = j["dependences"][3];
    EXPECT_EQ(far["offset"], nlohmann::json::array({0, -7, 0}));
    // j = 7..14 read j - 7: j in [7,10) and [12,15) reach the previous block, j in {10, 11} skip one.
    EXPECT_EQ(far["edges"], 8 * 15 * 15);
    EXPECT_EQ(far["long_range_edges"], 2 * 15 * 15);
    EXPECT_EQ(far["halo_edges"], 6 * 15 * 15);
    EXPECT_EQ(far["halo_depth"], nlohmann::json::array({0, 5, 0}));
    EXPECT_EQ(j["long_range_edges"], 2 * 15 * 15);
    EXPECT_EQ(j["collective_edges"], 3375 * 10);
    EXPECT_EQ(j["halo_words"]["sum"], 0);
}

TEST_F(SystolicPartition, BothMethodsGiveTheSameReport) {
    const std::string args = "--m 11 --k 9 --p 13 --block 4,3,5 --dep x:2,-5,1 --dep y:reduce-i";
    auto enumerated = run_json(args + " --method enumerate");
    auto closed = run_json(args + " --method closed-form");
    EXPECT_EQ(enumerated["method"], "enumerated");
    EXPECT_EQ(closed["method"], "closed-form");
    enumerated.erase("method");
    closed.erase("method");
    EXPECT_EQ(enumerated, closed);
}

TEST_F(SystolicPartition, EdgeListForDrawing) {
    const auto j = run_json("--m 15 --k 15 --p 15 --block 5 --edges");
    ASSERT_TRUE(j.contains("crossing_edge_list"));
    EXPECT_EQ(j["crossing_edge_list"].size(), 1350u);
    for (const auto& e : j["crossing_edge_list"])
        ASSERT_EQ(e[2], "halo") << e;
}

TEST_F(SystolicPartition, BadInputIsOneLineAndExitTwo) {
    expect_usage_error("--m 0 --k 3 --p 3 --block 2", "--m must be positive");
    expect_usage_error("--m 3 --k -1 --p 3 --block 2", "--k must be positive");
    expect_usage_error("--m 3 --k 3 --p 3 --block 0", "must be positive");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2,0,2", "Tk must be positive");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2,2", "expected one size T or three");
    expect_usage_error("--m 3 --k 3 --p 3 --block x", "expected T or Ti,Tk,Tj");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --dep x", "expected NAME:di,dj,dk");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --dep x:1,2", "expected three offsets");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --dep x:1,q,2", "'q' is not an integer offset");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --dep x:reduce-w", "reduce-i, reduce-j or reduce-k");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --dep x:0,0,0", "reads the point itself");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --dep b:1,0,0", "two dependences are named 'b'");
    expect_usage_error("--m 3 --k 3 --p 3", "--block is required");
    expect_usage_error("--m 3 --k 3 --p 3 --block 2 --order diagonal", "--order");
    expect_usage_error("--m 100000 --k 100000 --p 1000 --block 8 --edges", "--edges");
}

TEST_F(SystolicPartition, UnknownOptionSuggestsTheNearestOne) {
    const auto r = run("--m 3 --k 3 --p 3 --blok 2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-partition: error: unknown option --blok; did you mean --block?\n");
}

// Options that would change nothing are refused with what they need and why.
TEST_F(SystolicPartition, OptionsThatChangeNothingAreRefusedWithTheReason) {
    auto r = run("--m 3 --k 3 --p 3 --block 2 --seed 4");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(
        r.err,
        "systolic-partition: error: --seed needs --order random: it seeds only the random block order\n");
    r = run("--m 3 --k 3 --p 3 --block 2 --edges");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err.rfind("systolic-partition: error: --edges needs --json: ", 0), 0u) << r.err;
    EXPECT_EQ(run("--m 3 --k 3 --p 3 --block 2 --order random --seed 4").status, 0);
    systolic::tb::testing::expect_rules_documented(run("--help").out, "systolic-partition");
}

}  // namespace
