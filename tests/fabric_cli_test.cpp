// systolic-tb --fabric as a user runs it: the seed's 15^3 case with its summary and report, a
// waveform with the fabric's hierarchy and a strobe per link, the same report on two threads, and
// the forms it refuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <string>

#include "cli_harness.h"
#include "vcd_reader.h"

namespace {

using namespace systolic::tb::testing;
using systolic::tb::testing::slurp;

class FabricCli : public cli_fixture {};

TEST_F(FabricCli, SeedCaseReportsItsHalosAndReuse) {
    const auto r = run("--array 5 --fabric 3x3x3 --m 15 --k 15 --p 15 --json " + p("r.json"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("on a 3x3x3 fabric of 5x5 arrays"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("halo words A 450, B 450, C 450"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("A read 900 bytes, B read 900 (one 5x5 array: 2700 and 2700)"), std::string::npos)
        << r.out;
    const auto j = nlohmann::json::parse(slurp(path("r.json")));
    EXPECT_EQ(j["advance_edges"], 43);
    const auto& f = j["fabric"];
    EXPECT_EQ(f["shape"], "3x3x3");
    EXPECT_EQ(f["passes"], 1);
    EXPECT_EQ(f["halo_words"]["a"], 450);
    EXPECT_EQ(f["halo_words"]["c"], 450);
    EXPECT_EQ(f["links"].size(), 3u * 2u * 3u + 2u * 3u * 3u + 3u * 3u * 3u);  // A, B, C (with the wrap)
    EXPECT_EQ(f["memory_bytes"]["a_read"], 900);
    EXPECT_EQ(f["single_array_memory_bytes"]["a_read"], 2700);
    // One array: no fabric object, the traffic all the same.
    const auto one = run("--array 5 --m 15 --k 15 --p 15 --json " + p("one.json"));
    ASSERT_EQ(one.status, 0) << one.err;
    const auto o = nlohmann::json::parse(slurp(path("one.json")));
    EXPECT_TRUE(o["fabric"].is_null());
    EXPECT_EQ(o["memory_bytes"]["a_read"], f["single_array_memory_bytes"]["a_read"]);
    EXPECT_EQ(o["memory_bytes"]["b_read"], f["single_array_memory_bytes"]["b_read"]);
}

TEST_F(FabricCli, WaveformHasTheFabricsHierarchyAndLinkStrobes) {
    const auto r = run("--array 2 --fabric 2x2x2 --m 4 --k 4 --p 4 --vcd " + p("w.vcd"));
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const auto v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_TRUE(v.has("tb.fabric.array_0_0_0.row_0.pe_0_0.acc"));
    EXPECT_TRUE(v.has("tb.fabric.array_1_1_1.row_1.pe_1_1.terms"));
    const auto advances = v.rises("tb.controller.advance");
    // One pass: kc + (2N - 1) + (2N - 1) = 4 + 3 + 3 edges.
    EXPECT_EQ(advances.size(), 10u);
    // A east from array_0_0_0 carries K block 0 (2 terms of 2 rows): its tokens leave on two or more
    // edges; the wrap link 1 -> 0 carries nothing in one pass.
    EXPECT_GE(v.rises("tb.fabric.link_a_0_0_0_to_0_1_0").size(), 2u);
    EXPECT_GE(v.rises("tb.fabric.link_c_0_0_0_to_0_0_1").size(), 1u);
    EXPECT_EQ(v.rises("tb.fabric.link_c_0_0_1_to_0_0_0").size(), 0u);
    for (const auto t : v.rises("tb.fabric.link_b_0_1_1_to_1_1_1"))  // strobes rise with an edge
        EXPECT_NE(std::find(advances.begin(), advances.end(), t), advances.end()) << t;
}

TEST_F(FabricCli, TwoThreadsWriteTheSameReport) {
    const std::string job =
        "--array 3 --fabric 2x2x2 --m 11 --k 17 --p 9 --k-tile 7 --dtype fp32 --link-latency 2";
    ASSERT_EQ(run(job + " --json " + p("t1.json")).status, 0);
    ASSERT_EQ(run(job + " --threads 2 --json " + p("t2.json")).status, 0);
    auto a = nlohmann::json::parse(slurp(path("t1.json")));
    auto b = nlohmann::json::parse(slurp(path("t2.json")));
    EXPECT_EQ(b["fabric"]["threads"], 2);
    a["fabric"].erase("threads");
    b["fabric"].erase("threads");
    a.erase("memory_estimate_bytes");
    b.erase("memory_estimate_bytes");
    EXPECT_EQ(a, b);
}

TEST_F(FabricCli, RefusesWhatItCannotRun) {
    expect_refused(run("--fabric 2x"), "--fabric wants RxC or RxCxD");
    expect_refused(run("--fabric 0x2"), "--fabric wants RxC or RxCxD");
    expect_refused(run("--fabric 2x2x2x2"), "--fabric wants RxC or RxCxD");
    expect_refused(run("--fabric 2x2 --engine functional"), "--fabric needs --engine cycle");
    expect_refused(run("--fabric 2x2 --array 3x4"), "--fabric needs square arrays");
    expect_refused(run("--fabric 2x2 --link-latency 0"), "--link-latency");
    expect_refused(run("--threads 0"), "--threads");
}

}  // namespace
