// systolic-vp, the example virtual platform: its job-script parser, its default run and shipped
// scripts, its exit statuses, and the agreement of the two: the same jobs through
// systolic-vp (registers, interconnect, platform RAM) and through systolic-tb give identical C and
// counters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <systolic/accelerator_regs.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "cli_harness.h"
#include "cli_values.h"
#include "io/npy.h"
#include "job_script.h"
#include "vcd_reader.h"

namespace {

using systolic::tb::testing::cli_fixture;
using systolic::tb::testing::parse_vcd;
using systolic::tb::testing::slurp;
using systolic::tb::testing::vcd_data;
namespace vp = systolic::vp;

const std::string k_vp = std::string("exec ") + SYSTOLIC_VP;
const std::string k_tb = std::string("exec ") + SYSTOLIC_TB;

TEST(JobScript, ParsesCommandsOptionsAndComments) {
    const auto s = vp::parse_script(
        "# comment\n\njob a dtype=int8 m=3 k=4 p=5  # tail\nwrite CTRL START|IRQ_EN\n"
        "read STATUS == DONE\npoll STATUS BUSY 0 10us\n",
        "t.vps");
    ASSERT_EQ(s.size(), 4u);
    EXPECT_EQ(s[0].line, 3);
    EXPECT_EQ(s[0].verb, vp::verb::job);
    EXPECT_EQ(s[0].args, std::vector<std::string>{"a"});
    EXPECT_EQ(s[0].keys.at("m"), "3");
    EXPECT_EQ(*vp::register_value(SYSTOLIC_REG_CTRL, "START|IRQ_EN"), 5u);
    EXPECT_EQ(*vp::register_value(SYSTOLIC_REG_DTYPE, "BF16"), 3u);
    EXPECT_EQ(*vp::register_value(SYSTOLIC_REG_ERROR, "OVERLAP"), std::uint32_t{SYSTOLIC_ERR_OVERLAP});
    EXPECT_FALSE(vp::register_value(SYSTOLIC_REG_DTYPE, "START"));
    EXPECT_EQ(vp::value_name(SYSTOLIC_REG_ERROR, SYSTOLIC_ERR_DMA), "ERR_DMA");
    EXPECT_EQ(*vp::parse_number("-1", true), ~std::uint64_t{0});
    EXPECT_EQ(*systolic::cli::parse_time("250ns"), 250000u);
    EXPECT_EQ(*systolic::cli::parse_time("18446744s"), 18446744000000000000u);
    EXPECT_FALSE(systolic::cli::parse_time("18446745s"));  // past 2^64 - 1 ps
    EXPECT_FALSE(systolic::cli::parse_time("10"));
    EXPECT_FALSE(systolic::cli::parse_time("-1ns"));
    // The time options of systolic-soc and systolic-qemu: above zero, and a bare number of seconds
    // only where bare_seconds allows it (systolic-qemu's --timeout), within parse_time's range.
    using systolic::cli::parse_positive_time;
    EXPECT_EQ(parse_positive_time("--quantum", "1us", false), 1000000u);
    EXPECT_EQ(parse_positive_time("--timeout", "600", true), 600000000000000u);
    EXPECT_EQ(parse_positive_time("--timeout", "18446744", true), 18446744000000000000u);
    EXPECT_THROW(parse_positive_time("--timeout", "18446745", true),
                 systolic::cli::usage_error);  // not wrapped
    EXPECT_THROW(parse_positive_time("--timeout", "0", true), systolic::cli::usage_error);
    EXPECT_THROW(parse_positive_time("--quantum", "0us", false), systolic::cli::usage_error);
    try {
        parse_positive_time("--timeout", "10", false);
        ADD_FAILURE() << "a bare number was taken without bare_seconds";
    } catch (const systolic::cli::usage_error& e) {
        EXPECT_STREQ(e.what(),
                     "--timeout 10: not a time (a whole number above zero with ps, ns, us, ms or s)");
    }
    EXPECT_FALSE(vp::parse_number("12abc"));
    EXPECT_FALSE(vp::parse_number(" 12"));
    EXPECT_FALSE(vp::parse_number("0x"));
    EXPECT_FALSE(vp::parse_number("-1"));
    EXPECT_EQ(*vp::parse_number("010"), 10u);  // decimal, not octal
    EXPECT_EQ(*vp::parse_number("0xffffffffffffffff"), ~std::uint64_t{0});
    EXPECT_FALSE(vp::parse_number("0x10000000000000000"));
    EXPECT_FALSE(vp::parse_number("18446744073709551616"));
    EXPECT_EQ(*vp::register_value(SYSTOLIC_REG_M, "-1"), 0xffffffffu);
    EXPECT_EQ(*vp::register_value(SYSTOLIC_REG_ZERO_POINT, "-0x80000000"), 0x80000000u);
    EXPECT_FALSE(vp::register_value(SYSTOLIC_REG_M, "0x100000000"));
    EXPECT_FALSE(vp::register_value(SYSTOLIC_REG_M, "3|"));
}

// p = 0 leaves C without a byte, so its address may be anything: nothing of it has to lie in RAM.
TEST(JobScript, AMatrixWithNoBytesNeedsNoPlaceInRam) {
    const vp::ram_window ram;
    const auto s = vp::parse_script("job empty m=8 k=8 p=0 c_addr=1100\n", "t.vps", ram);
    ASSERT_EQ(s.size(), 1u);
    EXPECT_TRUE(s[0].job.expected.ok());
    EXPECT_TRUE(s[0].job.layout.c.range().empty());
    EXPECT_THROW(vp::parse_script("job far m=8 k=8 p=1 c_addr=1100\n", "t.vps", ram), vp::script_error);
}

// The message a script is refused with (as read from bad.vps), or "" when it parses.
std::string refused(const std::string& text) {
    try {
        vp::parse_script(text, "bad.vps");
    } catch (const vp::script_error& e) {
        return std::string(e.what());
    }
    return std::string();
}

TEST(JobScript, RefusesWhatItDoesNotKnowWithTheLine) {
    EXPECT_EQ(refused("\nfrobnicate 1\n"), "bad.vps:2: unknown command 'frobnicate' in 'frobnicate 1'");
    EXPECT_NE(refused("write NOPE 1").find("unknown register 'NOPE'"), std::string::npos);
    EXPECT_NE(refused("write DTYPE INT9").find("bad value"), std::string::npos);
    EXPECT_NE(refused("job a colour=red").find("unknown option 'colour'"), std::string::npos);
    EXPECT_NE(refused("read M 3").find("read REG == VALUE"), std::string::npos);
    EXPECT_NE(refused("delay soon").find("bad time"), std::string::npos);
}

// The keys that reach every run option: dataflow= and the per-column vectors, which the layout
// places after C (8-byte aligned, P float64 scales then P int32 zero points).
TEST(JobScript, ReadsTheDataflowAndThePerColumnVectors) {
    using systolic::dataflow_kind;
    const auto s = vp::parse_script(
        "job ws dtype=int8 m=2 k=3 p=3 dataflow=ws out=int8 scales=0.5,0.25,1 zero_points=-1,0,7\n"
        "job zp m=2 k=3 p=2 out=int8 scale=0.125 zero_points=1,2\n"
        "job plain m=2 k=3 p=2\n",
        "t.vps");
    ASSERT_EQ(s.size(), 3u);
    const vp::job_spec& ws = s[0].job;
    EXPECT_EQ(ws.run.dataflow, dataflow_kind::ws);
    EXPECT_TRUE(ws.run.quant.enabled);
    EXPECT_EQ(ws.scales, (std::vector<double>{0.5, 0.25, 1}));
    EXPECT_EQ(ws.zero_points, (std::vector<std::int32_t>{-1, 0, 7}));
    ASSERT_TRUE(ws.run.quant.columns);
    EXPECT_TRUE(ws.run.quant.columns->zero_points);
    EXPECT_EQ(ws.run.quant.columns->base % 8, 0u);
    EXPECT_GE(ws.run.quant.columns->base, ws.layout.c.range().end);
    // Zero points alone: the tensor's scale for every column.
    EXPECT_EQ(s[1].job.scales, (std::vector<double>{0.125, 0.125}));
    EXPECT_EQ(s[1].job.run.dataflow, dataflow_kind::os);
    EXPECT_FALSE(s[2].job.run.quant.columns);
    EXPECT_TRUE(s[2].job.scales.empty());
}

TEST(JobScript, RefusesBadDataflowsAndVectorsWithTheLine) {
    const std::string job = "job j m=2 k=3 p=3 ";
    EXPECT_NE(refused(job + "dataflow=rs").find("bad dataflow 'rs' (os, ws, is)"), std::string::npos);
    EXPECT_NE(refused(job + "out=int8 scales=0.5,x,1").find("bad scales '0.5,x,1' (P finite floats"),
              std::string::npos);
    EXPECT_NE(refused(job + "out=int8 scales=0.5,,1").find("bad scales"), std::string::npos);
    EXPECT_NE(refused(job + "out=int8 zero_points=1,2,0x80000000").find("bad zero_points"),
              std::string::npos);
    EXPECT_NE(
        refused(job + "out=int8 scales=0.5,1").find("scales has 2 values, one per column of C needs P = 3"),
        std::string::npos);
    EXPECT_NE(refused(job + "out=int8 zero_points=1,2,3,4").find("zero_points has 4 values"),
              std::string::npos);
    EXPECT_NE(refused(job + "scales=1,1,1").find("scales and zero_points need out=int8"), std::string::npos);
    EXPECT_NE(refused(job + "out=int8 scales=1,1,1 scale=2").find("scales and scale exclude each other"),
              std::string::npos);
    EXPECT_NE(refused(job + "out=int8 zero_points=1,1,1 zero_point=2")
                  .find("zero_points and zero_point exclude each other"),
              std::string::npos);
    EXPECT_EQ(refused(job + "out=int8 dataflow=is scales=1,2,3"), "");
}

class VpCli : public cli_fixture {
protected:
    void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
};

TEST_F(VpCli, TheDefaultRunPasses) {
    const auto r = run_tool(k_vp, "--json report.json");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("job seed: C = A*B with M=3 K=3 P=3 on a 2x2 array"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("C=[[7,2,5],[16,5,14],[25,8,23]]"), std::string::npos);
    // systolic_start() clears IRQ_STATUS, then writes CTRL: a register latency (1 ns) before the job's 264
    // ns.
    EXPECT_NE(r.out.find("cycles: 264 (interrupt 265 ns after systolic_start())"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("expected ERR_OVERLAP, got ERR_OVERLAP; memory untouched"), std::string::npos);
    EXPECT_NE(r.out.find("systolic-vp: 7 jobs (1 expected to fail), 7 checks, 0 failures, simulated time "
                         "61.5 us,"),
              std::string::npos)
        << r.out;  // 61463 ns, in the unit that suits it with three digits, as systolic-tb prints times
    EXPECT_NE(r.out.find("(interrupt 14.3 us after systolic_start())"), std::string::npos) << r.out;
    const auto j = nlohmann::json::parse(slurp(path("report.json")));
    EXPECT_TRUE(j.at("pass").get<bool>());
    ASSERT_EQ(j.at("jobs").size(), 7u);
    std::set<std::string> dtypes;
    for (const auto& job : j.at("jobs"))
        dtypes.insert(job.at("dtype").get<std::string>());
    EXPECT_EQ(dtypes, (std::set<std::string>{"int8", "int32", "fp32", "bf16"}));
    // Each job that ran carries its scoreboard's counts as systolic-tb's report does; the refused
    // one, which wrote nothing to check, has none.
    std::size_t scored = 0;
    for (const auto& job : j.at("jobs")) {
        if (job.at("expected") != "ok") {
            EXPECT_FALSE(job.contains("scoreboard")) << job.dump();
            continue;
        }
        ++scored;
        const auto& sb = job.at("scoreboard");
        EXPECT_EQ(sb.at("checked"), job.at("m").get<std::uint64_t>() * job.at("p").get<std::uint64_t>())
            << job.dump();
        EXPECT_EQ(sb.at("mismatches"), 0);
        EXPECT_GT(sb.at("writes").get<std::uint64_t>(), 0u);
        EXPECT_EQ(sb.at("protocol_violations"), 0);
        EXPECT_TRUE(sb.at("untouched_ok").get<bool>());
    }
    EXPECT_EQ(scored, 6u);
    EXPECT_NE(r.out.find(" bus transactions checked, 0 protocol violations\nPASS"), std::string::npos)
        << r.out;
    EXPECT_EQ(r.err, "");
}

// --vcd FILE writes FILE, as in every executable: no extension is added (systolic-vp wrote
// FILE.vcd before the option group was shared).
TEST_F(VpCli, TheWaveformGoesToTheFileNamed) {
    std::filesystem::create_directory(path("out"));
    const auto r = run_tool(k_vp, "--vcd out/x.vcd --trace out/t.json");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_TRUE(std::filesystem::is_regular_file(path("out/x.vcd")));
    EXPECT_FALSE(std::filesystem::exists(path("out/x.vcd.vcd")));
    EXPECT_TRUE(std::filesystem::is_regular_file(path("out/t.json")));
    EXPECT_NE(slurp(path("out/x.vcd")).find("$version\n    systolic-vp\n$end"), std::string::npos);
}

// --vcd and --trace show the accelerator's work, not only the interrupt line: read back by GTKWave's
// own vcd2fst and fst2vcd, each format's controller pulses once per advance edge the jobs of that
// format counted in their registers, goes through every phase and ends idle; its PEs are there and
// change; the interrupt rises once per job started with the interrupt enabled (the default script:
// all but the polled one; the refused one raises it with ERROR), each time with every controller idle.
// The timeline holds one tile span per tile of every job, on that job's controller's track.
TEST_F(VpCli, TheWaveformAndTimelineShowEachJobOnItsController) {
    ASSERT_FALSE(std::string(SYSTOLIC_VCD2FST).empty()) << "vcd2fst not found when configuring (gtkwave)";
    const auto r = run_tool(k_vp, "--json r.json --vcd w.vcd --trace t.json");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    const auto conv = run_tool(SYSTOLIC_VCD2FST, p("w.vcd") + " " + p("w.fst"));
    ASSERT_EQ(conv.status, 0) << "vcd2fst refused the file: " << conv.err << conv.out;
    const auto back = run_tool(SYSTOLIC_FST2VCD, p("w.fst"));
    ASSERT_EQ(back.status, 0) << back.err;
    const vcd_data v = parse_vcd(back.out);
    const auto rep = nlohmann::json::parse(slurp(path("r.json")));
    const auto trace = nlohmann::json::parse(slurp(path("t.json")));
    std::map<std::string, std::uint64_t> edges, tiles;
    for (const auto& j : rep.at("jobs")) {
        if (j.at("outcome") != "ok") continue;
        const std::string d = j.at("dtype");
        edges[d] += j.at("advance_edges").get<std::uint64_t>();
        const std::uint64_t m = j.at("m"), cols = j.at("p");
        tiles[d] += (m + 1) / 2 * ((cols + 1) / 2);  // the default 2x2 array
    }
    ASSERT_EQ(edges.size(), 4u);
    std::map<int, std::string> track;
    for (const auto& e : trace.at("traceEvents"))
        if (e.at("name") == "thread_name") track[e.at("tid").get<int>()] = e.at("args").at("name");
    std::map<std::string, std::uint64_t> tile_spans;
    for (const auto& e : trace.at("traceEvents"))
        if (e.value("cat", "") == "tile") ++tile_spans[track.at(e.at("tid").get<int>())];
    for (const std::string d : {"int8", "int32", "fp32", "bf16"}) {
        SCOPED_TRACE(d);
        const std::string ctl = "vp.accel.ctrl_" + d + ".";
        EXPECT_EQ(v.rises(ctl + "advance").size(), edges[d]);
        std::set<std::string> phases;
        for (const auto& c : v.of(ctl + "phase_name"))
            phases.insert(c.value);
        EXPECT_EQ(phases, (std::set<std::string>{"idle", "clear", "load", "advance", "drain"}));
        EXPECT_EQ(v.text_at(ctl + "phase_name", v.last_time), "idle");
        for (const std::string pe : {"row_0.pe_0_0", "row_1.pe_1_1"}) {
            const std::string acc = "vp.accel.array_" + d + "." + pe + ".acc";
            ASSERT_TRUE(v.has(acc)) << acc;
            EXPECT_GT(v.of(acc).size(), 2u) << acc;
        }
        EXPECT_EQ(tile_spans["vp.accel.ctrl_" + d], tiles[d]);
    }
    const auto irq = v.rises("vp.irq");
    EXPECT_EQ(irq.size(), 6u);
    for (const std::uint64_t t : irq)
        for (const std::string d : {"int8", "int32", "fp32", "bf16"})
            EXPECT_EQ(v.text_at("vp.accel.ctrl_" + d + ".phase_name", t), "idle") << d << " at " << t;
}

TEST_F(VpCli, TheShippedScriptsPassAndTheDefaultIsBuiltIn) {
    auto r = run_tool(k_vp, std::string("--script ") + SYSTOLIC_VP_SCRIPTS + "/registers.vps");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    r = run_tool(k_vp, std::string("--script ") + SYSTOLIC_VP_SCRIPTS + "/default.vps");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    r = run_tool(k_vp, "--print-default-script");
    EXPECT_EQ(r.out, slurp(std::string(SYSTOLIC_VP_SCRIPTS) + "/default.vps"));
}

// A wrong expectation, a wrong register value and a hung wait are failures (exit 1), each named
// with its line; a bad script is bad input (exit 2), refused before anything runs.
TEST_F(VpCli, FailuresExitOneAndBadScriptsExitTwo) {
    write("wrong.vps", "job seed data=seed expect=OVERLAP\nread ID == 0\nwait-irq 1us\n");
    auto r = run_tool(k_vp, "--script wrong.vps");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("FAIL line 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("FAIL line 2 (read ID == 0): ID is 0x53594143"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("FAIL line 3 (wait-irq 1us): no interrupt"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("3 failures"), std::string::npos) << r.out;
    write("bad.vps", "job a data=seed\nfly away\n");
    r = run_tool(k_vp, "--script bad.vps");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-vp: bad.vps:2: unknown command 'fly' in 'fly away'\n");
    r = run_tool(k_vp, "--script missing.vps");
    EXPECT_EQ(r.status, 2);
}

// A ws job with per-column int8 requantization runs through systolic-vp and passes its check; the
// vectors reach the accelerator: other scales give another C (each passing its own check), and the
// same scale in every column gives the C of the per-tensor scale.
TEST_F(VpCli, PerColumnRequantizationRunsOnEveryDataflow) {
    auto r = run_tool(k_vp, std::string("--script ") + SYSTOLIC_VP_SCRIPTS + "/columns.vps");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("systolic-vp: 3 jobs (0 expected to fail), 3 checks, 0 failures"), std::string::npos)
        << r.out;
    const std::string job = "job j dtype=int8 m=6 k=9 p=5 seed=3 dataflow=ws out=int8 ";
    write("cols.vps", job + "scales=0.01,0.02,0.005,0.04,0.03 zero_points=-3,0,3,5,-7\n");
    write("other.vps", job + "scales=0.03,0.02,0.005,0.04,0.03 zero_points=-3,0,3,5,-7\n");
    write("same.vps", job + "scales=0.02,0.02,0.02,0.02,0.02\n");
    write("tensor.vps", job + "scale=0.02\n");
    std::map<std::string, std::string> c;
    for (const std::string name : {"cols", "other", "same", "tensor"}) {
        std::filesystem::create_directories(path(name));
        r = run_tool(k_vp, "--script " + name + ".vps --c-out " + p(name));
        ASSERT_EQ(r.status, 0) << name << "\n" << r.out << r.err;
        EXPECT_NE(r.out.find("PASS"), std::string::npos) << r.out;
        c[name] = slurp(path(name) / "j.npy");
    }
    EXPECT_NE(c["cols"], c["other"]);
    EXPECT_EQ(c["same"], c["tensor"]);
}

// A START the script writes itself is checked by the passive checker: the job passes, and the same
// job with A changed while it runs fails the run (exit 1) with the checker's line.
// The memory options are systolic-tb's (cli/memory_options.h), given to the accelerator for every
// job: a narrow DRAM channel lengthens the same jobs, which still pass their checks, and a
// scratchpad size without --buffers double is refused with the rule, as in systolic-tb.
TEST_F(VpCli, TheMemoryOptionsReachTheAccelerator) {
    const auto cycles_of = [](const std::string& out) {
        const auto at = out.find("job seed: ");
        const auto c = out.find("cycles: ", at);
        return c == std::string::npos ? -1L : std::stol(out.substr(c + 8));
    };
    const auto plain = run_tool(k_vp, "");
    ASSERT_EQ(plain.status, 0) << plain.out << plain.err;
    const auto narrow = run_tool(k_vp, "--dram-bandwidth 0.25");
    ASSERT_EQ(narrow.status, 0) << narrow.out << narrow.err;
    EXPECT_EQ(cycles_of(plain.out), 264);
    EXPECT_GT(cycles_of(narrow.out), cycles_of(plain.out)) << narrow.out;
    const auto refused = run_tool(k_vp, "--a-sram 64k");
    EXPECT_EQ(refused.status, 2);
    EXPECT_EQ(
        refused.err,
        "systolic-vp: error: --a-sram needs --buffers double: it sizes the A scratchpad, and buffers none "
        "has none\n");
    EXPECT_EQ(run_tool(k_vp, "--dram-bandwidth -1").status, 2);
}

TEST_F(VpCli, AStartTheScriptWritesIsCheckedPassively) {
    const std::string job =
        "mem 0x80001000 int32 1,2,3,4,5,6,7,8,9\n"
        "mem 0x80001100 int32 1,0,2,0,1,0,2,0,1\n"
        "write M 3\nwrite K 3\nwrite P 3\n"
        "write A_ADDR_LO 0x80001000\nwrite B_ADDR_LO 0x80001100\nwrite C_ADDR_LO 0x80001200\n"
        "write DTYPE INT32\nwrite CTRL START\n";
    const std::string wait = "poll STATUS BUSY 0 10us\n";
    write("clean.vps", job + wait + "expect-mem 0x80001200 int64 7,2,5,16,5,14,25,8,23\n");
    auto r = run_tool(k_vp, "--script clean.vps");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.out.find("FAIL"), std::string::npos) << r.out;
    write("meddling.vps", job + "mem 0x80001000 int32 100\n" + wait);
    r = run_tool(k_vp, "--script meddling.vps");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("FAIL passive check: job 1 (int32 M=3 K=3 P=3, C at 0x80001200): "),
              std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find(" 1 failures, "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("protocol violations\nFAIL\n"), std::string::npos) << r.out;
}

// Every value of a script is checked before anything runs: a bad one is bad input (exit 2), named
// with its file and line, and nothing is printed on stdout. None of these may run, or run changed.
TEST_F(VpCli, EveryValueIsCheckedBeforeAnythingRuns) {
    struct bad {
        const char* line;
        const char* says;
    };
    const bad cases[] = {
        {"job a dtype=int16 m=2 k=2 p=2", "dtype 'int16'"},
        {"job a m=2 k=2 p=2 out=int8 scale=abc", "scale 'abc'"},
        {"job a m=2 k=2 p=2 out=int8 scale=1e39", "scale '1e39'"},
        {"job a m=2 k=2 p=2 out=int8 scale=nan", "scale 'nan'"},
        {"job a m=abc k=2 p=2", "m 'abc'"},
        {"job a m=2 k=-1 p=2", "k '-1'"},
        {"job a m=0x100000000 k=2 p=2", "m '0x100000000'"},
        {"job a m=2 k=2 p=2 zero_point=0x80000000", "zero_point '0x80000000'"},
        {"job a m=2 k=2 p=2 order=diagonal", "order 'diagonal'"},
        {"job a m=2 k=2 p=2 expect=WHATEVER", "expect 'WHATEVER'"},
        {"job a m=2 k=2", "needs m, k and p"},
        {"job a data=seed m=4", "data=seed"},
        {"job a m=2 k=2 p=2 wait=never", "wait 'never'"},
        {"job a m=2 k=2 p=2 data=file", "data 'file'"},
        {"job a m=2 k=2 p=2 timeout=forever", "timeout 'forever'"},
        {"job a m=2 k=2 p=2 c_addr=d", "c_addr 'd'"},
        {"job a m=2 k=2 p=2 c_addr=a+0xffffffffffffffff", "c_addr"},
        {"job a m=4096 k=4096 p=4096", "do not fit in RAM"},
        {"job a m=4000000 k=4000000 p=1 a_stride=1 b_stride=1 c_stride=1 expect=STRIDE", "do not fit in RAM"},
        {"job far data=seed c_addr=0x90000000", "outside RAM"},
        {"mem 0x80000000 int8 300", "'300'"},
        {"mem 0x80000000 int8 1,,2", "''"},
        {"mem 0x80000000 int16 1", "type 'int16'"},
        {"mem 0x80000000 fp32 x", "'x'"},
        {"mem 0x80000000 int32 0x1ffffffff", "'0x1ffffffff'"},
        {"mem 0x7ffffffc int32 1,2", "outside RAM"},
        {"expect-mem 0x81000000 int8 1", "outside RAM"},
        {"delay 20000000s", "bad time '20000000s'"},
        {"delay 010", "bad time '010'"},
        {"wait-irq 5", "bad time '5'"},
        {"write M 0x1ffffffff", "bad value '0x1ffffffff'"},
        {"write M -0x80000001", "bad value '-0x80000001'"},
        {"read M == 0x100000000", "bad value '0x100000000'"},
        {"poll STATUS BUSY 0x100000000", "bad mask, value or timeout"},
    };
    for (const auto& c : cases) {
        write("bad.vps", std::string("read ID == 0x53594143\n") + c.line + "\n");
        const auto r = run_tool(k_vp, "--script bad.vps");
        EXPECT_EQ(r.status, 2) << c.line << "\n" << r.out << r.err;
        EXPECT_EQ(r.err.rfind("systolic-vp: bad.vps:2: ", 0), 0u) << c.line << ": " << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << c.line << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.line << ": " << r.err;
        EXPECT_EQ(r.out, "") << c.line;
    }
}

// What the script says is printed with its control characters escaped, and text that is not UTF-8
// is refused with its line.
TEST_F(VpCli, ControlCharactersAreEscapedAndTextMustBeUtf8) {
    write("ctl.vps", std::string("fly\x1b[2J away\n"));
    auto r = run_tool(k_vp, "--script ctl.vps");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-vp: ctl.vps:1: unknown command 'fly\\x1b[2J' in 'fly\\x1b[2J away'\n");
    const char nul[] = "job a\0b data=seed\n";
    write("nul.vps", std::string(nul, sizeof nul - 1));
    r = run_tool(k_vp, "--script nul.vps");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-vp: nul.vps:1: the job name 'a\\x00b' holds control characters in 'job a\\x00b "
              "data=seed'\n");
    write("latin1.vps", "# fine\njob caf\xe9 data=seed\n");
    r = run_tool(k_vp, "--script latin1.vps");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-vp: latin1.vps:2: not UTF-8 text (byte 0xe9 at column 8)\n");
    EXPECT_EQ(r.out, "");
}

// C moved on purpose inside RAM but away from A and B: the whole of RAM is compared before and
// after, so the check reads C where it is, and its claim about the rest of memory is a fact.
TEST_F(VpCli, CAnywhereInRamIsCheckedWhereItIs) {
    write("far.vps", "job near data=seed c_addr=0x80002000\njob far data=seed c_addr=0x80800000\n");
    const auto r = run_tool(k_vp, "--script far.vps");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_EQ(r.err, "");
    const std::string ok = "C=[[7,2,5],[16,5,14],[25,8,23]]";
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), 'C') >= 2, true);
    EXPECT_NE(r.out.find(ok), r.out.rfind(ok)) << r.out;
    const std::string checked =
        "checked: 9 of 9 elements of C match the reference, the rest of RAM untouched";
    EXPECT_NE(r.out.find(checked), r.out.rfind(checked)) << r.out;
}

// The accelerator's arrays are square (ARRAY_SIZE reads N): NxN is N, RxC is refused in one line.
TEST_F(VpCli, ArrayIsSquare) {
    auto r = run_tool(k_vp, "--array 3x5");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-vp: error: --array 3x5: the accelerator's arrays are square (its ARRAY_SIZE register "
              "reads N); give N (systolic-tb and systolic-run model RxC arrays)\n");
    r = run_tool(k_vp, "--array 0");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-vp: error: --array must be between 1 and 1024, got 0\n");
    r = run_tool(k_vp, "--array 4x");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(
        r.err,
        "systolic-vp: error: --array '4x' must be N or RxC (rows x columns of PEs, e.g. 16 or 12x14)\n");
    r = run_tool(k_vp, "--array 3x3");
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("on a 3x3 array"), std::string::npos) << r.out;
}

// One job as a vp script's keys and as systolic-tb's options.
struct paired_job {
    const char* name;
    const char* vp_keys;
    const char* tb_args;
};

// The same jobs through systolic-vp and systolic-tb: identical C (bit for bit), edges, MACs and
// simulated time.
TEST_F(VpCli, AgreesWithSystolicTbOnCAndCounters) {
    const paired_job jobs[] = {
        {"i8", "dtype=int8 m=13 k=21 p=9 seed=7", "--dtype int8 --m 13 --k 21 --p 9 --seed 7"},
        {"i32", "dtype=int32 m=10 k=7 p=11 seed=8 order=col overflow=saturate",
         "--dtype int32 --m 10 --k 7 --p 11 --seed 8 --order col --overflow saturate"},
        {"f32", "dtype=fp32 m=6 k=30 p=7 seed=9 k_tile=7 order=snake",
         "--dtype fp32 --m 6 --k 30 --p 7 --seed 9 --k-tile 7 --order snake"},
        {"bf16", "dtype=bf16 m=9 k=12 p=5 seed=10 k_tile=5 policy=partials",
         "--dtype bf16 --m 9 --k 12 --p 5 --seed 10 --k-tile 5 --k-policy partials"},
        {"q8", "dtype=int8 m=8 k=16 p=8 seed=11 k_tile=4 policy=partials out=int8 scale=0.05 zero_point=-4",
         "--dtype int8 --m 8 --k 16 --p 8 --seed 11 --k-tile 4 --k-policy partials --out-dtype int8 --scale "
         "0.05 "
         "--zero-point -4"},
    };
    std::string script;
    for (const auto& j : jobs)
        script += std::string("job ") + j.name + " " + j.vp_keys + "\n";
    write("same.vps", script);
    for (const char* n : {"3", "4"}) {
        auto r = run_tool(k_vp, std::string("--array ") + n + " --script same.vps --c-out vp --json vp.json");
        ASSERT_EQ(r.status, 0) << r.out << r.err;
        const auto report = nlohmann::json::parse(slurp(path("vp.json")));
        for (std::size_t i = 0; i < std::size(jobs); ++i) {
            const auto& j = jobs[i];
            r = run_tool(k_tb,
                         std::string("--array ") + n + " " + j.tb_args + " --c-out tb.npy --json tb.json");
            ASSERT_EQ(r.status, 0) << j.name << r.out << r.err;
            const auto tb = nlohmann::json::parse(slurp(path("tb.json")));
            const auto& v = report.at("jobs").at(i);
            EXPECT_EQ(v.at("advance_edges"), tb.at("advance_edges")) << j.name << " N=" << n;
            EXPECT_EQ(v.at("macs_padded"), tb.at("macs_padded")) << j.name << " N=" << n;
            EXPECT_EQ(v.at("macs_real"), tb.at("macs_real")) << j.name << " N=" << n;
            EXPECT_EQ(v.at("cycles").get<std::int64_t>(), std::llround(tb.at("sim_time_ns").get<double>()))
                << j.name << " N=" << n;
            const auto c_vp = systolic::io::read_npy(p(std::string("vp/") + j.name + ".npy"));
            const auto c_tb = systolic::io::read_npy(p("tb.npy"));
            EXPECT_EQ(c_vp.descr, c_tb.descr) << j.name;
            EXPECT_EQ(c_vp.shape, c_tb.shape) << j.name;
            EXPECT_TRUE(c_vp.data == c_tb.data) << j.name << " N=" << n << ": C differs";
        }
    }
}

// --energy TABLE: the accelerator prices each job, and ENERGY (which the script reads like any
// register, and the report gives as energy_pj) holds its energy in pJ. systolic-tb prices the same
// job with the same table from its own counts: the same energy, rounded. Without scratchpads, and
// double-buffered with an unlimited A scratchpad (priced as the whole of A, as systolic-tb does).
// A file that is no table is one line and exit status 2, before anything runs.
TEST_F(VpCli, EnergyIsPricedAsSystolicTbPricesTheSameJob) {
    const paired_job jobs[] = {
        {"i8", "dtype=int8 m=13 k=21 p=9 seed=7", "--dtype int8 --m 13 --k 21 --p 9 --seed 7"},
        {"f32", "dtype=fp32 m=6 k=30 p=7 seed=9 k_tile=7",
         "--dtype fp32 --m 6 --k 30 --p 7 --seed 9 --k-tile 7"},
    };
    std::string script;
    for (const auto& j : jobs)
        script += std::string("job ") + j.name + " " + j.vp_keys + "\nread ENERGY_HI == 0\nprint ENERGY_LO\n";
    write("energy.vps", script);
    for (const std::string memory : {"", " --buffers double --b-sram 4k --c-sram 4k"}) {
        auto r = run_tool(k_vp, "--array 4 --script energy.vps --energy horowitz45 --json vp.json" + memory);
        ASSERT_EQ(r.status, 0) << memory << r.out << r.err;
        const auto report = nlohmann::json::parse(slurp(path("vp.json")));
        for (std::size_t i = 0; i < std::size(jobs); ++i) {
            const auto& j = jobs[i];
            r = run_tool(
                k_tb, std::string("--array 4 ") + j.tb_args + " --energy horowitz45 --json tb.json" + memory);
            ASSERT_EQ(r.status, 0) << j.name << r.out << r.err;
            const auto tb = nlohmann::json::parse(slurp(path("tb.json")));
            const auto& v = report.at("jobs").at(i);
            ASSERT_TRUE(v.at("pass").get<bool>()) << v.dump();
            const double tb_pj = tb.at("energy").at("total_pj").get<double>();
            EXPECT_GT(tb_pj, 1.0) << j.name;
            EXPECT_EQ(v.at("energy_pj").get<std::int64_t>(), std::llround(tb_pj)) << j.name << memory;
            EXPECT_NE(r.out.find("energy ("), std::string::npos);
        }
        const auto vp_text = run_tool(k_vp, "--array 4 --script energy.vps --energy horowitz45" + memory);
        EXPECT_NE(
            vp_text.out.find(
                "energy: " + std::to_string(report.at("jobs").at(0).at("energy_pj").get<std::uint64_t>()) +
                " pJ (ENERGY)"),
            std::string::npos)
            << vp_text.out;
    }
    // Without --energy nothing is priced: no energy_pj, and ENERGY reads 0.
    write("plain.vps", std::string("job i8 ") + jobs[0].vp_keys + "\nread ENERGY_LO == 0\n");
    auto r = run_tool(k_vp, "--array 4 --script plain.vps --json plain.json");
    ASSERT_EQ(r.status, 0) << r.out << r.err;
    EXPECT_FALSE(nlohmann::json::parse(slurp(path("plain.json"))).at("jobs").at(0).contains("energy_pj"));

    write("bad.json", "{\"schema\": 1}\n");
    r = run_tool(k_vp, "--energy " + p("bad.json") + " --json " + p("never.json"));
    EXPECT_EQ(r.status, 2) << r.out << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(r.err.rfind("systolic-vp: error: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(std::filesystem::exists(p("never.json")));
    r = run_tool(k_vp, "--energy no-such-table");
    EXPECT_EQ(r.status, 2) << r.err;
    r = run_tool(k_vp, "--tech-node 7");
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_NE(r.err.find("--tech-node"), std::string::npos) << r.err;
}

TEST_F(VpCli, UnknownOptionSuggestsTheNearestOne) {
    const auto r = run_tool(k_vp, "--scirpt x.vps");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-vp: error: unknown option --scirpt; did you mean --script?\n");
    EXPECT_EQ(r.out, "");
}

}  // namespace
