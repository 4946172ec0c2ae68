// systolic-tb as a user runs it: the seed figures, the JSON report, .npy in and out, and every
// kind of bad input (one line on stderr, exit status 2, no output file left behind).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "io/npy.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

namespace {

namespace fs = std::filesystem;
using systolic::int32_format;

using systolic::tb::testing::slurp;

class SystolicTb : public systolic::tb::testing::cli_fixture {
protected:
    // A bad invocation: exit 2, exactly one line on stderr mentioning `needle`, no output files.
    void expect_usage_error(const std::string& args, const std::string& needle) {
        SCOPED_TRACE(args);
        const auto c_out = path("c.npy"), json = path("r.json");
        expect_refused(run(args + " --c-out " + c_out.string() + " --json " + json.string()), needle);
        EXPECT_FALSE(fs::exists(c_out));
        EXPECT_FALSE(fs::exists(json));
        expect_no_temporaries();
    }

    void write_i32(const std::string& name, std::uint64_t rows, std::uint64_t cols,
                   const std::vector<std::int32_t>& v) {
        systolic::io::write_npy(path(name).string(), "<i4", rows, cols, v.data(), v.size() * 4);
    }
};

TEST_F(SystolicTb, NoOptionsRunsTheSeedExample) {
    const auto r = run("");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("C=[[7,2,5],[16,5,14],[25,8,23]]"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("tiles: 4, origins (0,0) (0,2) (2,0) (2,2)"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("advance edges: 5 per tile, 20 in total"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("MACs: 48 with padding, 27 real"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("PASS"), std::string::npos);
    EXPECT_TRUE(r.err.empty()) << r.err;  // quiet by default
}

TEST_F(SystolicTb, JsonReportOnStdout) {
    const auto r = run("--json -");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);  // stdout holds only the report
    for (const char* key :
         {"array", "m", "k", "p", "dtype", "order", "tiles", "advance_edges", "advance_edges_per_tile",
          "macs_padded", "macs_real", "utilization", "sim_time_ns", "tiles_detail", "scoreboard", "pass"})
        EXPECT_TRUE(j.contains(key)) << key;
    EXPECT_EQ(j["array"], 2);
    EXPECT_EQ(j["dtype"], "int32");
    EXPECT_EQ(j["order"], "row");
    EXPECT_EQ(j["tiles"], 4);
    EXPECT_EQ(j["advance_edges"], 20);
    EXPECT_EQ(j["advance_edges_per_tile"], 5);
    EXPECT_EQ(j["macs_padded"], 48);
    EXPECT_EQ(j["macs_real"], 27);
    EXPECT_DOUBLE_EQ(j["utilization"].get<double>(), 27.0 / 48.0);
    EXPECT_GT(j["sim_time_ns"].get<double>(), 20.0);
    ASSERT_EQ(j["tiles_detail"].size(), 4u);
    const auto& last = j["tiles_detail"][3];
    EXPECT_EQ(last["index"], 3);
    EXPECT_EQ(last["origin"], nlohmann::json::array({2, 2}));
    EXPECT_EQ(last["advance_edges"], 5);
    EXPECT_EQ(last["real_outputs"], 1);
    EXPECT_EQ(last["masked_outputs"], 3);
    const auto& sb = j["scoreboard"];
    EXPECT_EQ(sb["checked"], 9);
    EXPECT_EQ(sb["mismatches"], 0);
    EXPECT_EQ(sb["writes"], 9);
    EXPECT_EQ(sb["out_of_range_writes"], 0);
    EXPECT_EQ(sb["untouched_ok"], true);
    EXPECT_EQ(j["pass"], true);
}

TEST_F(SystolicTb, NpyInAndOut) {
    const auto pr = systolic::verify::random_problem<int32_format>({7, 5, 6}, 99);
    write_i32("a.npy", 7, 5, pr.a);
    write_i32("b.npy", 5, 6, pr.b);
    const auto r = run("--array 3 --a " + path("a.npy").string() + " --b " + path("b.npy").string() +
                       " --c-out " + path("c.npy").string() + " --json " + path("r.json").string());
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const auto c = systolic::io::read_matrix(path("c.npy").string(), "<i8", "int64");
    EXPECT_EQ(c.shape, (std::vector<std::uint64_t>{7, 6}));
    EXPECT_EQ(systolic::io::as_vector<std::int64_t>(c),
              systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b));
    const auto j = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_EQ(j["m"], 7);
    EXPECT_EQ(j["k"], 5);
    EXPECT_EQ(j["p"], 6);
    EXPECT_EQ(j["tiles"], 6);
}

TEST_F(SystolicTb, EveryOrderWritesTheSameC) {
    std::string first;
    for (const char* order : {"row", "col", "snake", "random"}) {
        const auto c_out = path(std::string("c_") + order + ".npy");
        const auto r = run("--array 4 --m 13 --k 6 --p 10 --seed 5 --order " + std::string(order) +
                           " --c-out " + c_out.string());
        ASSERT_EQ(r.status, 0) << r.err;
        const auto bytes = slurp(c_out);
        if (first.empty()) first = bytes;
        EXPECT_EQ(bytes, first) << order;
    }
}

TEST_F(SystolicTb, LogLevelShowsSimulationTimeAndModule) {
    const auto r = run("--log-level debug");
    EXPECT_EQ(r.status, 0);
    EXPECT_NE(r.err.find("[D "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("tb.controller: tile 3 origin (2,2)"), std::string::npos) << r.err;
}

TEST_F(SystolicTb, BadDimensions) {
    expect_usage_error("--m 0 --k 3 --p 3", "--m must be positive, got 0");
    expect_usage_error("--m 3 --k -2 --p 3", "--k must be positive, got -2");
    expect_usage_error("--m 3 --k 3", "needs all of --m, --k and --p");
    expect_usage_error("--m abc --k 3 --p 3", "--m");
    expect_usage_error("--array 0", "--array must be between 1 and");
    expect_usage_error("--array 5000", "--array must be between 1 and");
}

// --array RxC: R rows of C PEs. M=7 K=4 P=11 on 3x5: ceil(7/3) x ceil(11/5) = 9 tiles of
// 4 + 3 + 5 - 2 = 10 edges; the scoreboard checks all 77 outputs; the report gives rows and columns.
TEST_F(SystolicTb, RectangularArrayPassesTheScoreboard) {
    for (const char* dtype : {"int32", "fp32"}) {
        const auto r =
            run(std::string("--array 3x5 --m 7 --k 4 --p 11 --k-tile 3 --dtype ") + dtype + " --json -");
        ASSERT_EQ(r.status, 0) << dtype << ": " << r.err;
        const auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["array"], "3x5");
        EXPECT_EQ(j["array_rows"], 3);
        EXPECT_EQ(j["array_cols"], 5);
        EXPECT_EQ(j["tiles"], 9);
        EXPECT_EQ(j["advance_edges_per_tile"], 3 + 1 + 2 * (3 + 5 - 2));  // chunks of 3 and 1
        EXPECT_EQ(j["advance_edges"], 9 * (4 + 2 * 6));
        EXPECT_EQ(j["macs_padded"], 9 * 15 * 4);
        EXPECT_EQ(j["macs_real"], 7 * 4 * 11);
        EXPECT_EQ(j["scoreboard"]["checked"], 77);
        EXPECT_EQ(j["pass"], true);
    }
    const auto text = run("--array 3x5 --m 7 --k 4 --p 11");
    ASSERT_EQ(text.status, 0) << text.err;
    EXPECT_NE(text.out.find("on a 3x5 array"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("advance edges: 10 per tile, 90 in total"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("PASS"), std::string::npos) << text.out;
    // A square array written RxC is the same as N.
    const auto square = run("--array 4x4 --json -");
    ASSERT_EQ(square.status, 0) << square.err;
    EXPECT_EQ(nlohmann::json::parse(square.out)["array"], 4);
}

TEST_F(SystolicTb, BadArrayForms) {
    expect_usage_error("--array 0x4", "--array must be between 1 and 1024, got 0x4");
    expect_usage_error("--array 4x2000", "--array must be between 1 and 1024, got 4x2000");
    expect_usage_error("--array 4x", "--array '4x' must be N or RxC");
    expect_usage_error("--array x", "--array 'x' must be N or RxC");
    expect_usage_error("--array 4x4x4", "--array '4x4x4' must be N or RxC");
    expect_usage_error("--array x4", "--array 'x4' must be N or RxC");
    expect_usage_error("--array -3x4", "--array '-3x4' must be N or RxC");
    expect_usage_error("--array 3x5 --vcd w.vcd --vcd-pes 3,0",
                       "--vcd-pes '3,0': row '3' is not an index in [0, 2]");
}

TEST_F(SystolicTb, BadOptions) {
    expect_usage_error("--bogus 3", "--bogus");
    expect_usage_error("--order diagonal", "diagonal");
    expect_usage_error("--log-level loud", "loud");
}

TEST_F(SystolicTb, ShapesThatDoNotChain) {
    write_i32("a.npy", 3, 4, std::vector<std::int32_t>(12, 1));
    write_i32("b.npy", 5, 2, std::vector<std::int32_t>(10, 1));
    expect_usage_error("--a " + path("a.npy").string() + " --b " + path("b.npy").string(),
                       "A's columns must equal B's rows");
    expect_usage_error("--a " + path("a.npy").string(), "--a and --b must be given together");
}

TEST_F(SystolicTb, ShapesThatDisagreeWithOptions) {
    write_i32("a.npy", 3, 4, std::vector<std::int32_t>(12, 1));
    write_i32("b.npy", 4, 2, std::vector<std::int32_t>(8, 1));
    expect_usage_error("--m 5 --a " + path("a.npy").string() + " --b " + path("b.npy").string(),
                       "--m 5 disagrees with the input files (3)");
}

TEST_F(SystolicTb, BadFiles) {
    write_i32("good.npy", 2, 2, {1, 2, 3, 4});
    const std::string good = path("good.npy").string();
    {  // truncated: drop the last element's bytes
        const auto bytes = slurp(good);
        std::ofstream(path("trunc.npy"), std::ios::binary) << bytes.substr(0, bytes.size() - 4);
    }
    std::ofstream(path("text.npy")) << "this is not numpy\n";
    const std::vector<std::int64_t> wide = {1, 2, 3, 4};
    systolic::io::write_npy(path("wide.npy").string(), "<i8", 2, 2, wide.data(), 32);

    expect_usage_error("--a " + path("trunc.npy").string() + " --b " + good, "trunc.npy");
    expect_usage_error("--a " + path("text.npy").string() + " --b " + good, "text.npy");
    expect_usage_error("--a " + path("wide.npy").string() + " --b " + good, "wide.npy");
    expect_usage_error("--a " + path("missing.npy").string() + " --b " + good, "missing.npy");
}

// K-splitting, formats, quantized output and fault injection from the command line.

TEST_F(SystolicTb, KSplitReportKeys) {
    const auto r = run("--k-tile 2 --k-policy partials --json -");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["k_tile"], 2);
    EXPECT_EQ(j["k_chunks"], 2);
    EXPECT_EQ(j["k_policy"], "partials");
    EXPECT_EQ(j["advance_edges"], 28);
    EXPECT_EQ(j["advance_edges_per_tile"], 7);
    EXPECT_EQ(j["tiles_detail"][0]["advance_edges_per_chunk"], nlohmann::json::array({4, 3}));
    EXPECT_EQ(j["pass"], true);
}

TEST_F(SystolicTb, QuantizeOnceVersusPerPartial) {
    const std::string base =
        "--k-tile 2 --k-policy partials --out-dtype int8 --scale 0.5 --rounding nearest-even";
    const auto once =
        run(base + " --c-out " + path("once.npy").string() + " --json " + path("once.json").string());
    ASSERT_EQ(once.status, 0) << once.err;
    const auto per = run(base + " --quantize-partials --c-out " + path("per.npy").string() + " --json " +
                         path("per.json").string());
    ASSERT_EQ(per.status, 0) << per.err;
    const auto c_once = systolic::io::read_matrix(path("once.npy").string(), "|i1", "int8");
    const auto c_per = systolic::io::read_matrix(path("per.npy").string(), "|i1", "int8");
    EXPECT_EQ(static_cast<std::int8_t>(c_once.data[0]), 4);  // round(7 * 0.5 = 3.5) = 4
    EXPECT_EQ(static_cast<std::int8_t>(c_per.data[0]), 3);   // round(0.5) + round(3) = 3
    const auto j_once = nlohmann::json::parse(slurp(path("once.json")));
    const auto j_per = nlohmann::json::parse(slurp(path("per.json")));
    EXPECT_EQ(j_once["output"]["dtype"], "int8");
    EXPECT_EQ(j_once["output"]["differs_from_quantize_once"], 0);
    EXPECT_EQ(j_per["output"]["quantize_partials"], true);
    EXPECT_GT(j_per["output"]["differs_from_quantize_once"].get<int>(), 0);
}

TEST_F(SystolicTb, FormatsReadAndWriteTheirDtypes) {
    const std::vector<std::int8_t> a8 = {1, -2, 3, 4, 5, -6}, b8 = {7, 8, -9, 10, 11, 12};
    systolic::io::write_npy(path("a8.npy").string(), "|i1", 2, 3, a8.data(), 6);
    systolic::io::write_npy(path("b8.npy").string(), "|i1", 3, 2, b8.data(), 6);
    auto r = run("--dtype int8 --a " + path("a8.npy").string() + " --b " + path("b8.npy").string() +
                 " --c-out " + path("c8.npy").string());
    ASSERT_EQ(r.status, 0) << r.err;
    const auto c8 = systolic::io::as_vector<std::int32_t>(
        systolic::io::read_matrix(path("c8.npy").string(), "<i4", "int32"));
    // [[1,-2,3],[4,5,-6]] x [[7,8],[-9,10],[11,12]] = [[58,24],[-83,10]]
    EXPECT_EQ(c8, (std::vector<std::int32_t>{58, 24, -83, 10}));

    const std::vector<float> af = {0.5f, 1.5f, -2.0f, 4.0f}, bf = {1.0f, 0.25f, -1.0f, 2.0f};
    systolic::io::write_npy(path("af.npy").string(), "<f4", 2, 2, af.data(), 16);
    systolic::io::write_npy(path("bf.npy").string(), "<f4", 2, 2, bf.data(), 16);
    for (const char* dtype : {"fp32", "bf16"}) {
        r = run(std::string("--dtype ") + dtype + " --a " + path("af.npy").string() + " --b " +
                path("bf.npy").string() + " --c-out " + path("cf.npy").string());
        ASSERT_EQ(r.status, 0) << r.err;
        const auto cf =
            systolic::io::as_vector<float>(systolic::io::read_matrix(path("cf.npy").string(), "<f4", "f"));
        EXPECT_EQ(cf, (std::vector<float>{-1.0f, 3.125f, -6.0f, 7.5f})) << dtype;
    }
    // An int32 file is the wrong dtype for int8 and fp32.
    write_i32("a32.npy", 2, 2, {1, 2, 3, 4});
    expect_usage_error("--dtype int8 --a " + path("a32.npy").string() + " --b " + path("a32.npy").string(),
                       "a32.npy");
    expect_usage_error("--dtype fp32 --a " + path("a32.npy").string() + " --b " + path("a32.npy").string(),
                       "a32.npy");
}

TEST_F(SystolicTb, OverflowIsCountedInTheReport) {
    write_i32("a.npy", 1, 3, {2147483647, 2147483647, 2147483647});
    write_i32("b.npy", 3, 1, {2147483647, 2147483647, 2147483647});
    const std::string files = " --array 1 --a " + path("a.npy").string() + " --b " + path("b.npy").string();
    auto r = run("--overflow saturate --json -" + files);
    ASSERT_EQ(r.status, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["overflow"]["mode"], "saturate");
    EXPECT_EQ(j["overflow"]["saturations"], 1);
    EXPECT_EQ(j["overflow"]["wraps"], 0);
    r = run("--json -" + files);
    ASSERT_EQ(r.status, 0) << r.err;
    j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["overflow"]["wraps"], 1);
}

// Each planted defect: exit status 1 and the specific message; without it the same run passes.
TEST_F(SystolicTb, InjectedFaultsAreCaught) {
    struct expectation {
        const char* args;
        const char* message;
    };
    for (const auto& e : {
             expectation{"--k-tile 2 --inject clear-between-k", "C(0,0) expected 7, got 6"},
             expectation{"--inject invalid-padding", "pe_0_1 consumed 0 of 3 terms"},
             expectation{"--inject no-mask", "write outside C at 0x"},
             expectation{"--inject global-skew", "watchdog: tile 1 at origin (0,2)"},
             expectation{"--inject skip-advance", "pe_1_1 consumed 2 of 3 terms"},
         }) {
        const auto r = run(e.args);
        EXPECT_EQ(r.status, 1) << e.args;
        EXPECT_NE(r.out.find(e.message), std::string::npos) << e.args << "\n" << r.out;
        EXPECT_NE(r.out.find("FAIL"), std::string::npos);
    }
    EXPECT_EQ(run("--k-tile 2").status, 0);
    EXPECT_EQ(run("--inject none").status, 0);
}

TEST_F(SystolicTb, BadKSplitFormatQuantizeAndFaultOptions) {
    expect_usage_error("--k-tile 0", "--k-tile must be positive");
    expect_usage_error("--k-policy sideways", "sideways");
    expect_usage_error("--dtype int4", "int4");
    expect_usage_error("--scale 0.5", "--scale needs --out-dtype int8");
    expect_usage_error("--out-dtype int8 --scale 0", "--scale must be a positive finite number");
    expect_usage_error("--out-dtype int8 --zero-point 300", "--zero-point must be in [-128, 127]");
    expect_usage_error("--out-dtype int8 --quantize-partials",
                       "--quantize-partials needs --k-policy partials");
    expect_usage_error("--out-dtype int16", "--out-dtype must be int8 or acc");
    expect_usage_error("--dtype fp32 --overflow saturate", "--overflow needs --dtype int8 or int32");
    expect_usage_error("--inject nothing", "nothing");
    expect_usage_error("--inject clear-between-k", "needs --k-policy preserve and a --k-tile shorter than K");
    expect_usage_error("--k-tile 2 --k-policy partials --inject clear-between-k",
                       "needs --k-policy preserve");
}

}  // namespace

namespace {

// The engines, honest counters and the extra-advance fault from the command line.
TEST_F(SystolicTb, FunctionalEngineGivesTheSameCAndSaysItsCountsAreModelled) {
    const auto cyc = run("--array 3 --m 7 --k 9 --p 5 --dtype fp32 --k-tile 4 --json -");
    const auto fun = run("--array 3 --m 7 --k 9 --p 5 --dtype fp32 --k-tile 4 --json - --engine functional");
    ASSERT_EQ(cyc.status, 0) << cyc.err;
    ASSERT_EQ(fun.status, 0) << fun.err;
    const auto jc = nlohmann::json::parse(cyc.out), jf = nlohmann::json::parse(fun.out);
    EXPECT_EQ(jc["engine"], "cycle");
    EXPECT_EQ(jc["counts"], "stepped");
    EXPECT_EQ(jf["engine"], "functional");
    EXPECT_EQ(jf["counts"], "modelled");
    for (const char* key :
         {"advance_edges", "advance_edges_per_tile", "macs_padded", "macs_real", "masked_outputs"})
        EXPECT_EQ(jc[key], jf[key]) << key;
    EXPECT_NE(fun.err.find("(modelled by the functional engine)"), std::string::npos) << fun.err;
    // Same C: compare the saved arrays byte for byte.
    EXPECT_EQ(
        run("--array 3 --m 7 --k 9 --p 5 --dtype fp32 --k-tile 4 --c-out " + path("c1.npy").string()).status,
        0);
    EXPECT_EQ(run("--array 3 --m 7 --k 9 --p 5 --dtype fp32 --k-tile 4 --engine functional --c-out " +
                  path("c2.npy").string())
                  .status,
              0);
    EXPECT_EQ(slurp(path("c1.npy")), slurp(path("c2.npy")));
}

TEST_F(SystolicTb, ExtraAdvanceIsCaughtByTheEdgeCount) {
    const auto r = run("--inject extra-advance");
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("advance edges: expected 20 (4 tiles x 5), counted 24"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("advance edges: 6 per tile, 24 in total"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("FAIL"), std::string::npos);
}

TEST_F(SystolicTb, SummaryCountsWhatRanAndAFailedJobHasNoUtilization) {
    // skip-advance stops the first tile at the watchdog after 4 edges: that is all that ran.
    const auto r = run("--inject skip-advance --json " + path("r.json").string());
    EXPECT_EQ(r.status, 1);
    EXPECT_NE(r.out.find("advance edges: 4 per tile, 4 in total"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("utilization"), std::string::npos) << r.out;
    const auto j = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_TRUE(j["utilization"].is_null());
    EXPECT_EQ(j["advance_edges_per_tile"], 4);
    const auto ok = run("--json -");
    EXPECT_EQ(nlohmann::json::parse(ok.out)["advance_edges_per_tile"], 5);
}

TEST_F(SystolicTb, StepChangingFaultsNeedTheCycleEngine) {
    expect_usage_error("--engine functional --inject global-skew", "needs --engine cycle");
    expect_usage_error("--engine functional --inject extra-advance", "needs --engine cycle");
    expect_usage_error("--engine warp", "warp");
    EXPECT_EQ(run("--engine functional --inject no-mask").status, 1);
}

// The line of the summary that starts with `head`, without its newline.
std::string line_of(const std::string& text, const std::string& head) {
    const auto at = text.find("\n" + head);
    if (at == std::string::npos) return "";
    const auto end = text.find('\n', at + 1);
    return text.substr(at + 1, end - at - 1);
}

// Every time on the summary's line is in its own unit with three significant digits.
TEST_F(SystolicTb, SummaryTimesHaveThreeDigitsInTheirOwnUnit) {
    EXPECT_EQ(line_of(run("").out, "simulated time:"),
              "simulated time: 264 ns (clear 4.00 ns, load 180 ns, advance 20.0 ns, drain 60.0 ns)");
    const std::string line =
        line_of(run("--array 16 --m 200 --k 300 --p 100 --engine functional").out, "simulated time:");
    const std::regex time(R"(([0-9.]+) (ps|ns|us|ms|s)\b)");
    int times = 0;
    std::set<std::string> units;
    for (auto it = std::sregex_iterator(line.begin(), line.end(), time); it != std::sregex_iterator(); ++it) {
        ++times;
        const std::string number = (*it)[1];
        units.insert((*it)[2]);
        std::string digits;
        for (const char c : number)
            if (c != '.') digits += c;
        digits.erase(0, digits.find_first_not_of('0'));
        EXPECT_EQ(digits.size(), 3u) << number << " in " << line;
        EXPECT_LT(std::stod(number), 1000) << number << " in " << line;
    }
    EXPECT_EQ(times, 5) << line;
    EXPECT_GT(units.size(), 1u) << line;  // the job's phases span units: each value has its own
}

// C is printed up to 64 elements; a larger C is named with its shape and where it can be written.
TEST_F(SystolicTb, LargeCIsNotPrintedButSaysWhereItGoes) {
    const auto small = run("--m 8 --k 2 --p 8");
    EXPECT_EQ(small.status, 0) << small.err;
    const std::string c = line_of(small.out, "C=[[");
    const std::regex element("-?[0-9]+");
    EXPECT_EQ(std::distance(std::sregex_iterator(c.begin(), c.end(), element), std::sregex_iterator()), 64)
        << small.out;
    const auto large = run("--m 8 --k 2 --p 9");
    EXPECT_EQ(large.status, 0) << large.err;
    EXPECT_EQ(large.out.find("C=["), std::string::npos) << large.out;
    EXPECT_EQ(line_of(large.out, "C:"), "C: 8x9, not printed (over 64 elements); write it with --c-out FILE");
    const auto saved = run("--m 8 --k 2 --p 9 --c-out " + path("c.npy").string());
    EXPECT_EQ(line_of(saved.out, "C:"),
              "C: 8x9, not printed (over 64 elements); --c-out " + path("c.npy").string() + " holds it");
    EXPECT_TRUE(fs::exists(path("c.npy")));
}

// A mistyped option is named with the option it was probably meant to be.
TEST_F(SystolicTb, UnknownOptionSuggestsTheNearestOne) {
    auto r = run("--arry 8");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-tb: error: unknown option --arry; did you mean --array?\n");
    EXPECT_EQ(r.out, "");
    r = run("--m 4 --k 4 --p 4 --k-tiel=2");
    EXPECT_EQ(r.err, "systolic-tb: error: unknown option --k-tiel; did you mean --k-tile?\n");
    r = run("--zzzz");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-tb: error: unknown option --zzzz (see --help)\n");
    r = run("8");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-tb: error: unexpected argument '8' (options start with --; see --help)\n");
}

// Options that would change nothing are refused with what they need and why; with it they run.
TEST_F(SystolicTb, OptionsThatChangeNothingAreRefusedWithTheReason) {
    const std::pair<const char*, const char*> refused[] = {
        {"--vcd-pes all", "--vcd-pes needs --vcd: "},
        {"--threads 4", "--threads needs --fabric with more than one array: "},
        {"--fabric 1x1 --threads 2", "--threads needs --fabric with more than one array: "},
        {"--link-latency 3", "--link-latency needs --fabric with more than one array: "},
        {"--k-policy partials", "--k-policy needs --k-tile: "},
        {"--k-policy preserve", "--k-policy needs --k-tile: "},
        {"--k-tile 2 --out-dtype int8 --quantize-partials",
         "--quantize-partials needs --k-policy partials: "},
        {"--k-tile 2 --k-policy partials --quantize-partials",
         "--quantize-partials needs --out-dtype int8: "},
        {"--zero-point 3", "--zero-point needs --out-dtype int8: "},
        {"--rounding toward-zero", "--rounding needs --out-dtype int8: "},
        {"--dtype bf16 --overflow wrap", "--overflow needs --dtype int8 or int32: "},
        {"--seed 7", "--seed needs random data (--m --k --p) or --order random: "},
        {"--a-sram 64k", "--a-sram needs --buffers double: "},
        {"--buffers none --b-sram 1M", "--b-sram needs --buffers double: "},
        {"--c-sram inf", "--c-sram needs --buffers double: "},
    };
    for (const auto& [args, says] : refused) {
        SCOPED_TRACE(args);
        expect_usage_error(args, std::string("systolic-tb: error: ") + says);
    }
    for (const char* args :
         {"--array 2 --fabric 2x1 --threads 2 --link-latency 3", "--k-tile 2 --k-policy partials",
          "--m 3 --k 3 --p 3 --seed 7", "--order random --seed 7", "--overflow saturate",
          "--dtype int8 --m 2 --k 2 --p 2 --overflow wrap",
          "--k-tile 2 --k-policy partials --out-dtype int8 --scale 0.5 --zero-point 1 "
          "--rounding toward-zero --quantize-partials",
          "--buffers double --a-sram 64k --b-sram 1M --c-sram inf"}) {
        SCOPED_TRACE(args);
        const auto r = run(args);
        EXPECT_EQ(r.status, 0) << r.err;
    }
}

// The rules --help lists (from the one table the check uses) are docs/options.md's table, row by row.
TEST_F(SystolicTb, DocsListTheOptionRules) {
    systolic::tb::testing::expect_rules_documented(run("--help").out, "systolic-tb");
}

}  // namespace

namespace {

using nlohmann::json;

// The memory system from the command line: the configuration in the report as given, null for
// "inf"; what it counted in the summary and the report alike; the same C in every mode.
TEST_F(SystolicTb, MemorySystemOptionsReachTheJobAndItsReport) {
    const std::string shape = "--array 4 --m 10 --k 12 --p 9 --seed 4";
    const auto plain = run(shape + " --json -");
    ASSERT_EQ(plain.status, 0) << plain.err;
    const auto p = json::parse(plain.out);
    EXPECT_EQ(p.at("memory").at("buffers"), "none");
    EXPECT_TRUE(p.at("memory").at("a_sram").is_null());
    EXPECT_TRUE(p.at("memory").at("dram_bandwidth").is_null());
    EXPECT_EQ(p.at("memory").at("stall_cycles"), 0);
    EXPECT_EQ(p.at("phase_time_ns").at("stall"), 0.0);
    // Without a memory system the summary is as it always was.
    EXPECT_EQ(plain.err.find("memory:"), std::string::npos);
    EXPECT_EQ(run(shape).out.find("stalls:"), std::string::npos);

    const std::string buffered =
        shape + " --buffers double --a-sram 64k --b-sram 1M --c-sram inf --dram-bandwidth 2.5";
    const auto r = run(buffered + " --json r.json --c-out c.npy");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = json::parse(slurp(path("r.json")));
    const auto& m = j.at("memory");
    EXPECT_EQ(m.at("buffers"), "double");
    EXPECT_EQ(m.at("a_sram"), 65536);
    EXPECT_EQ(m.at("b_sram"), 1048576);
    EXPECT_TRUE(m.at("c_sram").is_null());
    EXPECT_EQ(m.at("dram_bandwidth"), 2.5);
    EXPECT_TRUE(j.at("pass").get<bool>());
    EXPECT_EQ(j.at("advance_edges"), p.at("advance_edges"));  // the plan's edges do not change
    EXPECT_GT(m.at("stall_cycles").get<std::uint64_t>(), 0u);
    EXPECT_DOUBLE_EQ(j.at("phase_time_ns").at("stall").get<double>(), m.at("stall_cycles").get<double>());
    for (const char* key : {"prefetch_cycles", "total_cycles", "average_bandwidth", "peak_bandwidth",
                            "zero_stall_bandwidth", "streamed_tiles", "stream_k_chunk"})
        EXPECT_TRUE(m.contains(key)) << key;
    for (const char* stream : {"a", "b", "c"}) {
        EXPECT_GT(m.at("bytes").at(stream).at("dram").get<std::uint64_t>(), 0u) << stream;
        EXPECT_GT(m.at("bytes").at(stream).at("array").get<std::uint64_t>(), 0u) << stream;
    }
    // The summary says the same figures.
    EXPECT_EQ(line_of(r.out, "memory:"),
              "memory: buffers double (A 64 KiB, B 1.0 MiB, C inf), DRAM bandwidth 2.5 bytes/cycle");
    EXPECT_EQ(line_of(r.out, "stalls:"),
              "stalls: " + std::to_string(m.at("stall_cycles").get<std::uint64_t>()) + " cycles (prefetch " +
                  std::to_string(m.at("prefetch_cycles").get<std::uint64_t>()) + " cycles, total " +
                  std::to_string(m.at("total_cycles").get<std::uint64_t>()) + " cycles)");
    EXPECT_NE(line_of(r.out, "simulated time:").find(", stall "), std::string::npos);
    EXPECT_NE(line_of(r.out, "bytes DRAM<->scratchpad:")
                  .find("A " + std::to_string(m.at("bytes").at("a").at("dram").get<std::uint64_t>()) + ","),
              std::string::npos);
    // The same C as without scratchpads (the scoreboard checked every value against the reference).
    const auto none = run(shape + " --c-out c0.npy");
    ASSERT_EQ(none.status, 0) << none.err;
    EXPECT_EQ(slurp(path("c.npy")), slurp(path("c0.npy")));
    // Both engines count the same stalls and bytes.
    const auto f = run(buffered + " --engine functional --json -");
    ASSERT_EQ(f.status, 0) << f.err;
    EXPECT_EQ(json::parse(f.out).at("memory"), m);
}

// Scratchpads too small for a tile's operands: the tiles are streamed in K chunks, the report and
// the summary say so, and every value is still right.
TEST_F(SystolicTb, SmallScratchpadsStreamTheTilesAndSaySo) {
    const auto r =
        run("--array 4 --m 8 --k 64 --p 8 --buffers double --a-sram 256 --b-sram 256 --json r.json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto m = json::parse(slurp(path("r.json"))).at("memory");
    EXPECT_EQ(m.at("a_sram"), 256);
    EXPECT_TRUE(m.at("a_sram").is_number_integer());
    EXPECT_EQ(m.at("streamed_tiles"), 4);
    const std::uint64_t chunk = m.at("stream_k_chunk");
    EXPECT_GT(chunk, 0u);
    EXPECT_LT(chunk, 64u);
    EXPECT_EQ(
        line_of(r.out, "streamed tiles:"),
        "streamed tiles: 4 (operands over the scratchpads, in K chunks of " + std::to_string(chunk) + ")");
    EXPECT_NE(r.out.find("\nPASS\n"), std::string::npos);
    // Roomy scratchpads stream nothing, and the summary has no such line.
    const auto roomy = run("--array 4 --m 8 --k 64 --p 8 --buffers double");
    EXPECT_EQ(line_of(roomy.out, "streamed tiles:"), "");
}

TEST_F(SystolicTb, BadMemorySystemOptions) {
    expect_usage_error("--buffers triple", "triple");
    expect_usage_error("--buffers double --a-sram 12q", "--a-sram '12q' is not a size");
    expect_usage_error("--buffers double --b-sram 0", "--b-sram '0' must be at least one byte");
    expect_usage_error("--dram-bandwidth 0",
                       "--dram-bandwidth '0' must be a positive number of bytes per "
                       "clock cycle, or inf");
    expect_usage_error("--dram-bandwidth -3", "must be a positive number");
    expect_usage_error("--dram-bandwidth fast", "--dram-bandwidth 'fast' is not a number");
    expect_usage_error("--dram-bandwidth 1e999", "out of the range of a double");
    // Below the least bandwidth the model simulates (docs/options.md): 1e-19 once wrapped each
    // transfer's cycle count to 0 (no stalls), 1e-9 ran for hours, 1e-15 with buffers none ended
    // in SystemC's time overflow (E544). One line, exit 2, for every value below it.
    for (const char* tiny : {"1e-9", "1e-19", "1e-300", "4.9e-324"})
        expect_usage_error(std::string("--dram-bandwidth ") + tiny,
                           std::string("systolic-tb: error: --dram-bandwidth '") + tiny +
                               "' is below 0.001 bytes per clock cycle, the least the model simulates");
    expect_usage_error("--buffers none --dram-bandwidth 1e-15", "the least the model simulates");
    expect_usage_error("--buffers double --dram-bandwidth 0.000999", "the least the model simulates");
    expect_usage_error("--array 4 --fabric 2x1 --buffers double", "need one array (no --fabric)");
    // A C scratchpad smaller than one tile's outputs: refused by the model's own check, before the run.
    expect_usage_error("--buffers double --c-sram 8",
                       "systolic-tb: error: the C scratchpad (8 bytes) is smaller than one tile's outputs");
    // inf is every size's default, and bandwidth inf with buffers none is today's model.
    const auto r = run("--dram-bandwidth inf");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(line_of(r.out, "simulated time:"),
              "simulated time: 264 ns (clear 4.00 ns, load 180 ns, advance 20.0 ns, drain 60.0 ns)");
    // The least bandwidth itself runs, exactly: each of the 216 bytes of A, B and C takes 1000
    // cycles on the channel, after the 264 cycles of the job without a limit (buffers none).
    const auto slow = run("--dram-bandwidth 1e-3");
    ASSERT_EQ(slow.status, 0) << slow.err;
    EXPECT_EQ(line_of(slow.out, "stalls:"), "stalls: 0 cycles (prefetch 48050 cycles, total 216264 cycles)");
    EXPECT_NE(slow.out.find("\nPASS\n"), std::string::npos) << slow.out;
}

}  // namespace

// ---- Per-column scales: --scale-file, --zero-point-file

namespace {

// A 1-D .npy of `n` elements of `descr` (numpy.save's version 1.0 layout), which write_npy (2-D
// only) does not make.
void write_vector_npy(const fs::path& p, const std::string& descr, std::uint64_t n, const void* data,
                      std::size_t bytes) {
    std::string dict =
        "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
    const std::size_t total = (10 + dict.size() + 1 + 63) / 64 * 64;
    dict.append(total - 10 - dict.size() - 1, ' ');
    dict += '\n';
    std::ofstream f(p, std::ios::binary);
    f.write("\x93NUMPY\x01\x00", 8);
    const std::uint16_t len = static_cast<std::uint16_t>(dict.size());
    f.write(reinterpret_cast<const char*>(&len), 2);
    f << dict;
    f.write(static_cast<const char*>(data), static_cast<std::streamsize>(bytes));
}

template <class T>
void write_vector(const fs::path& p, const std::string& descr, const std::vector<T>& v) {
    write_vector_npy(p, descr, v.size(), v.data(), v.size() * sizeof(T));
}

}  // namespace

// The seeds' example, C = [[7,2,5],[16,5,14],[25,8,23]], with scales 1, 1/2, 1/4 and zero points
// 0, 1, -1, worked out by hand (nearest even: 2.5 -> 2, 1.25 -> 1, 3.5 -> 4, 5.75 -> 6), on both
// engines and all three dataflows, the scoreboard checking every code.
TEST_F(SystolicTb, ScaleAndZeroPointFilesPerColumn) {
    write_vector(path("s8.npy"), "<f8", std::vector<double>{1, 0.5, 0.25});
    write_vector(path("s4.npy"), "<f4", std::vector<float>{1, 0.5, 0.25});
    write_vector(path("z4.npy"), "<i4", std::vector<std::int32_t>{0, 1, -1});
    write_vector(path("z8.npy"), "<i8", std::vector<std::int64_t>{0, 1, -1});
    for (const char* how :
         {"", " --engine functional", " --dataflow ws", " --dataflow is --engine functional"}) {
        SCOPED_TRACE(how);
        auto r =
            run(std::string("--out-dtype int8 --scale-file ") + p("s8.npy") + how + " --json " + p("r.json"));
        ASSERT_EQ(r.status, 0) << r.err << r.out;
        EXPECT_NE(r.out.find("C=[[7,1,1],[16,2,4],[25,4,6]]"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("int8 output: scale per column, zero point 0,"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("scoreboard: 9 checked, 0 mismatches"), std::string::npos) << r.out;
        auto j = nlohmann::json::parse(slurp(path("r.json")));
        EXPECT_EQ(j["output"]["scale"], "per_column");
        EXPECT_EQ(j["output"]["zero_point"], 0);
        r = run(std::string("--out-dtype int8 --scale-file ") + p("s4.npy") + " --zero-point-file " +
                p("z8.npy") + how + " --c-out " + p("c.npy") + " --json " + p("r.json"));
        ASSERT_EQ(r.status, 0) << r.err << r.out;
        EXPECT_NE(r.out.find("C=[[7,2,0],[16,3,3],[25,5,5]]"), std::string::npos) << r.out;
        j = nlohmann::json::parse(slurp(path("r.json")));
        EXPECT_EQ(j["output"]["zero_point"], "per_column");
        const auto c = systolic::io::read_matrix(p("c.npy"), "|i1", "int8");
        EXPECT_EQ(systolic::io::as_vector<std::int8_t>(c),
                  (std::vector<std::int8_t>{7, 2, 0, 16, 3, 3, 25, 5, 5}));
    }
    // Zero points per column with the tensor's --scale for every column: 14 x 0.5 = 7, minus 1.
    const auto r = run(std::string("--out-dtype int8 --scale 0.5 --zero-point-file ") + p("z4.npy"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("C=[[4,2,1],[8,3,6],[12,5,11]]"), std::string::npos) << r.out;
}

TEST_F(SystolicTb, BadScaleAndZeroPointFiles) {
    write_vector(path("s.npy"), "<f8", std::vector<double>{1, 0.5, 0.25});
    write_vector(path("short.npy"), "<f8", std::vector<double>{1, 0.5});
    write_vector(path("si.npy"), "<i4", std::vector<std::int32_t>{1, 2, 3});
    write_vector(path("nan.npy"), "<f8", std::vector<double>{1, std::nan(""), 1});
    write_vector(path("inf.npy"), "<f4", std::vector<float>{1, 1, INFINITY});
    write_vector(path("zero.npy"), "<f8", std::vector<double>{1, 0, 1});
    write_vector(path("neg.npy"), "<f8", std::vector<double>{-1, 1, 1});
    write_vector(path("z.npy"), "<i4", std::vector<std::int32_t>{0, 1, -1});
    write_vector(path("zf.npy"), "<f8", std::vector<double>{0, 1, -1});
    write_vector(path("zbig.npy"), "<i8", std::vector<std::int64_t>{0, 200, -1});
    write_vector(path("zlong.npy"), "<i4", std::vector<std::int32_t>{0, 1, -1, 2});
    const std::vector<std::int32_t> m2 = {1, 2, 3, 4, 5, 6};
    write_i32("s2d.npy", 2, 3, m2);
    const std::string i8 = "--out-dtype int8 ";
    expect_usage_error("--scale-file " + p("s.npy"), "--scale-file needs --out-dtype int8");
    expect_usage_error("--zero-point-file " + p("z.npy"), "--zero-point-file needs --out-dtype int8");
    expect_usage_error(i8 + "--scale-file " + p("s.npy") + " --scale 2",
                       "--scale-file and --scale exclude each other");
    expect_usage_error(i8 + "--zero-point-file " + p("z.npy") + " --zero-point 2",
                       "--zero-point-file and --zero-point exclude each other");
    expect_usage_error(
        i8 + "--scale-file " + p("s.npy") + " --k-tile 2 --k-policy partials --quantize-partials",
        "--quantize-partials takes one scale and zero point");
    expect_usage_error(i8 + "--scale-file " + p("short.npy"), "has shape (2) but C has P = 3 columns");
    expect_usage_error(i8 + "--scale-file " + p("s2d.npy"),
                       "dtype '<i4' is not supported, expected float64 or float32");
    expect_usage_error(i8 + "--scale-file " + p("si.npy"),
                       "dtype '<i4' is not supported, expected float64 or float32");
    expect_usage_error(i8 + "--scale-file " + p("nan.npy"), "scale 1 is nan, not a positive finite number");
    expect_usage_error(i8 + "--scale-file " + p("inf.npy"), "scale 2 is inf, not a positive finite number");
    expect_usage_error(i8 + "--scale-file " + p("zero.npy"), "scale 1 is 0, not a positive finite number");
    expect_usage_error(i8 + "--scale-file " + p("neg.npy"), "scale 0 is -1, not a positive finite number");
    expect_usage_error(i8 + "--zero-point-file " + p("zf.npy"),
                       "dtype '<f8' is not supported, expected int32 or int64");
    expect_usage_error(i8 + "--zero-point-file " + p("zbig.npy"), "zero point 1 is 200, not in [-128, 127]");
    expect_usage_error(i8 + "--zero-point-file " + p("zlong.npy"), "has shape (4) but C has P = 3 columns");
    expect_usage_error(i8 + "--scale-file " + p("missing.npy"), "--scale-file");
    // A 2-D file of the right dtype is refused by its shape.
    std::vector<double> s2(6, 1.0);
    systolic::io::write_npy(p("s2f.npy"), "<f8", 2, 3, s2.data(), 48);
    expect_usage_error(i8 + "--scale-file " + p("s2f.npy"), "has shape (2x3) but C has P = 3 columns");
}
