// systolic-run as a user runs it: small GEMM and convolution topologies on small arrays, counted
// cycles and traffic against figures the test works out itself, .npy operands, sweeps over arrays
// and dataflows in one process, in local job processes and as emitted job lines merged afterwards
// (byte for byte the same reports), and every kind of bad input (one line on stderr, exit status 2,
// no report).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "io/npy.h"

namespace {

namespace fs = std::filesystem;
using systolic::tb::testing::cli_fixture;
using systolic::tb::testing::cli_result;
using systolic::tb::testing::slurp;

std::uint64_t ceil_div(std::uint64_t a, std::uint64_t b) {
    return (a + b - 1) / b;
}

std::vector<std::vector<std::string>> csv_rows(const std::string& text) {
    std::vector<std::vector<std::string>> rows;
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
        std::vector<std::string> fields;
        std::istringstream f(line);
        std::string field;
        while (std::getline(f, field, ','))
            fields.push_back(field.empty() || field[0] != ' ' ? field : field.substr(1));
        rows.push_back(fields);
    }
    return rows;
}

class SystolicRun : public cli_fixture {
protected:
    cli_result sr(const std::string& args) const {
        return run_tool(std::string("exec ") + SYSTOLIC_RUN, args);
    }
    void write(const std::string& name, const std::string& text) const { std::ofstream(path(name)) << text; }
    std::size_t files_in(const std::string& dir) const {
        std::size_t n = 0;
        std::error_code ec;
        for (auto it = fs::directory_iterator(path(dir), ec); !ec && it != fs::directory_iterator(); ++it)
            ++n;
        return n;
    }
    // Emits the sweep's jobs into `jobs`, runs them and merges them into `merged`, each step expected
    // to succeed (call it under ASSERT_NO_FATAL_FAILURE).
    void emit_run_and_merge(const std::string& sweep) const {
        auto r = sr(sweep + " --emit-jobs --out jobs");
        ASSERT_EQ(r.status, 0) << r.err;
        write("jobs.sh", r.out);
        r = run_tool("sh", "jobs.sh");
        ASSERT_EQ(r.status, 0) << r.err;
        r = sr("--merge jobs --out merged");
        ASSERT_EQ(r.status, 0) << r.err;
    }
    // Runs the commands --emit-jobs printed, merges their `jobs` job files into `merged`, and
    // expects every report of `seq` (one process) in `par` (--jobs) and `merged`, byte for byte.
    void expect_jobs_merge_into_the_same_reports(const std::string& emitted, std::size_t jobs) const {
        write("jobs.sh", emitted);
        auto r = run_tool("sh", "jobs.sh");
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_EQ(files_in("jobs"), jobs);
        r = sr("--merge jobs --out merged");
        ASSERT_EQ(r.status, 0) << r.err;
        for (const char* f :
             {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "TRAFFIC_REPORT.csv", "report.json"}) {
            SCOPED_TRACE(f);
            const std::string seq = slurp(path(std::string("seq/") + f));
            EXPECT_FALSE(seq.empty());
            EXPECT_EQ(slurp(path(std::string("par/") + f)), seq);
            EXPECT_EQ(slurp(path(std::string("merged/") + f)), seq);
        }
    }
};

const char* small_gemm = "Layer, M, N, K,\nA, 6, 5, 10,\nB, 9, 3, 1,\nC, 4, 4, 4,\nD, 1, 17, 33,\n";

TEST_F(SystolicRun, SmallGemmTopologyCountsCyclesAndTraffic) {
    write("t.csv", small_gemm);
    const auto r = sr("--topology t.csv --array 4 --out res");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(r.err, "");
    EXPECT_NE(r.out.find("4 jobs, PASS"), std::string::npos) << r.out;
    const auto rows = csv_rows(slurp(path("res/COMPUTE_REPORT.csv")));
    const auto traffic = csv_rows(slurp(path("res/TRAFFIC_REPORT.csv")));
    ASSERT_EQ(rows.size(), 4u);
    ASSERT_EQ(traffic.size(), 4u);
    const std::uint64_t shapes[4][3] = {{6, 5, 10}, {9, 3, 1}, {4, 4, 4}, {1, 17, 33}};  // M, N (our P), K
    std::uint64_t edges = 0, macs = 0;
    for (int i = 0; i < 4; ++i) {
        const std::uint64_t m = shapes[i][0], p = shapes[i][1], k = shapes[i][2], n = 4;
        const std::uint64_t folds = ceil_div(m, n) * ceil_div(p, n);
        edges += folds * (k + n + n - 2);
        macs += m * k * p;
        SCOPED_TRACE(i);
        EXPECT_EQ(rows[i][0], std::to_string(i));
        EXPECT_EQ(rows[i][1], std::to_string(folds * (k + n + n - 2) - 1));  // SCALE-Sim's Total Cycles
        EXPECT_EQ(rows[i][2], "0");
        EXPECT_EQ(rows[i][6], std::to_string(folds * (k + n + n - 2)));  // counted advance edges
        EXPECT_EQ(rows[i][8], std::to_string(m * k * p));
        EXPECT_EQ(rows[i][17], "PASS");
        // Every tile reads its real A rows (K int8 each) and K rows of its B columns, and writes its
        // real C rows (int32 accumulators).
        EXPECT_EQ(traffic[i][3], std::to_string(ceil_div(p, n) * m * k));
        EXPECT_EQ(traffic[i][4], std::to_string(ceil_div(m, n) * k * p));
        EXPECT_EQ(traffic[i][5], std::to_string(m * p * 4));
        EXPECT_EQ(traffic[i][6], "0");
        EXPECT_EQ(traffic[i][7], "0");
    }
    const auto j = nlohmann::json::parse(slurp(path("res/report.json")));
    EXPECT_TRUE(j.at("pass").get<bool>());
    EXPECT_EQ(j.at("layers").size(), 4u);
    EXPECT_EQ(j.at("layers")[0].at("scoreboard").at("checked"), 30);
    EXPECT_EQ(j.at("arrays")[0].at("array"), "4x4");
    // The network's total, for one array as for a sweep: its layers, edges and utilization; for one
    // array, the last line.
    char total[128];
    std::snprintf(total, sizeof total,
                  "4x4       os 4 layers: %llu edges, utilization %.2f%%, 4 jobs, PASS\n",
                  static_cast<unsigned long long>(edges), 100.0 * double(macs) / double(edges * 16));
    EXPECT_NE(r.out.find(total), std::string::npos) << r.out;
    EXPECT_EQ(r.out.substr(r.out.size() - std::strlen(total)), total) << r.out;
}

// A network layer that runs as several GEMMs (a grouped or depth-wise convolution's groups, a batched
// MatMul's batch entries or heads, SCALE-Sim's depth-wise copies) is one line of the summary and one
// entry of report.json's network_layers, totalled over its GEMMs; the network's total counts layers
// and jobs. The totals are worked out here from the counting rule, not read from the other reports.
TEST_F(SystolicRun, NetworkLayersTotalTheirGemms) {
    write("g.csv",
          "Layer, M, N, K,\nstem, 6, 5, 10,\ndw.g0, 9, 1, 9,\ndw.g1, 9, 1, 9,\ndw.g2, 9, 1, 9,\n"
          "attn.qk.b0, 4, 4, 3,\nattn.qk.b1, 4, 4, 3,\nfc, 1, 17, 33,\n");
    const auto r = sr("--topology g.csv --array 4 --out res");
    ASSERT_EQ(r.status, 0) << r.err;
    struct want {
        const char* layer;
        std::vector<std::uint64_t> ids;
        std::uint64_t m, p, k;
    };
    const want layers[] = {{"stem", {0}, 6, 5, 10},
                           {"dw", {1, 2, 3}, 9, 1, 9},
                           {"attn.qk", {4, 5}, 4, 4, 3},
                           {"fc", {6}, 1, 17, 33}};
    const auto j = nlohmann::json::parse(slurp(path("res/report.json")));
    const auto& net = j.at("arrays").at(0);
    ASSERT_EQ(net.at("network_layers").size(), 4u);
    EXPECT_EQ(net.at("network_layer_count"), 4);
    EXPECT_EQ(net.at("layers"), 7);
    std::uint64_t all_edges = 0, all_macs = 0;
    std::string summary;
    for (std::size_t i = 0; i < std::size(layers); ++i) {
        const want& w = layers[i];
        SCOPED_TRACE(w.layer);
        const auto& got = net.at("network_layers").at(i);
        const std::uint64_t folds = ceil_div(w.m, 4) * ceil_div(w.p, 4), n = w.ids.size();
        const std::uint64_t edges = n * folds * (w.k + 4 + 4 - 2), macs = n * w.m * w.k * w.p;
        all_edges += edges;
        all_macs += macs;
        EXPECT_EQ(got.at("layer"), w.layer);
        EXPECT_EQ(got.at("gemms"), n);
        EXPECT_EQ(got.at("layer_ids").get<std::vector<std::uint64_t>>(), w.ids);
        EXPECT_EQ(got.at("advance_edges"), edges);
        EXPECT_EQ(got.at("total_cycles"), edges - n);  // SCALE-Sim's, a GEMM's last cycle index
        EXPECT_EQ(got.at("macs_real"), macs);
        EXPECT_EQ(got.at("tiles"), n * folds);
        EXPECT_DOUBLE_EQ(got.at("utilization_percent").get<double>(),
                         100.0 * double(macs) / double(edges * 16));
        EXPECT_TRUE(got.at("pass").get<bool>());
        for (std::uint64_t id : w.ids)
            EXPECT_EQ(j.at("layers").at(id).at("network_layer"), w.layer);
        // One summary line: the GEMMs counted, their shape, their edges together, and SCALE-Sim's
        // Overall Util over their cycles.
        char line[192];
        std::snprintf(line, sizeof line,
                      "4x4       os %4llu %-24s %sM=%llu K=%llu P=%llu: %llu edges, %llu tiles, overall util "
                      "%.2f%%, PASS\n",
                      static_cast<unsigned long long>(w.ids.front()), w.layer,
                      n > 1 ? (std::to_string(n) + " GEMMs of ").c_str() : "",
                      static_cast<unsigned long long>(w.m), static_cast<unsigned long long>(w.k),
                      static_cast<unsigned long long>(w.p), static_cast<unsigned long long>(edges),
                      static_cast<unsigned long long>(n * folds),
                      100.0 * double(macs) / double((edges - n) * 16));
        summary += line;
    }
    EXPECT_EQ(net.at("advance_edges"), all_edges);
    char total[128];
    std::snprintf(
        total, sizeof total, "4x4       os 4 layers: %llu edges, utilization %.2f%%, 7 jobs, PASS\n",
        static_cast<unsigned long long>(all_edges), 100.0 * double(all_macs) / double(all_edges * 16));
    summary += total;
    EXPECT_EQ(r.out, summary);
    // docs/networks.md quotes this summary, each line indented in its list.
    const std::string doc = slurp(SYSTOLIC_NETWORKS_DOC);
    std::string quoted;
    for (std::size_t at = 0; at < summary.size();) {
        const std::size_t end = summary.find('\n', at) + 1;
        quoted += "  " + summary.substr(at, end - at);
        at = end;
    }
    EXPECT_NE(doc.find("  ```\n" + quoted + "  ```\n"), std::string::npos)
        << "docs/networks.md does not quote, as a block in its list:\n"
        << quoted;

    // SCALE-Sim's depth-wise rows: a row's channel copies are its layer's GEMMs. A sweep prints the
    // failing layers only, then each series' totals with its layers, then the jobs.
    write(
        "dp.csv",
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "Conv_DP, 8, 8, 3, 3, 3, 1, 1,\nNext, 8, 8, 1, 1, 3, 4, 1,\n");
    const auto s = sr("--topology dp.csv --array 4,8 --out dp");
    ASSERT_EQ(s.status, 0) << s.err;
    EXPECT_NE(s.out.find("4x4       os 2 layers: "), std::string::npos) << s.out;
    EXPECT_NE(s.out.find("8x8       os 2 layers: "), std::string::npos) << s.out;
    EXPECT_NE(s.out.find(", 4 jobs, PASS\n"), std::string::npos) << s.out;
    const std::string last = "PASS\n8 jobs, PASS\n";
    EXPECT_EQ(s.out.substr(s.out.size() - last.size()), last) << s.out;
    const auto d = nlohmann::json::parse(slurp(path("dp/report.json")));
    for (const auto& a : d.at("arrays")) {
        ASSERT_EQ(a.at("network_layers").size(), 2u);
        EXPECT_EQ(a.at("network_layers").at(0).at("layer"), "Conv_DP");
        EXPECT_EQ(a.at("network_layers").at(0).at("gemms"), 3);
    }
}

// SCALE-Sim's Eyeriss preset is 12 rows of 14 PEs: C tiles of 12 rows by 14 columns, each K + 12 +
// 14 - 2 edges; the sweep holds it beside a square array, and the job lines name it 12x14.
TEST_F(SystolicRun, RectangularArrayCountsTilesOfRowsByColumns) {
    write("t.csv", "Layer, M, N, K,\nA, 30, 20, 9,\nB, 12, 14, 5,\nC, 1, 29, 3,\n");
    const auto r = sr("--topology t.csv --array 4,12x14 --out res");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find("6 jobs, PASS"), std::string::npos) << r.out;
    const auto rows = csv_rows(slurp(path("res/COMPUTE_REPORT.csv")));
    ASSERT_EQ(rows.size(), 6u);
    const std::uint64_t shapes[3][3] = {{30, 20, 9}, {12, 14, 5}, {1, 29, 3}};  // M, N (our P), K
    for (int i = 0; i < 3; ++i) {
        SCOPED_TRACE(i);
        const std::uint64_t m = shapes[i][0], p = shapes[i][1], k = shapes[i][2];
        const auto& square = rows[i];
        const auto& rect = rows[3 + i];
        EXPECT_EQ(square[6], std::to_string(ceil_div(m, 4) * ceil_div(p, 4) * (k + 4 + 4 - 2)));
        EXPECT_EQ(rect[6], std::to_string(ceil_div(m, 12) * ceil_div(p, 14) * (k + 12 + 14 - 2)));
        EXPECT_EQ(rect[8], std::to_string(m * k * p));
        EXPECT_EQ(rect[11], "12x14");
        EXPECT_EQ(rect[15], std::to_string(ceil_div(m, 12) * ceil_div(p, 14)));
        EXPECT_EQ(rect[17], "PASS");
    }
    const auto j = nlohmann::json::parse(slurp(path("res/report.json")));
    EXPECT_TRUE(j.at("pass").get<bool>());
    EXPECT_EQ(j.at("arrays")[1].at("array"), "12x14");
    EXPECT_EQ(j.at("arrays")[1].at("array_rows"), 12);
    EXPECT_EQ(j.at("arrays")[1].at("array_cols"), 14);
    // The job lines of a cluster run name the array as given and run it.
    const auto emitted = sr("--topology t.csv --array 4,12x14 --emit-jobs --out jobs");
    ASSERT_EQ(emitted.status, 0) << emitted.err;
    EXPECT_NE(emitted.out.find("--array 4x4,12x14 --dataflow os "), std::string::npos) << emitted.out;
    EXPECT_NE(emitted.out.find("--job 12x14:os:2"), std::string::npos) << emitted.out;
}

TEST_F(SystolicRun, EnginesGiveTheSameReports) {
    write("t.csv", small_gemm);
    ASSERT_EQ(sr("--topology t.csv --array 3,2x4 --dataflow os,ws,is --dtype int32 --out cyc").status, 0);
    const auto r =
        sr("--topology t.csv --array 3,2x4 --dataflow os,ws,is --dtype int32 --engine functional --out fun");
    ASSERT_EQ(r.status, 0) << r.err;
    std::string cyc = slurp(path("cyc/COMPUTE_REPORT.csv"));
    for (std::size_t at; (at = cyc.find(", cycle,")) != std::string::npos;)
        cyc.replace(at, 8, ", functional,");
    EXPECT_EQ(cyc, slurp(path("fun/COMPUTE_REPORT.csv")));
    EXPECT_EQ(slurp(path("cyc/TRAFFIC_REPORT.csv")), slurp(path("fun/TRAFFIC_REPORT.csv")));
}

TEST_F(SystolicRun, ConvolutionTopologyInEveryFormat) {
    write(
        "c.csv",
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "c1, 9, 9, 3, 3, 2, 5, 2,\nc2, 4, 4, 1, 1, 7, 3, 1,\n");
    for (const char* dtype : {"int8", "int32", "fp32", "bf16"}) {
        SCOPED_TRACE(dtype);
        const auto r = sr(std::string("--topology c.csv --array 4 --out ") + dtype + " --dtype " + dtype);
        ASSERT_EQ(r.status, 0) << r.err;
        const auto rows = csv_rows(slurp(path(std::string(dtype) + "/COMPUTE_REPORT.csv")));
        ASSERT_EQ(rows.size(), 2u);
        // c1: 4x4 outputs, K = 3*3*2, 5 filters; c2: 16 outputs, K = 7, 3 filters.
        EXPECT_EQ(rows[0][12] + " " + rows[0][13] + " " + rows[0][14], "16 18 5");
        EXPECT_EQ(rows[1][12] + " " + rows[1][13] + " " + rows[1][14], "16 7 3");
        EXPECT_EQ(rows[0][17], "PASS");
    }
}

// The overflows counted on a layer's real data: int32 operands of 2^31 - 1 make every product
// about 2^62, so each of the 3 x 2 sums of K = 4 wraps its int64 accumulator once (at the second
// term: 2 x (2^31 - 1)^2 > 2^63 - 1; the third and fourth bring it back into range).
TEST_F(SystolicRun, OverflowsOnRealDataAreReportedPerLayer) {
    write("t.csv", "Layer, M, N, K,\nL0, 3, 2, 4,\n");
    fs::create_directories(path("data"));
    std::int32_t a[12], b[8];
    std::fill(std::begin(a), std::end(a), 2147483647);
    std::fill(std::begin(b), std::end(b), 2147483647);
    systolic::io::write_npy(p("data/L0.a.npy"), "<i4", 3, 4, a, sizeof a);
    systolic::io::write_npy(p("data/L0.b.npy"), "<i4", 4, 2, b, sizeof b);
    const auto r = sr("--topology t.csv --array 2 --dtype int32 --data data --out res");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rows = csv_rows(slurp(path("res/COMPUTE_REPORT.csv")));
    ASSERT_EQ(rows.size(), 1u);
    EXPECT_EQ(rows[0].back(), "6");
    const auto j = nlohmann::json::parse(slurp(path("res/report.json")));
    EXPECT_EQ(j.at("layers")[0].at("overflows"), 6);
}

TEST_F(SystolicRun, OperandsFromNpyFiles) {
    write("t.csv", "Layer, M, N, K,\nL0, 3, 2, 2,\n");
    fs::create_directories(path("data"));
    const std::int8_t a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1};
    systolic::io::write_npy(p("data/L0.a.npy"), "|i1", 3, 2, a, sizeof a);
    systolic::io::write_npy(p("data/L0.b.npy"), "|i1", 2, 2, b, sizeof b);
    const auto r = sr("--topology t.csv --array 2 --data data --out res");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto j = nlohmann::json::parse(slurp(path("res/report.json")));
    EXPECT_EQ(j.at("data"), "npy");
    EXPECT_EQ(j.at("layers")[0].at("scoreboard").at("checked"), 6);

    // The wrong shape, a missing file and a wrong dtype: one line naming the file, no report.
    const std::int8_t b3[] = {1, 0, 0, 1, 0, 0};
    systolic::io::write_npy(p("data/L0.b.npy"), "|i1", 3, 2, b3, sizeof b3);
    auto bad = sr("--topology t.csv --array 2 --data data --out bad");
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err, "systolic-run: error: data/L0.b.npy is 3x2 but layer L0 needs B (K x P) of 2x2\n");
    EXPECT_FALSE(fs::exists(path("bad/COMPUTE_REPORT.csv")));
    fs::remove(path("data/L0.b.npy"));
    bad = sr("--topology t.csv --array 2 --data data --out bad");
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err.rfind("systolic-run: error: data/L0.b.npy", 0), 0u) << bad.err;
    EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1);
    bad = sr("--topology t.csv --array 2 --data data --dtype int32 --out bad");
    EXPECT_EQ(bad.status, 2);
    EXPECT_EQ(bad.err.rfind("systolic-run: error: data/L0.a.npy", 0), 0u) << bad.err;
    EXPECT_EQ(files_in("bad"), 0u);
}

TEST_F(SystolicRun, BadInputIsOneLineAndExitTwo) {
    write("t.csv", "Layer, M, N, K,\nA, 6, 5, 10,\nB, 9, x3, 1,\n");
    auto r = sr("--topology t.csv --array 4 --out res");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: t.csv:3: field 'N' (column 3): expected a positive integer, got 'x3'\n");
    EXPECT_EQ(files_in("res"), 0u);
    EXPECT_EQ(r.out, "");
    write("g.csv", small_gemm);
    const std::pair<const char*, const char*> cases[] = {
        {"--topology g.csv --array 4",
         "systolic-run: error: --out DIR is required (or --job with --job-out)\n"},
        // A bad value or an unknown option is the first error, before the --out it also lacks.
        {"--topology g.csv --array 4 --dtype int4",
         "systolic-run: error: --dtype must be int8, int32, fp32 or bf16, got 'int4'\n"},
        {"--topology g.csv --engine fast",
         "systolic-run: error: --engine must be cycle or functional, got 'fast'\n"},
        {"--array 4 --inject bogus", "systolic-run: error: --inject: unknown fault 'bogus'\n"},
        {"--topology g.csv --seed -1", "systolic-run: error: --seed '-1' is out of range"},
        {"--topology g.csv --dtyp int8",
         "systolic-run: error: unknown option --dtyp; did you mean --dtype?\n"},
        {"--array 4 --out o", "systolic-run: error: --topology FILE is required (or --merge DIR)\n"},
        {"--topology g.csv --array 0x14 --out o",
         "systolic-run: error: --array: array side 0 is out of range [1, 1024]\n"},
        {"--topology g.csv --array 12x --out o",
         "systolic-run: error: --array: '12x' is not an array size (N or RxC)\n"},
        {"--topology g.csv --array 4x4x4 --out o",
         "systolic-run: error: --array: '4x4x4' is not an array size (N or RxC)\n"},
        {"--topology g.csv --array 4 --dtype int4 --out o",
         "systolic-run: error: --dtype must be int8, int32, fp32 or bf16, got 'int4'\n"},
        {"--topology g.csv --array 4 --engine fast --out o",
         "systolic-run: error: --engine must be cycle or functional, got 'fast'\n"},
        {"--topology g.csv --array 4 --jobs 0 --out o",
         "systolic-run: error: --jobs '0' is out of range [1, 1024]\n"},
        {"--topology missing.csv --array 4 --out o",
         "systolic-run: error: missing.csv: cannot open: No such file or directory\n"},
        {"--topology g.csv --array 4 --max-memory 1K --out o",
         "systolic-run: error: layer 0 (A) on 4x4 needs about "},
        {"--topology g.csv --array 4 --job 8x8:0 --job-out j.json",
         "systolic-run: error: --job 8x8:0: 8x8 is not in the sweep\n"},
        {"--topology g.csv --array 4 --job 4x4:9 --job-out j.json",
         "systolic-run: error: --job 4x4:9: the topology has layers 0 to 3\n"},
        {"--merge nowhere --out o", "systolic-run: error: --merge nowhere is not a directory\n"},
        {"--topology g.csv --bogus", "systolic-run: error: unknown option --bogus (see --help)\n"},
        {"--topology g.csv --arry 4 --out o",
         "systolic-run: error: unknown option --arry; did you mean --array?\n"},
        // --dataflow: the names of the table, each once, in a list without holes.
        {"--topology g.csv --dataflow xs --out o",
         "systolic-run: error: --dataflow must be os, ws or is (or a comma list of them), got 'xs'\n"},
        {"--topology g.csv --dataflow os,WS --out o",
         "systolic-run: error: --dataflow must be os, ws or is (or a comma list of them), got 'WS'\n"},
        {"--topology g.csv --dataflow ws,is,ws --out o",
         "systolic-run: error: --dataflow: dataflow ws is given twice\n"},
        {"--topology g.csv --dataflow os, --out o",
         "systolic-run: error: --dataflow: 'os,' is not a list of dataflows (os, ws or is)\n"},
        {"--topology g.csv --dataflow '' --out o",
         "systolic-run: error: --dataflow: '' is not a list of dataflows (os, ws or is)\n"},
        {"--topology g.csv --dataflow os,ws --inject skip-preload --out o",
         "systolic-run: error: --inject skip-preload does not exist in dataflow os\n"},
        {"--topology g.csv --dataflow ws --inject global-skew --out o",
         "systolic-run: error: --inject global-skew does not exist in dataflow ws\n"},
        {"--topology g.csv --array 4 --dataflow os,ws --job 4x4:0 --job-out j.json",
         "systolic-run: error: --job 4x4:0: the run has dataflows os,ws; name one (RxC:DF:ID)\n"},
        {"--topology g.csv --array 4 --dataflow os --job 4x4:ws:0 --job-out j.json",
         "systolic-run: error: --job 4x4:ws:0: dataflow ws is not in the run (os)\n"},
        {"--topology g.csv --array 4 --job 4x4:xs:0 --job-out j.json",
         "systolic-run: error: --job '4x4:xs:0': the dataflow must be os, ws or is\n"},
    };
    for (const auto& [args, err] : cases) {
        SCOPED_TRACE(args);
        r = sr(args);
        EXPECT_EQ(r.status, 2);
        EXPECT_EQ(r.err.substr(0, std::string(err).size()), err);
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
        EXPECT_FALSE(fs::exists(path("o/COMPUTE_REPORT.csv")));
    }
}

// A sweep in one process, in two local job processes, and as job lines run one by one and merged:
// the same three reports, byte for byte.
// --max-memory bounds the whole process: a sweep in one process keeps every array size's
// testbench, so the run is refused before any is built; the topology's length is bounded before its
// layers are made, a depth-wise row (one layer per channel) too.
TEST_F(SystolicRun, MemoryLimitBoundsTheWholeRun) {
#if defined(__SANITIZE_ADDRESS__)
    // ASan's shadow memory and its larger binary make the resident set meaningless as a bound.
    constexpr bool check_rss = false;
#else
    constexpr bool check_rss = true;
#endif
    write("one.csv", "Layer, M, N, K,\ng, 1, 1, 1,\n");
    std::string sizes;
    for (int n = 16; n <= 256; n += 16)
        sizes += (sizes.empty() ? "" : ",") + std::to_string(n);
    auto r = sr("--topology one.csv --array " + sizes + " --max-memory 100M --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err.substr(0, 83),
              "systolic-run: error: the run (16 testbenches, 16 jobs, in one process) needs about ");
    EXPECT_NE(r.err.find("over the limit of 100 MiB set by --max-memory"), std::string::npos) << r.err;
    if (check_rss) {
        EXPECT_LT(r.max_rss_bytes, std::uint64_t{64} << 20);
    }
    EXPECT_FALSE(fs::exists(path("o/COMPUTE_REPORT.csv")));
    EXPECT_EQ(sr("--topology one.csv --array " + sizes + " --max-memory 400M --out o").status, 0);

    std::string rows = "Layer, M, N, K,\n";
    for (int i = 0; i < 70000; ++i)
        rows += "L" + std::to_string(i) + ", 1, 1, 1,\n";
    write("long.csv", rows);
    r = sr("--topology long.csv --array 1 --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: long.csv:65538: the topology would have more than 65536 layers (this row "
              "adds 1, after 65536)\n");
    write("dw.csv",
          "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
          "Strides,\nConv_DP, 3, 3, 3, 3, 2000000000, 1, 1,\n");
    r = sr("--topology dw.csv --array 1 --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: dw.csv:2: the topology would have more than 65536 layers (this row adds "
              "2000000000, one per channel of a depth-wise layer, after 0)\n");
    if (check_rss) {
        EXPECT_LT(r.max_rss_bytes, std::uint64_t{64} << 20);
    }
}

// The processes whose command line mentions `text` (the job processes name their --job-out).
std::size_t processes_mentioning(const std::string& text) {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        std::string cmdline = slurp(e.path() / "cmdline");
        std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
        n += cmdline.find(text) != std::string::npos;
    }
    return n;
}

// SIGTERM to systolic-run --jobs reaches its job processes: it waits for them, removes its scratch
// directory and dies of the same signal, leaving no orphan behind.
TEST_F(SystolicRun, SigtermStopsTheJobProcessesAndRemovesTheirDirectory) {
    write("slow.csv", "Layer, M, N, K,\nA, 400, 400, 400,\nB, 400, 400, 400,\nC, 400, 400, 400,\n");
    const std::string scratch = path("o").string() + "/.systolic-run-jobs.";
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        const int null = ::open("/dev/null", O_WRONLY);
        ::dup2(null, STDOUT_FILENO);
        ::dup2(null, STDERR_FILENO);
        ::execl(SYSTOLIC_RUN, SYSTOLIC_RUN, "--topology", path("slow.csv").c_str(), "--array", "4", "--jobs",
                "2", "--no-progress", "--out", path("o").c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    for (int i = 0; i < 400 && processes_mentioning(scratch) < 2; ++i)
        ::usleep(50000);
    EXPECT_EQ(processes_mentioning(scratch), 2u);
    ::kill(pid, SIGTERM);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
    // At once: systolic-run has waited for its jobs (an orphan would run on for seconds).
    EXPECT_EQ(processes_mentioning(scratch), 0u);
    EXPECT_EQ(files_in("o"), 0u);
}

TEST_F(SystolicRun, SweepsAgreeHoweverTheyRun) {
    write("t.csv", small_gemm);
    auto r = sr("--topology t.csv --array 2,4,3 --out seq");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr("--topology t.csv --array 2,4,3 --jobs 2 --out par");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr("--topology t.csv --array 2,4,3 --emit-jobs --out jobs");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 12);
    expect_jobs_merge_into_the_same_reports(r.out, 12);
    // The rows follow the sweep's order of arrays, then the layers.
    const auto rows = csv_rows(slurp(path("seq/COMPUTE_REPORT.csv")));
    ASSERT_EQ(rows.size(), 12u);
    EXPECT_EQ(rows[0][11], "2x2");
    EXPECT_EQ(rows[4][11], "4x4");
    EXPECT_EQ(rows[8][11], "3x3");
    EXPECT_FALSE(fs::exists(path("par/.systolic-run-jobs")));
    EXPECT_EQ(files_in("par"), 4u);  // the reports, and no scratch directory left behind

    // A job missing from the directory is named, and nothing is written.
    fs::remove(path("jobs/job-3x3-os-0002.json"));
    r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: jobs: no record for layer 2 on 3x3 in os (11 of 12 jobs present); run "
              "line 11 of "
              "the --emit-jobs output again (with Slurm, sbatch --array=11)\n");
    EXPECT_FALSE(fs::exists(path("merged2/COMPUTE_REPORT.csv")));
    r = sr("--merge jobs --out jobs/.");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: --out jobs/. is the --merge directory; give the reports a directory of "
              "their own\n");
    write("jobs/junk.json", "{}");
    r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-run: error: jobs/junk.json: not a systolic-run job file\n");
}

// A SCALE-Sim configuration for a 4x4 array (ArrayHeight rows of ArrayWidth PEs), as SCALE-Sim
// ships them, with the interface bandwidth given.
std::string scale_cfg(const std::string& mode, const std::string& extra = "") {
    return "[general]\nrun_name = test\n\n[architecture_presets]\nArrayHeight:    4\nArrayWidth:     4\n"
           "IfmapSramSzkB:   64\nFilterSramSzkB:  64\nOfmapSramSzkB:   64\nIfmapOffset:    0\n"
           "FilterOffset:   10000000\nOfmapOffset:    20000000\nBandwidth : 1\nDataflow : os\n" +
           extra + "MemoryBanks:   1\n\n[run_presets]\nInterfaceBandwidth: " + mode + "\n";
}

std::map<std::string, std::string> by_name(const std::string& csv, std::size_t row) {
    std::istringstream in(csv);
    std::string head, line;
    std::getline(in, head);
    for (std::size_t i = 0; i <= row; ++i)
        std::getline(in, line);
    std::map<std::string, std::string> out;
    std::istringstream h(head), l(line);
    std::string name, value;
    while (std::getline(h, name, ',') && std::getline(l, value, ','))
        out[name.substr(name[0] == ' ')] = value.substr(!value.empty() && value[0] == ' ');
    return out;
}

// With --config the layers run on SCALE-Sim's double-buffered scratchpads: USER's one word per
// cycle is below what a 4x4 array takes in (8 operands an edge), so the array stalls more than with
// CALC's unlimited channel (where only the DRAM latency of small tiles is left), and SCALE-Sim's
// Total Cycles is the edges - 1 plus the stalls in both; the whole job cannot be shorter than its
// DRAM bytes at one a cycle. The bandwidth reported to need no stalls is above the one that stalled.
TEST_F(SystolicRun, ConfigRunsOnScaleSimsBuffersAndBandwidth) {
    write("t.csv", small_gemm);
    write("user.cfg", scale_cfg("USER"));
    write("calc.cfg", scale_cfg("CALC"));
    auto r = sr("--topology t.csv --config user.cfg --out user");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(" stall cycles, PASS"), std::string::npos) << r.out;
    r = sr("--topology t.csv --config calc.cfg --out calc");
    ASSERT_EQ(r.status, 0) << r.err;
    const std::string user = slurp(path("user/COMPUTE_REPORT.csv")),
                      calc = slurp(path("calc/COMPUTE_REPORT.csv"));
    const auto j = nlohmann::json::parse(slurp(path("user/report.json")));
    EXPECT_EQ(j.at("memory").at("buffers"), "double");
    EXPECT_EQ(j.at("memory").at("interface_bandwidth"), "USER");
    EXPECT_EQ(j.at("memory").at("a_sram"), 65536);
    EXPECT_EQ(j.at("memory").at("dram_bandwidth"), 1);  // one int8 word
    std::uint64_t user_stalls = 0, calc_stalls = 0;
    for (std::size_t i = 0; i < 4; ++i) {
        SCOPED_TRACE(i);
        const auto u = by_name(user, i), c = by_name(calc, i);
        ASSERT_EQ(u.at("Pass"), "PASS");
        ASSERT_EQ(c.at("Pass"), "PASS");
        const std::uint64_t edges = std::stoull(u.at("Advance Edges"));
        EXPECT_EQ(c.at("Advance Edges"), u.at("Advance Edges"));  // the plan's edges never change
        const std::uint64_t us = std::stoull(u.at("Stall Cycles")), cs = std::stoull(c.at("Stall Cycles"));
        EXPECT_EQ(std::stoull(u.at("Total Cycles")), edges - 1 + us);
        EXPECT_EQ(std::stoull(c.at("Total Cycles")), edges - 1 + cs);
        EXPECT_GE(us, cs);
        user_stalls += us;
        calc_stalls += cs;
        const auto& use = j.at("layers")[i].at("memory_use");
        const std::uint64_t dram = use.at("a").at("dram").get<std::uint64_t>() +
                                   use.at("b").at("dram").get<std::uint64_t>() +
                                   use.at("c").at("dram").get<std::uint64_t>();
        EXPECT_GT(dram, 0u);
        EXPECT_GE(std::stoull(u.at("Total Cycles (incl. prefetch)")), dram);
        EXPECT_GE(std::stoull(u.at("Total Cycles (incl. prefetch)")), std::stoull(u.at("Total Cycles")));
        const auto bw = by_name(slurp(path("calc/BANDWIDTH_REPORT.csv")), i);
        if (us > 0 && bw.at("Zero-Stall DRAM Bytes/Cycle") != "inf") {
            EXPECT_GT(std::stod(bw.at("Zero-Stall DRAM Bytes/Cycle")), 1.0);
        }
        EXPECT_GT(std::stod(bw.at("Avg IFMAP SRAM BW")), 0.0);
        EXPECT_EQ(bw.at("Array"), "4x4");
    }
    EXPECT_GT(user_stalls, calc_stalls);
    // The same reports from job processes, whose command lines carry the configuration.
    r = sr("--topology t.csv --config user.cfg --jobs 2 --out par");
    ASSERT_EQ(r.status, 0) << r.err;
    for (const char* f :
         {"COMPUTE_REPORT.csv", "BANDWIDTH_REPORT.csv", "TRAFFIC_REPORT.csv", "report.json"}) {
        SCOPED_TRACE(f);
        EXPECT_EQ(slurp(path(std::string("par/") + f)), slurp(path(std::string("user/") + f)));
    }
    r = sr("--topology t.csv --config user.cfg --emit-jobs --out jobs");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(" --config " + path("user.cfg").string() + " "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--array"), std::string::npos) << r.out;
}

// The figures the counting rules give one job, worked out here from the shapes alone
// (docs/dataflows.md): os tiles of R x C, each K + R + C - 2 edges; ws and is tiles of C stationary
// columns (P for ws, M for is), each ceil(K / L) folds of L = min(K, R) terms that preload in R
// edges and stream T = M (ws) or P (is) rows in T + R + C - 2.
struct job_counts {
    std::uint64_t tiles = 0, preload = 0, advance = 0, padded = 0;
};
job_counts counts_of(const std::string& df, std::uint64_t m, std::uint64_t k, std::uint64_t p,
                     std::uint64_t r, std::uint64_t c) {
    if (df == "os") {
        const std::uint64_t tiles = ceil_div(m, r) * ceil_div(p, c);
        return {tiles, 0, tiles * (k + r + c - 2), tiles * r * c * k};
    }
    const std::uint64_t t = df == "ws" ? m : p, extent = df == "ws" ? p : m;
    const std::uint64_t tiles = ceil_div(extent, c), folds = ceil_div(k, std::min(k, r));
    return {tiles, tiles * folds * r, tiles * folds * (t + r + c - 2), tiles * folds * r * c * t};
}

// SCALE-Sim's Total Cycles, its own way: os folds of K + R + C - 2 cycles; ws (Sr = K rows, Sc = P
// columns, T = M) and is (Sr = K, Sc = M, T = P) folds of R cycles to load the stationary block and
// R + C + T - 2 to stream, over ceil(Sr / R) x ceil(Sc / C) folds; the last 0-based cycle.
std::uint64_t scale_sim_cycles(const std::string& df, std::uint64_t m, std::uint64_t k, std::uint64_t p,
                               std::uint64_t r, std::uint64_t c) {
    if (df == "os") return ceil_div(m, r) * ceil_div(p, c) * (k + r + c - 2) - 1;
    const std::uint64_t sc = df == "ws" ? p : m, t = df == "ws" ? m : p;
    return ceil_div(k, r) * ceil_div(sc, c) * (2 * r + c + t - 2) - 1;
}

// A sweep over dataflows: one row per (array, dataflow, layer), in the order given, every layer
// checked by the scoreboard in every dataflow (the same operands: they depend on the seed and the
// LayerID only), and each row's edges and cycles those of the counting rules and of SCALE-Sim.
TEST_F(SystolicRun, DataflowSweepCountsEachDataflowByItsRules) {
    write("t.csv", small_gemm);
    const std::uint64_t shapes[4][3] = {{6, 5, 10}, {9, 3, 1}, {4, 4, 4}, {1, 17, 33}};  // M, N (our P), K
    const std::pair<std::uint64_t, std::uint64_t> arrays[] = {{4, 4}, {3, 5}};
    const char* dataflows[] = {"ws", "os", "is"};
    for (const char* dtype : {"int8", "int32"}) {
        SCOPED_TRACE(dtype);
        const std::string out = dtype;
        const auto r =
            sr("--topology t.csv --array 4,3x5 --dataflow ws,os,is --dtype " + out + " --out " + out);
        ASSERT_EQ(r.status, 0) << r.err;
        EXPECT_NE(r.out.find("4x4       ws 4 layers: "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("3x5       is 4 layers: "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("24 jobs, PASS"), std::string::npos) << r.out;
        const std::string compute = slurp(path(out + "/COMPUTE_REPORT.csv")),
                          traffic = slurp(path(out + "/TRAFFIC_REPORT.csv")),
                          bandwidth = slurp(path(out + "/BANDWIDTH_REPORT.csv"));
        ASSERT_EQ(csv_rows(compute).size(), 24u);
        const auto j = nlohmann::json::parse(slurp(path(out + "/report.json")));
        EXPECT_EQ(j.at("dataflows"), (std::vector<std::string>{"ws", "os", "is"}));
        ASSERT_EQ(j.at("arrays").size(), 6u);
        std::size_t row = 0;
        for (std::size_t a = 0; a < 2; ++a)
            for (std::size_t d = 0; d < 3; ++d) {
                const auto [R, C] = arrays[a];
                const std::string df = dataflows[d], array = std::to_string(R) + "x" + std::to_string(C);
                const auto& totals = j.at("arrays")[a * 3 + d];
                EXPECT_EQ(totals.at("array"), array);
                EXPECT_EQ(totals.at("dataflow"), df);
                std::uint64_t preload_sum = 0;
                for (std::uint64_t i = 0; i < 4; ++i, ++row) {
                    SCOPED_TRACE(array + " " + df + " layer " + std::to_string(i));
                    const std::uint64_t m = shapes[i][0], p = shapes[i][1], k = shapes[i][2];
                    const job_counts want = counts_of(df, m, k, p, R, C);
                    const auto got = by_name(compute, row);
                    EXPECT_EQ(got.at("LayerID"), std::to_string(i));
                    EXPECT_EQ(got.at("Array"), array);
                    EXPECT_EQ(got.at("Dataflow"), df);
                    EXPECT_EQ(got.at("Pass"), "PASS");
                    EXPECT_EQ(got.at("Tiles"), std::to_string(want.tiles));
                    EXPECT_EQ(got.at("Preload Edges"), std::to_string(want.preload));
                    EXPECT_EQ(got.at("Advance Edges"), std::to_string(want.advance));
                    EXPECT_EQ(got.at("MACs Padded"), std::to_string(want.padded));
                    EXPECT_EQ(got.at("MACs Real"), std::to_string(m * k * p));
                    EXPECT_EQ(got.at("Stall Cycles"), "0");
                    EXPECT_EQ(got.at("Total Cycles"), std::to_string(want.preload + want.advance - 1));
                    EXPECT_EQ(got.at("Total Cycles"), std::to_string(scale_sim_cycles(df, m, k, p, R, C)));
                    preload_sum += want.preload;
                    // Every element of C checked against the reference (the same exact integer sum in
                    // every dataflow), and written once, as accumulators (int32 for int8, int64 for int32).
                    const auto& layer = j.at("layers")[row];
                    EXPECT_EQ(layer.at("dataflow"), df);
                    EXPECT_EQ(layer.at("scoreboard").at("checked"), m * p);
                    EXPECT_EQ(layer.at("scoreboard").at("mismatches"), 0);
                    EXPECT_EQ(layer.at("real_outputs"), m * p);
                    const auto t = by_name(traffic, row);
                    EXPECT_EQ(t.at("Dataflow"), df);
                    EXPECT_EQ(t.at("C Write Bytes"), std::to_string(m * p * (out == "int8" ? 4 : 8)));
                    EXPECT_EQ(by_name(bandwidth, row).at("Dataflow"), df);
                }
                EXPECT_EQ(totals.at("preload_edges"), preload_sum);
            }
    }
}

// A dataflow sweep through job files: the lines name every dataflow of the run and each its job's,
// and the merged reports are the run's in one process, byte for byte.
TEST_F(SystolicRun, DataflowSweepMergesFromJobFiles) {
    write("t.csv", small_gemm);
    auto r = sr("--topology t.csv --array 4,3 --dataflow ws,os,is --out seq");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr("--topology t.csv --array 4,3 --dataflow ws,os,is --jobs 2 --out par");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr("--topology t.csv --array 4,3 --dataflow ws,os,is --emit-jobs --out jobs");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 24);
    EXPECT_NE(r.out.find(" --array 4x4,3x3 --dataflow ws,os,is "), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(" --job 3x3:is:2 --job-out " + path("jobs/job-3x3-is-0002.json").string() + " "),
              std::string::npos)
        << r.out;
    expect_jobs_merge_into_the_same_reports(r.out, 24);
    const auto rows = csv_rows(slurp(path("seq/COMPUTE_REPORT.csv")));
    ASSERT_EQ(rows.size(), 24u);
    EXPECT_EQ(rows[0][11] + " " + rows[0][19], "4x4 ws");
    EXPECT_EQ(rows[4][11] + " " + rows[4][19], "4x4 os");
    EXPECT_EQ(rows[8][11] + " " + rows[8][19], "4x4 is");
    EXPECT_EQ(rows[12][11] + " " + rows[12][19], "3x3 ws");

    // One job of the run, by its ID, writes the file its line writes.
    r = sr("--topology t.csv --array 4,3 --dataflow ws,os,is --job 4x4:is:3 --job-out one.json");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(path("one.json")), slurp(path("jobs/job-4x4-is-0003.json")));
    // A missing job is named with its dataflow; a job of another run (its dataflows differ) is refused.
    fs::remove(path("jobs/job-4x4-is-0003.json"));
    r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(
        r.err,
        "systolic-run: error: jobs: no record for layer 3 on 4x4 in is (23 of 24 jobs present); run line 12 "
        "of the --emit-jobs output again (with Slurm, sbatch --array=12)\n");
    r = sr("--topology t.csv --array 4,3 --dataflow os,ws,is --job 4x4:is:3 --job-out jobs/other.json");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("the records come from different runs"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(path("merged2/COMPUTE_REPORT.csv")));
}

// The configuration's Dataflow runs its layers in that dataflow on SCALE-Sim's double-buffered
// scratchpads: the preload edges are the rules', SCALE-Sim's Total Cycles are the preload and
// advance edges - 1 plus the stalls, and the job lines carry the configuration, not --dataflow.
TEST_F(SystolicRun, ConfigDataflowRunsStationaryOnScaleSimsBuffers) {
    write("t.csv", small_gemm);
    const std::uint64_t shapes[4][3] = {{6, 5, 10}, {9, 3, 1}, {4, 4, 4}, {1, 17, 33}};  // M, N (our P), K
    for (const char* df : {"ws", "is"}) {
        for (const char* mode : {"USER", "CALC"}) {
            SCOPED_TRACE(std::string(df) + " " + mode);
            std::string cfg = scale_cfg(mode);
            cfg.replace(cfg.find("Dataflow : os"), 13, std::string("Dataflow : ") + df);
            const std::string name = std::string(df) + mode;
            write(name + ".cfg", cfg);
            const auto r = sr("--topology t.csv --config " + name + ".cfg --out " + name);
            ASSERT_EQ(r.status, 0) << r.err;
            EXPECT_NE(r.out.find("4x4       " + std::string(df) + "    0 A "), std::string::npos) << r.out;
            const std::string compute = slurp(path(name + "/COMPUTE_REPORT.csv"));
            const auto j = nlohmann::json::parse(slurp(path(name + "/report.json")));
            EXPECT_EQ(j.at("memory").at("buffers"), "double");
            EXPECT_EQ(j.at("dataflows"), (std::vector<std::string>{df}));
            for (std::uint64_t i = 0; i < 4; ++i) {
                SCOPED_TRACE(i);
                const std::uint64_t m = shapes[i][0], p = shapes[i][1], k = shapes[i][2];
                const job_counts want = counts_of(df, m, k, p, 4, 4);
                const auto got = by_name(compute, i);
                EXPECT_EQ(got.at("Pass"), "PASS");
                EXPECT_EQ(got.at("Dataflow"), df);
                EXPECT_EQ(got.at("Preload Edges"), std::to_string(want.preload));
                EXPECT_EQ(got.at("Advance Edges"), std::to_string(want.advance));
                EXPECT_EQ(std::stoull(got.at("Total Cycles")),
                          want.preload + want.advance - 1 + std::stoull(got.at("Stall Cycles")));
                EXPECT_GE(std::stoull(got.at("Total Cycles (incl. prefetch)")),
                          std::stoull(got.at("Total Cycles")));
                EXPECT_GT(j.at("layers")[i].at("memory_use").at("a").at("dram").get<std::uint64_t>(), 0u);
            }
        }
    }
    auto r = sr("--topology t.csv --config wsUSER.cfg --emit-jobs --out jobs");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(" --job 4x4:ws:3 "), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("--dataflow"), std::string::npos) << r.out;
    r = sr("--topology t.csv --config wsUSER.cfg --jobs 2 --out par");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(path("par/report.json")), slurp(path("wsUSER/report.json")));
}

// --energy: every job's counts priced, one ENERGY_REPORT.csv row per (layer, array, dataflow) whose
// total is the sum of its components and whose pJ per MAC is that total over the layer's M x K x P
// (from the topology), totals per (array, dataflow) in report.json; the same bytes in one process,
// in --jobs processes and merged from emitted job files. Without --energy no file and no key.
TEST_F(SystolicRun, EnergyReportPerLayerAndTheSameBytesHoweverRun) {
    write("t.csv", small_gemm);
    const std::string run = "--topology t.csv --array 4,3 --dataflow os,ws --energy horowitz45";
    auto r = sr(run + " --out seq");
    ASSERT_EQ(r.status, 0) << r.err;
    write("seq.out", r.out);
    r = sr(run + " --jobs 2 --out par");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr(run + " --emit-jobs --out jobs");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NE(r.out.find(" --energy horowitz45"), std::string::npos) << r.out;
    // The summary gives each (array, dataflow)'s network energy.
    const std::string summary = slurp(path("seq.out"));
    for (const char* line :
         {"4x4       os energy (horowitz45, 45 nm): ", "3x3       ws energy (horowitz45, 45 nm): "})
        EXPECT_NE(summary.find(line), std::string::npos) << summary;
    expect_jobs_merge_into_the_same_reports(r.out, 16);
    EXPECT_EQ(slurp(path("par/ENERGY_REPORT.csv")), slurp(path("seq/ENERGY_REPORT.csv")));
    EXPECT_EQ(slurp(path("merged/ENERGY_REPORT.csv")), slurp(path("seq/ENERGY_REPORT.csv")));

    const std::string csv = slurp(path("seq/ENERGY_REPORT.csv"));
    EXPECT_EQ(csv.substr(0, csv.find('\n')),
              "LayerID, Layer, Array, Dataflow, Total pJ, pJ per MAC, pe pJ, registers pJ, a_sram pJ, "
              "b_sram pJ, c_sram pJ, dram pJ, links pJ, Total mm2,");
    const auto rows = csv_rows(csv);
    ASSERT_EQ(rows.size(), 16u);
    const std::uint64_t shapes[4][3] = {{6, 5, 10}, {9, 3, 1}, {4, 4, 4}, {1, 17, 33}};  // M, N (P), K
    const char* arrays[] = {"4x4", "3x3"};
    const char* dataflows[] = {"os", "ws"};
    std::map<std::string, double> network_pj;
    for (std::size_t i = 0; i < rows.size(); ++i) {
        SCOPED_TRACE(i);
        const auto& row = rows[i];
        ASSERT_EQ(row.size(), 14u);
        EXPECT_EQ(row[0], std::to_string(i % 4));
        EXPECT_EQ(row[1], std::string(1, char('A' + i % 4)));
        EXPECT_EQ(row[2], arrays[i / 8]);
        EXPECT_EQ(row[3], dataflows[i / 4 % 2]);
        const double total = std::stod(row[4]);
        double sum = 0;
        for (std::size_t c = 6; c < 13; ++c)
            sum += std::stod(row[c]);
        EXPECT_GT(total, 0);
        EXPECT_NEAR(sum, total, 1e-8 * total);
        const double macs = double(shapes[i % 4][0] * shapes[i % 4][1] * shapes[i % 4][2]);
        EXPECT_NEAR(std::stod(row[5]), total / macs, 1e-8 * total / macs);
        EXPECT_GT(std::stod(row[13]), 0);
        network_pj[std::string(arrays[i / 8]) + dataflows[i / 4 % 2]] += total;
    }
    const auto j = nlohmann::json::parse(slurp(path("seq/report.json")));
    EXPECT_EQ(j.at("energy").at("table"), "horowitz45");
    double all_macs = 0;
    for (const auto& sh : shapes)
        all_macs += double(sh[0] * sh[1] * sh[2]);
    for (const auto& a : j.at("arrays")) {
        const std::string key = a.at("array").get<std::string>() + a.at("dataflow").get<std::string>();
        SCOPED_TRACE(key);
        const double pj = a.at("energy").at("total_pj").get<double>();
        EXPECT_NEAR(pj, network_pj.at(key), 1e-8 * pj);
        EXPECT_NEAR(a.at("energy").at("pj_per_mac").get<double>(), pj / all_macs, 1e-9 * pj / all_macs);
    }
    // Every layer's counts: one action per PE and edge.
    for (const auto& l : j.at("layers")) {
        const auto& e = l.at("energy");
        const std::uint64_t edges =
            l.at("advance_edges").get<std::uint64_t>() + l.at("preload_edges").get<std::uint64_t>();
        EXPECT_EQ(e.at("mac_random").get<std::uint64_t>() + e.at("mac_gated").get<std::uint64_t>() +
                      e.at("idle").get<std::uint64_t>() + e.at("preload").get<std::uint64_t>(),
                  edges * l.at("array_rows").get<std::uint64_t>() * l.at("array_cols").get<std::uint64_t>());
    }

    r = sr("--topology t.csv --array 4 --out plain");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_FALSE(fs::exists(path("plain/ENERGY_REPORT.csv")));
    EXPECT_EQ(slurp(path("plain/report.json")).find("energy"), std::string::npos);
}

// A table that cannot be read is one line naming the file before anything runs, exit 2, nothing
// written; --tech-node needs --energy; --inject miscount-gated needs it and is caught with it.
TEST_F(SystolicRun, EnergyUsageErrorsAndThePlantedMiscount) {
    write("t.csv", small_gemm);
    write("bad.json", "{");
    auto r = sr("--topology t.csv --array 4 --energy bad.json --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err.rfind("systolic-run: error: bad.json: ", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(path("o")));
    r = sr("--topology t.csv --array 4 --energy bad.json --emit-jobs --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.out, "");
    r = sr("--topology t.csv --array 4 --tech-node 7 --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: --tech-node needs --energy: it scales that table's energies and areas to "
              "another node\n");
    r = sr("--topology t.csv --array 4 --energy horowitz45 --tech-node 22 --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(fs::exists(path("o")));
    r = sr("--topology t.csv --array 4 --inject miscount-gated --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("--inject miscount-gated needs --energy"), std::string::npos) << r.err;
    r = sr("--topology t.csv --array 4 --inject miscount-gated --energy horowitz45 --out o");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.out.find("FAIL"), std::string::npos) << r.out;
    r = sr("--merge o --energy horowitz45 --out m");
    EXPECT_EQ(r.status, 2);
}

// A bad configuration is one line naming the file, the line and the key; nothing is written.
TEST_F(SystolicRun, BadConfigIsOneLineNamingFileLineAndKey) {
    write("t.csv", small_gemm);
    write("typo.cfg", scale_cfg("USER", "IfmapSramSizekB: 64\n"));
    auto r = sr("--topology t.csv --config typo.cfg --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(
        r.err,
        "systolic-run: error: typo.cfg:15: key 'IfmapSramSizekB' is not a SCALE-Sim configuration key in "
        "[architecture_presets]\n");
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(path("o")));
    std::string rs = scale_cfg("CALC");
    rs.replace(rs.find("Dataflow : os"), 13, "Dataflow : rs");
    write("rs.cfg", rs);
    r = sr("--topology t.csv --config rs.cfg --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-run: error: rs.cfg:14: key 'Dataflow': 'rs' is not os, ws or is\n");
    EXPECT_FALSE(fs::exists(path("o")));
    r = sr("--topology t.csv --config missing.cfg --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err.rfind("systolic-run: error: missing.cfg", 0), 0u) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    write("user.cfg", scale_cfg("USER"));
    r = sr("--topology t.csv --config user.cfg --array 8 --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(
        r.err,
        "systolic-run: error: --config gives the array (ArrayHeight x ArrayWidth): no --array or --sweep\n");
    r = sr("--topology t.csv --config user.cfg --dataflow ws --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-run: error: --config gives the dataflow (Dataflow): no --dataflow\n");
    EXPECT_FALSE(fs::exists(path("o")));
    // A C scratchpad smaller than one tile's outputs (4x4 int32 is 64 bytes; 1 kB holds them, so
    // the array is made large instead: 32x32 int32 outputs are 4 kB).
    std::string big = scale_cfg("USER");
    big.replace(big.find("ArrayHeight:    4"), 17, "ArrayHeight:    32");
    big.replace(big.find("ArrayWidth:     4"), 17, "ArrayWidth:     32");
    big.replace(big.find("OfmapSramSzkB:   64"), 19, "OfmapSramSzkB:   1");
    write("big.cfg", big);
    write("wide.csv", "Layer, M, N, K,\nW, 32, 32, 8,\n");
    r = sr("--topology wide.csv --config big.cfg --out o");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err.rfind("systolic-run: error: --config big.cfg: layer 0 (W) on 32x32 in os: ", 0), 0u)
        << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    EXPECT_FALSE(fs::exists(path("o")));
}

// --merge reads job files as it reads topologies: a tampered value is refused with the file and the
// field (a negative M once became 18446744073709551611 and passed), and nothing is written.
TEST_F(SystolicRun, MergeChecksEveryFieldOfAJobFile) {
    write("t.csv", "Layer, M, N, K,\nA, 6, 5, 10,\n");
    ASSERT_NO_FATAL_FAILURE(emit_run_and_merge("--topology t.csv --array 2"));
    const std::string file = "jobs/job-2x2-os-0000.json";
    const std::string good = slurp(path(file));
    std::string bad = good;
    const auto at = bad.find("\"m\": 6");
    ASSERT_NE(at, std::string::npos) << good;
    bad.replace(at, 6, "\"m\": -5");
    write(file, bad);
    auto r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-run: error: " + file + ": field 'm': expected an unsigned integer, got -5\n");
    EXPECT_EQ(r.out, "");
    EXPECT_FALSE(fs::exists(path("merged2/COMPUTE_REPORT.csv")));
    bad = good;
    bad.replace(bad.find("\"layer\": \"A\""), 12, "\"layer\": \"\xff\"");
    write(file, bad);
    r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find(": not UTF-8 text (byte 0xff at column"), std::string::npos) << r.err;
}

// Fields that are each in range but disagree with each other were merged as they came: an edited M
// or advance_edges gave reports whose counts no longer follow from the shapes, and a layer renamed
// in one array's file gave one layer two names. Each record's counts are worked out again from its
// shape by the model's counting rule (count_job), and each layer must be the same in every file.
TEST_F(SystolicRun, MergeRefusesRecordsWhoseCountsDisagree) {
    write("t.csv", "Layer, M, N, K,\nA, 6, 5, 10,\nB, 3, 4, 2,\n");
    ASSERT_NO_FATAL_FAILURE(emit_run_and_merge("--topology t.csv --array 2,3 --dataflow os,ws"));
    const std::string file = "jobs/job-2x2-os-0000.json", ws_file = "jobs/job-3x3-ws-0000.json";
    const std::string good = slurp(path(file)), ws_good = slurp(path(ws_file));
    // M=6 K=10 P=5 on 2x2 in os: 9 tiles of 10 + 2 + 2 - 2 = 12 edges.
    ASSERT_NE(good.find("\"advance_edges\": 108,"), std::string::npos) << good;
    const struct {
        std::string file, from, to, says;
    } cases[] = {
        {file, "\"advance_edges\": 108,", "\"advance_edges\": 109,",
         "field 'advance_edges': 109, but M=6 K=10 P=5 on 2x2 in os counts 108 (docs/counting.md)"},
        {file, "\"m\": 6,", "\"m\": 7,", "field 'tiles': 9, but M=7 K=10 P=5 on 2x2 in os counts 12"},
        {file, "\"macs_real\": 300,", "\"macs_real\": 299,", "field 'macs_real': 299, but"},
        {ws_file, "\"preload_edges\": ", "\"preload_edges\": 1",
         "field 'preload_edges': 124, but M=6 K=10 P=5 on 3x3 in ws counts 24"},
        {file, "\"layer\": \"A\"", "\"layer\": \"Z\"", "field 'layer': layer 0 is 'A' here but 'Z' in "},
        {file, "\"layer_id\": 0,", "\"layer_id\": 1,", "field 'layer': layer 1 is 'B' here but 'A' in "},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.to);
        const std::string& orig = c.file == file ? good : ws_good;
        std::string bad = orig;
        const auto at = bad.find(c.from);
        ASSERT_NE(at, std::string::npos) << orig;
        bad.replace(at, c.from.size(), c.to);
        write(c.file, bad);
        const auto r = sr("--merge jobs --out merged2");
        EXPECT_EQ(r.status, 2) << r.out;
        EXPECT_EQ(r.err.rfind("systolic-run: error: ", 0), 0u) << r.err;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
        EXPECT_NE(r.err.find("jobs/job-"), std::string::npos) << r.err;  // the file
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_EQ(r.out, "");
        EXPECT_FALSE(fs::exists(path("merged2")));
        write(c.file, orig);
    }
    const auto r = sr("--merge jobs --out merged2");
    EXPECT_EQ(r.status, 0) << r.err;
}

TEST_F(SystolicRun, SweepFile) {
    write("t.csv", small_gemm);
    write("sizes.txt", "# arrays\n2\n4, 3  # and a rectangle\n2x5\n");
    auto r = sr("--topology t.csv --sweep sizes.txt --out a");
    ASSERT_EQ(r.status, 0) << r.err;
    r = sr("--topology t.csv --array 2,4,3,2x5 --out b");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(path("a/report.json")), slurp(path("b/report.json")));
    write("bad.txt", "2\n4x\n");
    r = sr("--topology t.csv --sweep bad.txt --out c");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "systolic-run: error: bad.txt:2: '4x' is not an array size (N or RxC)\n");
}

#ifdef SYSTOLIC_GNU_PARALLEL
// The cluster path on one machine: the job lines through GNU parallel on two local slots (the
// --sshlogin syntax a cluster user gives with host names), merged: the sequential run's bytes.
TEST_F(SystolicRun, SweepThroughGnuParallelEqualsSequential) {
    write("t.csv", small_gemm);
    write(
        "c.csv",
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "c1, 9, 9, 3, 3, 2, 5, 2,\nc2, 4, 4, 1, 1, 7, 3, 1,\n");
    for (const char* topo : {"t.csv", "c.csv"}) {
        SCOPED_TRACE(topo);
        const std::string t = topo, seq = "seq_" + t, jobs = "jobs_" + t, merged = "merged_" + t;
        auto r = sr("--topology " + t + " --array 2,5,3 --dtype bf16 --out " + seq);
        ASSERT_EQ(r.status, 0) << r.err;
        r = sr("--topology " + t + " --array 2,5,3 --dtype bf16 --emit-jobs --out " + jobs);
        ASSERT_EQ(r.status, 0) << r.err;
        write(jobs + ".txt", r.out);
        r = run_tool(SYSTOLIC_GNU_PARALLEL, "--will-cite --sshlogin 2/: --halt now,fail=1 <" + jobs + ".txt");
        ASSERT_EQ(r.status, 0) << r.err;
        r = sr("--merge " + jobs + " --out " + merged);
        ASSERT_EQ(r.status, 0) << r.err;
        for (const char* f : {"COMPUTE_REPORT.csv", "TRAFFIC_REPORT.csv", "report.json"}) {
            SCOPED_TRACE(f);
            const std::string want = slurp(path(seq + "/" + f));
            EXPECT_FALSE(want.empty());
            EXPECT_EQ(slurp(path(merged + "/" + f)), want);
        }
    }
}
#endif

// The Slurm batch script runs line SLURM_ARRAY_TASK_ID of the job file, and refuses anything else.
TEST_F(SystolicRun, SlurmArrayScriptRunsOneLine) {
    write("t.csv", small_gemm);
    auto r = sr("--topology t.csv --array 2,4 --emit-jobs --out jobs");
    ASSERT_EQ(r.status, 0) << r.err;
    write("jobs.txt", r.out);
    const std::string script = std::string(SYSTOLIC_SCRIPTS) + "/slurm_sweep.sh";
    r = run_tool("SLURM_ARRAY_TASK_ID=7 bash " + script, "jobs.txt");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(files_in("jobs"), 1u);
    EXPECT_TRUE(fs::exists(path("jobs/job-4x4-os-0002.json")));
    r = run_tool("SLURM_ARRAY_TASK_ID=9 bash " + script, "jobs.txt");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "slurm_sweep.sh: jobs.txt has no line 9 (8 jobs)\n");
    r = run_tool("SLURM_ARRAY_TASK_ID= bash " + script, "jobs.txt");
    EXPECT_EQ(r.status, 2);
    // A task that fails says which array index it is, in the task's output file, and keeps the status.
    write("gone.csv", small_gemm);
    r = sr("--topology gone.csv --array 2,4 --emit-jobs --out jobs2");
    ASSERT_EQ(r.status, 0) << r.err;
    write("jobs2.txt", r.out);
    fs::remove(path("gone.csv"));
    r = run_tool("SLURM_ARRAY_TASK_ID=3 bash " + script, "jobs2.txt");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(
        r.err.find("\nslurm_sweep.sh: array task 3 (job 2x2:os:2) could not run (exit 2); after fixing the "
                   "cause, sbatch --array=3 runs it again\n"),
        std::string::npos)
        << r.err;
    EXPECT_EQ(files_in("jobs2"), 0u);
    write("bad.csv", "Layer, M, N, K,\nA, 6, 5, 10,\n");
    r = sr("--topology bad.csv --array 4 --inject global-skew --emit-jobs --out jobs3");
    ASSERT_EQ(r.status, 0) << r.err;
    write("jobs3.txt", r.out);
    r = run_tool("SLURM_ARRAY_TASK_ID=1 bash " + script, "jobs3.txt");
    EXPECT_EQ(r.status, 1);
    const std::string last =
        "\nslurm_sweep.sh: array task 1 (job 4x4:os:0): the layer failed its checks (exit 1); "
        "its record is written and the merged report says FAIL\n";
    EXPECT_TRUE(r.err.size() > last.size() &&
                r.err.compare(r.err.size() - last.size(), last.size(), last) == 0)
        << r.err;
    EXPECT_EQ(files_in("jobs3"), 1u);
}

#ifdef SYSTOLIC_PYTHON_MPL
// The sweep plot draws from a sweep's report.json, and refuses a run of one array size.
TEST_F(SystolicRun, SweepPlot) {
    write("t.csv", small_gemm);
    ASSERT_EQ(sr("--topology t.csv --array 2,4,3 --out s").status, 0);
    const std::string draw = std::string("/usr/bin/python3 ") + SYSTOLIC_SCRIPTS + "/draw_sweep.py";
    auto r = run_tool(draw, "s --out s.png");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(slurp(path("s.png")).substr(1, 3), "PNG");
    ASSERT_EQ(sr("--topology t.csv --array 4 --out one").status, 0);
    r = run_tool(draw, "one");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err, "draw_sweep.py: error: one/report.json holds 1 array size; a sweep needs two or more\n");
}
#endif

// A planted fault fails its layers, not the run: the reports are written, those rows say FAIL,
// the exit status is 1, and job processes give the same reports.
TEST_F(SystolicRun, PlantedFaultFailsTheLayersItBreaks) {
    write("t.csv", "Layer, M, N, K,\nA, 6, 5, 10,\nB, 9, 3, 1,\nC, 4, 4, 4,\n");
    auto r = sr("--topology t.csv --array 4 --inject global-skew --out seq");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_NE(r.out.find("3 jobs, FAIL"), std::string::npos) << r.out;
    // Only tiles away from the origin are skewed wrongly: C is one tile at (0, 0).
    const auto rows = csv_rows(slurp(path("seq/COMPUTE_REPORT.csv")));
    ASSERT_EQ(rows.size(), 3u);
    EXPECT_EQ(rows[0][17] + rows[1][17] + rows[2][17], "FAILFAILPASS");
    const auto j = nlohmann::json::parse(slurp(path("seq/report.json")));
    EXPECT_FALSE(j.at("pass").get<bool>());
    EXPECT_EQ(j.at("inject"), "global-skew");
    EXPECT_NE(j.at("layers")[0].at("error").get<std::string>().find("watchdog"), std::string::npos);
    r = sr("--topology t.csv --array 4,2 --inject global-skew --jobs 2 --out par");
    EXPECT_EQ(r.status, 1) << r.err;
    r = sr("--topology t.csv --array 4,2 --inject global-skew --out seq2");
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_EQ(slurp(path("par/report.json")), slurp(path("seq2/report.json")));
    r = sr("--topology t.csv --array 4 --inject no-mask --out nomask");
    EXPECT_EQ(r.status, 1);
    r = sr("--topology t.csv --array 4 --out clean");
    EXPECT_EQ(r.status, 0) << r.err;

    r = sr("--topology t.csv --array 4 --inject global-skew --engine functional --out x");
    EXPECT_EQ(r.status, 2);
    EXPECT_EQ(r.err,
              "systolic-run: error: --inject global-skew changes how the array is stepped: it needs --engine "
              "cycle\n");
    r = sr("--topology t.csv --array 4 --inject clear-between-k --out x");
    EXPECT_EQ(r.status, 2);
    r = sr("--topology t.csv --array 4 --inject bogus --out x");
    EXPECT_EQ(r.err, "systolic-run: error: --inject: unknown fault 'bogus'\n");
    EXPECT_FALSE(fs::exists(path("x/COMPUTE_REPORT.csv")));
}

// --expect, integers: C must equal the expected int32 accumulators, element for element. One element
// off fails that layer and the run (exit 1) with the reports written, in one process and in job
// processes alike.
TEST_F(SystolicRun, ExpectComparesIntegerAccumulatorsExactly) {
    write("t.csv", "Layer, M, N, K,\nL0, 3, 2, 2,\nL1, 2, 2, 3,\n");
    fs::create_directories(path("data"));
    fs::create_directories(path("want"));
    const std::int8_t a0[] = {1, 2, 3, 4, 5, 6}, b0[] = {1, -1, 2, 127};
    const std::int8_t a1[] = {-128, 127, 3, 0, 1, -1}, b1[] = {-128, 1, 127, 2, -128, 3};
    systolic::io::write_npy(p("data/L0.a.npy"), "|i1", 3, 2, a0, sizeof a0);
    systolic::io::write_npy(p("data/L0.b.npy"), "|i1", 2, 2, b0, sizeof b0);
    systolic::io::write_npy(p("data/L1.a.npy"), "|i1", 2, 3, a1, sizeof a1);
    systolic::io::write_npy(p("data/L1.b.npy"), "|i1", 3, 2, b1, sizeof b1);
    // Worked out here: C = A B in int32.
    std::int32_t c0[6], c1[4];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j)
            c0[i * 2 + j] = a0[i * 2] * b0[j] + a0[i * 2 + 1] * b0[2 + j];
    for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 2; ++j)
            c1[i * 2 + j] = a1[i * 3] * b1[j] + a1[i * 3 + 1] * b1[2 + j] + a1[i * 3 + 2] * b1[4 + j];
    ASSERT_EQ(c1[0], -128 * -128 + 127 * 127 + 3 * -128);
    systolic::io::write_npy(p("want/L0.c.npy"), "<i4", 3, 2, c0, sizeof c0);
    systolic::io::write_npy(p("want/L1.c.npy"), "<i4", 2, 2, c1, sizeof c1);
    auto r = sr("--topology t.csv --array 2 --data data --expect want --out res");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    auto rows = csv_rows(slurp(path("res/COMPUTE_REPORT.csv")));
    ASSERT_EQ(rows.size(), 2u);
    for (const auto& row : rows) {
        ASSERT_GE(row.size(), 25u);
        EXPECT_EQ(row[21], "pass");
        EXPECT_EQ(row[22], "0");
        EXPECT_EQ(row[23], "0");
    }
    auto j = nlohmann::json::parse(slurp(path("res/report.json")));
    EXPECT_EQ(j.at("layers")[1].at("expect").at("result"), "pass");
    EXPECT_EQ(j.at("layers")[1].at("expect").at("checked"), 4);

    // Without --expect every layer says none.
    r = sr("--topology t.csv --array 2 --data data --out plain");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_EQ(csv_rows(slurp(path("plain/COMPUTE_REPORT.csv")))[0][21], "none");

    // One element off by one: L1 fails, L0 still passes, the run exits 1 with its reports.
    c1[2] += 1;
    systolic::io::write_npy(p("want/L1.c.npy"), "<i4", 2, 2, c1, sizeof c1);
    for (const char* jobs : {"1", "2"}) {
        SCOPED_TRACE(jobs);
        const std::string out = std::string("off") + jobs;
        r = sr("--topology t.csv --array 2 --data data --expect want --jobs " + std::string(jobs) +
               " --out " + out);
        EXPECT_EQ(r.status, 1) << r.err;
        EXPECT_NE(r.out.find("expect: 1 of 4 elements differ from --expect's file"), std::string::npos)
            << r.out;
        EXPECT_NE(r.out.find("expect: C[1][0] = " + std::to_string(c1[2] - 1) + ", expected " +
                             std::to_string(c1[2])),
                  std::string::npos)
            << r.out;
        rows = csv_rows(slurp(path(out + "/COMPUTE_REPORT.csv")));
        ASSERT_EQ(rows.size(), 2u);
        EXPECT_EQ(rows[0][17], "PASS");
        EXPECT_EQ(rows[0][21], "pass");
        EXPECT_EQ(rows[1][17], "FAIL");
        EXPECT_EQ(rows[1][21], "fail");
        EXPECT_EQ(rows[1][22], "1");
        EXPECT_EQ(rows[1][23], "1");
        j = nlohmann::json::parse(slurp(path(out + "/report.json")));
        EXPECT_EQ(j.at("layers")[1].at("pass"), false);
        EXPECT_EQ(j.at("layers")[1].at("expect").at("failures"), 1);
        EXPECT_EQ(j.at("layers")[1].at("scoreboard").at("mismatches"), 0);
    }
}

// --expect, floats: within 2 gamma_K sum |a b| of the expected C (docs/networks.md). The test sums in
// long double and places the expected values inside and outside that bound.
TEST_F(SystolicRun, ExpectComparesFloatsWithinTheSummationBound) {
    constexpr int m = 2, k = 300, n = 3;
    write("t.csv", "Layer, M, N, K,\nF, 2, 3, 300,\n");
    fs::create_directories(path("data"));
    fs::create_directories(path("want"));
    std::vector<float> a(m * k), b(k * n);
    std::uint32_t x = 12345;
    auto next = [&] {
        x = x * 1664525u + 1013904223u;
        return float(int(x >> 8) % 2001 - 1000) / 997.0f;
    };
    for (auto& v : a)
        v = next();
    for (auto& v : b)
        v = next();
    systolic::io::write_npy(p("data/F.a.npy"), "<f4", m, k, a.data(), a.size() * 4);
    systolic::io::write_npy(p("data/F.b.npy"), "<f4", k, n, b.data(), b.size() * 4);
    std::vector<long double> exact(m * n), mag(m * n);
    for (int i = 0; i < m; ++i)
        for (int j = 0; j < n; ++j)
            for (int kk = 0; kk < k; ++kk) {
                exact[i * n + j] += (long double)a[i * k + kk] * b[kk * n + j];
                mag[i * n + j] += std::fabs((long double)a[i * k + kk] * b[kk * n + j]);
            }
    const long double u = 0x1p-24L, gamma = k * u / (1 - k * u);
    auto expect_with = [&](long double offset_in_gammas) {
        std::vector<float> c(m * n);
        for (int i = 0; i < m * n; ++i)
            c[i] = float(exact[i] + offset_in_gammas * gamma * mag[i]);
        systolic::io::write_npy(p("want/F.c.npy"), "<f4", m, n, c.data(), c.size() * 4);
        return sr("--topology t.csv --array 4 --dtype fp32 --data data --expect want --out res");
    };
    // The exact sum rounded once, and 1.5 gamma_K sum |a b| away: the model's own error is at most
    // gamma_K sum |a b|, so both are within 2 gamma_K.
    for (long double off : {0.0L, 1.5L, -1.5L}) {
        SCOPED_TRACE(double(off));
        const auto r = expect_with(off);
        EXPECT_EQ(r.status, 0) << r.out << r.err;
        const auto j = nlohmann::json::parse(slurp(path("res/report.json")));
        EXPECT_EQ(j.at("layers")[0].at("expect").at("result"), "pass");
        EXPECT_GT(j.at("layers")[0].at("expect").at("max_rel_error").get<double>(), 0.0);
    }
    // 4 gamma_K away is at least 3 gamma_K from the model's C: outside the bound.
    for (long double off : {4.0L, -4.0L}) {
        SCOPED_TRACE(double(off));
        const auto r = expect_with(off);
        EXPECT_EQ(r.status, 1) << r.out << r.err;
        EXPECT_NE(r.out.find("expect: 6 of 6 elements differ"), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("(tolerance "), std::string::npos) << r.out;
        const auto rows = csv_rows(slurp(path("res/COMPUTE_REPORT.csv")));
        EXPECT_EQ(rows[0][21], "fail");
        EXPECT_EQ(rows[0][22], "6");
    }
    // bf16 reads the same float32 files, rounding the operands: the float32 C is within its wider bound.
    std::vector<float> c(m * n);
    for (int i = 0; i < m * n; ++i)
        c[i] = float(exact[i]);
    systolic::io::write_npy(p("want/F.c.npy"), "<f4", m, n, c.data(), c.size() * 4);
    auto r = sr("--topology t.csv --array 4 --dtype bf16 --data data --expect want --out bf");
    EXPECT_EQ(r.status, 0) << r.out << r.err;
    // A NaN where the model computes a number is a failure, whatever the bound.
    c[4] = std::nanf("");
    systolic::io::write_npy(p("want/F.c.npy"), "<f4", m, n, c.data(), c.size() * 4);
    r = sr("--topology t.csv --array 4 --dtype fp32 --data data --expect want --out nan");
    EXPECT_EQ(r.status, 1) << r.out << r.err;
    EXPECT_NE(r.out.find("expect: C[1][1] = "), std::string::npos) << r.out;
}

// A missing expected file, one of the wrong dtype or shape, or an --expect that is not a directory:
// one line naming it, exit 2, before anything runs (no report).
TEST_F(SystolicRun, BadExpectedFilesAreOneLineAndExitTwo) {
    write("t.csv", "Layer, M, N, K,\nL0, 3, 2, 2,\n");
    fs::create_directories(path("data"));
    fs::create_directories(path("want"));
    const std::int8_t a[] = {1, 2, 3, 4, 5, 6}, b[] = {1, 0, 0, 1};
    systolic::io::write_npy(p("data/L0.a.npy"), "|i1", 3, 2, a, sizeof a);
    systolic::io::write_npy(p("data/L0.b.npy"), "|i1", 2, 2, b, sizeof b);
    const std::int32_t c[] = {1, 2, 3, 4, 5, 6};
    const float cf[] = {1, 2, 3, 4, 5, 6};
    const std::string run = "--topology t.csv --array 2 --data data --expect want --out bad";
    auto expect_bad = [&](const std::string& args, const std::string& err) {
        const auto r = sr(args);
        EXPECT_EQ(r.status, 2);
        EXPECT_EQ(r.err.substr(0, err.size()), err) << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_EQ(r.out, "");
        EXPECT_FALSE(fs::exists(path("bad/COMPUTE_REPORT.csv")));
    };
    expect_bad(run, "systolic-run: error: want/L0.c.npy: ");
    systolic::io::write_npy(p("want/L0.c.npy"), "<i4", 2, 3, c, sizeof c);
    expect_bad(run, "systolic-run: error: want/L0.c.npy is 2x3 but layer L0 has C (M x P) of 3x2\n");
    systolic::io::write_npy(p("want/L0.c.npy"), "<f4", 3, 2, cf, sizeof cf);
    expect_bad(run, "systolic-run: error: want/L0.c.npy: dtype '<f4' is not supported, expected int32");
    write("want/L0.c.npy", "not an npy file");
    expect_bad(run, "systolic-run: error: want/L0.c.npy");
    expect_bad("--topology t.csv --array 2 --data data --expect t.csv --out bad",
               "systolic-run: error: --expect t.csv is not a directory\n");
    expect_bad("--topology t.csv --array 2 --data data --expect nowhere --out bad",
               "systolic-run: error: --expect nowhere is not a directory\n");
    // The int8 C of fp32 operands: the dtype follows --dtype.
    systolic::io::write_npy(p("want/L0.c.npy"), "<i4", 3, 2, c, sizeof c);
    expect_bad("--topology t.csv --array 2 --data data --expect want --dtype fp32 --out bad",
               "systolic-run: error: data/L0.a.npy");
    EXPECT_EQ(files_in("bad"), 0u);
}

// Options that would change nothing are refused with what they need and why.
TEST_F(SystolicRun, OptionsThatChangeNothingAreRefusedWithTheReason) {
    write("g.csv", small_gemm);
    fs::create_directories(path("data"));
    const std::pair<const char*, const char*> cases[] = {
        {"--topology g.csv --job 4x4:0", "systolic-run: error: --job needs --job-out: "},
        {"--topology g.csv --job-out j.json", "systolic-run: error: --job-out needs --job: "},
        {"--topology g.csv --emit-jobs", "systolic-run: error: --emit-jobs needs --out: "},
        {"--merge .", "systolic-run: error: --merge needs --out: "},
        {"--topology g.csv --data data --seed 3 --out o",
         "systolic-run: error: --seed needs random operands (no --data): "},
        {"--topology g.csv --expect data --out o", "systolic-run: error: --expect needs --data: "},
    };
    for (const auto& [args, err] : cases) {
        SCOPED_TRACE(args);
        const auto r = sr(args);
        EXPECT_EQ(r.status, 2);
        EXPECT_EQ(r.err.substr(0, std::string(err).size()), err);
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1);
    }
    systolic::tb::testing::expect_rules_documented(sr("--help").out, "systolic-run");
}

}  // namespace
