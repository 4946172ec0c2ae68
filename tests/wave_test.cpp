// systolic-tb's waveform (--vcd, --vcd-pes), timeline (--trace) and progress bar (--progress),
// run as a user runs them and read back with real readers: GTKWave's vcd2fst and fst2vcd for the VCD,
// a JSON parser for the trace, the .npy reader for C.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "io/npy.h"
#include "vcd_reader.h"

namespace {

using namespace systolic::tb::testing;
using json = nlohmann::json;

constexpr std::uint64_t ps_per_ns = 1000;  // the VCD's timescale is SystemC's default resolution, 1 ps

class wave_test : public cli_fixture {
protected:
    // Runs systolic-tb with --vcd (and --json, --c-out), then passes the VCD through vcd2fst and
    // fst2vcd and parses what GTKWave printed.
    struct run_data {
        json report;
        vcd_data vcd;
        std::vector<std::int64_t> c;
    };

    run_data run_with_vcd(const std::string& args) {
        if (std::string(SYSTOLIC_VCD2FST).empty() || std::string(SYSTOLIC_FST2VCD).empty())
            ADD_FAILURE() << "vcd2fst/fst2vcd not found when configuring: install gtkwave (scripts/setup)";
        const auto r = run(args + " --vcd w.vcd --json r.json --c-out c.npy");
        EXPECT_EQ(r.status, 0) << r.err;
        run_data d;
        d.report = json::parse(slurp(path("r.json")));
        const auto conv = run_tool(SYSTOLIC_VCD2FST, p("w.vcd") + " " + p("w.fst"));
        EXPECT_EQ(conv.status, 0) << "vcd2fst refused the file: " << conv.err << conv.out;
        EXPECT_GT(std::filesystem::file_size(path("w.fst")), 0u);
        const auto back = run_tool(SYSTOLIC_FST2VCD, p("w.fst"));
        EXPECT_EQ(back.status, 0) << back.err;
        d.vcd = parse_vcd(back.out);
        const auto c = systolic::io::read_matrix(p("c.npy"), "<i8", "int64");
        d.c.resize(c.shape[0] * c.shape[1]);
        std::memcpy(d.c.data(), c.data.data(), d.c.size() * sizeof(std::int64_t));
        return d;
    }
};

// What the VCD says, checked against the report and C, for one command line.
void check_vcd(const std::string& args, const json& rep, const vcd_data& v,
               const std::vector<std::int64_t>& c) {
    SCOPED_TRACE(args);
    const std::string ctl = "tb.controller.";
    ASSERT_TRUE(v.has(ctl + "advance"));
    // One pulse per advance edge, as many as the report counted.
    const auto edges = v.rises(ctl + "advance");
    EXPECT_EQ(edges.size(), rep["advance_edges"].get<std::uint64_t>());
    // Every edge in the advance phase, and within a chunk each one clock after the previous one.
    for (std::size_t i = 0; i < edges.size(); ++i) {
        EXPECT_EQ(v.at(ctl + "phase", edges[i]), 3u) << "edge " << i << " at " << edges[i];
        EXPECT_EQ(v.text_at(ctl + "phase_name", edges[i]), "advance") << "edge " << i;
        if (i > 0 && v.at(ctl + "tile", edges[i]) == v.at(ctl + "tile", edges[i - 1]) &&
            v.at(ctl + "chunk", edges[i]) == v.at(ctl + "chunk", edges[i - 1])) {
            EXPECT_EQ(edges[i] - edges[i - 1], 1 * ps_per_ns) << "edge " << i;
        }
    }
    // Each C write: the accumulators of the written row of PEs equal the C that was written.
    const std::uint64_t m = rep["m"], p = rep["p"];
    const auto writes = v.rises(ctl + "c_write");
    std::uint64_t rows_written = 0, elements = 0;
    for (const std::uint64_t t : writes) {
        EXPECT_EQ(v.at(ctl + "phase", t), 4u) << "C write at " << t << " outside drain";
        EXPECT_EQ(v.text_at(ctl + "phase_name", t), "drain");
        const std::uint64_t row = v.at(ctl + "c_row", t), r0 = v.at(ctl + "r0", t), c0 = v.at(ctl + "c0", t);
        const std::uint64_t cols = v.at(ctl + "c_len", t) / sizeof(std::int64_t);
        ASSERT_LT(row, m);
        ASSERT_LE(c0 + cols, p);
        const std::uint64_t i = row - r0;
        for (std::uint64_t j = 0; j < cols; ++j) {
            const std::string pe = "tb.array.row_" + std::to_string(i) + ".pe_" + std::to_string(i) + "_" +
                                   std::to_string(j) + ".acc";
            EXPECT_EQ(static_cast<std::int64_t>(v.at(pe, t)), c[row * p + c0 + j])
                << pe << " at " << t << ", C(" << row << "," << c0 + j << ")";
            ++elements;
        }
        ++rows_written;
    }
    // Only the real rows are written, each element of C once: nothing for masked PEs.
    EXPECT_EQ(elements, m * p);
    std::uint64_t real_rows = 0;
    for (const auto& t : rep["tiles_detail"])
        real_rows += std::min<std::uint64_t>(rep["array"].get<std::uint64_t>(),
                                             m - t["origin"][0].get<std::uint64_t>());
    EXPECT_EQ(rows_written, real_rows);
}

TEST_F(wave_test, SeedExampleVcdReadsBackThroughGtkwave) {
    const auto d = run_with_vcd("");
    EXPECT_EQ(d.vcd.timescale, "1ps");
    EXPECT_EQ(d.report["advance_edges"], 20);
    check_vcd("seed", d.report, d.vcd, d.c);
    // The hierarchy is the modules': every PE of the 2x2 array, with its six signals.
    for (const char* sig : {"a", "a_valid", "b", "b_valid", "acc", "terms"})
        EXPECT_TRUE(d.vcd.has(std::string("tb.array.row_1.pe_1_0.") + sig)) << sig;
    // The seed's first tile: 5 edges from 51 ns (1 ns clear, five 10 ns reads), the C(0,0) = 7.
    const auto edges = d.vcd.rises("tb.controller.advance");
    ASSERT_GE(edges.size(), 5u);
    EXPECT_EQ(edges[0], 51 * ps_per_ns);
    EXPECT_EQ(edges[4], 55 * ps_per_ns);
    EXPECT_EQ(d.vcd.at("tb.array.row_0.pe_0_0.acc", edges[4]), 7u);
    EXPECT_EQ(d.vcd.at("tb.array.row_0.pe_0_0.terms", edges[4]), 3u);
}

TEST_F(wave_test, GtkwaveSaveFileNamesSignalsOfTheSeedVcd) {
    ASSERT_EQ(run("--vcd seed.vcd").status, 0);
    const auto v = parse_vcd(slurp(path("seed.vcd")));
    std::istringstream save(slurp(SYSTOLIC_SEED_GTKW));
    std::size_t named = 0;
    for (std::string line; std::getline(save, line);) {
        if (line.rfind("+{", 0) == 0) line = line.substr(line.find("} ") + 2);  // "+{alias} name"
        if (line.rfind("tb.", 0) != 0) continue;
        const std::string name = line.substr(0, line.find('['));  // GTKWave adds the vector's [msb:0]
        EXPECT_TRUE(v.has(name)) << "docs/seed.gtkw names " << line << ", which the seed VCD lacks";
        ++named;
    }
    EXPECT_GE(named, 20u);
    EXPECT_NE(slurp(SYSTOLIC_SEED_GTKW).find("@424\n+{pe_0_0_acc} tb.array.row_0.pe_0_0.acc[63:0]"),
              std::string::npos)
        << "accumulators in signed decimal";
}

TEST_F(wave_test, SeedExampleWithKSplit) {
    const auto d = run_with_vcd("--k-tile 2");
    EXPECT_EQ(d.report["advance_edges"], 28);
    check_vcd("seed --k-tile 2", d.report, d.vcd, d.c);
}

TEST_F(wave_test, RandomMultiTileShape) {
    const std::string args = "--array 4 --m 10 --k 7 --p 9 --seed 5 --order snake";
    const auto d = run_with_vcd(args);
    EXPECT_EQ(d.report["tiles"], 9);
    check_vcd(args, d.report, d.vcd, d.c);
}

TEST_F(wave_test, RandomMultiTileShapeWithKSplit) {
    const std::string args = "--array 4 --m 10 --k 7 --p 9 --seed 5 --k-tile 3";
    const auto d = run_with_vcd(args);
    EXPECT_EQ(d.report["k_chunks"], 3);
    check_vcd(args, d.report, d.vcd, d.c);
}

TEST_F(wave_test, FloatFormatsAreVcdRealsThatReadBackExactly) {
    for (const std::string dtype : {"fp32", "bf16"}) {
        const std::string args = "--dtype " + dtype + " --array 3 --m 5 --k 4 --p 4 --seed 9";
        ASSERT_EQ(run(args + " --vcd w.vcd --json r.json --c-out c.npy").status, 0) << args;
        ASSERT_EQ(run_tool(SYSTOLIC_VCD2FST, p("w.vcd") + " " + p("w.fst")).status, 0) << args;
        const auto v = parse_vcd(run_tool(SYSTOLIC_FST2VCD, p("w.fst")).out);
        const auto rep = json::parse(slurp(path("r.json")));
        EXPECT_EQ(v.rises("tb.controller.advance").size(), rep["advance_edges"].get<std::uint64_t>()) << args;
        const auto c = systolic::io::read_matrix(p("c.npy"), "<f4", "float32");
        std::vector<float> cv(c.shape[0] * c.shape[1]);
        std::memcpy(cv.data(), c.data.data(), cv.size() * sizeof(float));
        std::size_t checked = 0;
        for (const std::uint64_t t : v.rises("tb.controller.c_write")) {
            const std::uint64_t row = v.at("tb.controller.c_row", t), r0 = v.at("tb.controller.r0", t),
                                c0 = v.at("tb.controller.c0", t), cols = v.at("tb.controller.c_len", t) / 4;
            for (std::uint64_t j = 0; j < cols; ++j, ++checked) {
                const std::string pe = "tb.array.row_" + std::to_string(row - r0) + ".pe_" +
                                       std::to_string(row - r0) + "_" + std::to_string(j) + ".acc";
                std::string text = "0";
                for (const auto& ch : v.of(pe))
                    if (ch.time <= t) text = ch.value;
                EXPECT_EQ(std::stof(text), cv[row * 4 + c0 + j]) << args << " " << pe << " at " << t;
            }
        }
        EXPECT_EQ(checked, 20u) << args;
    }
}

TEST_F(wave_test, PartialsPolicyCountsEveryEdge) {
    // Under partials the PEs hold a chunk's partial sum, not C: only the edges and writes are checked.
    const auto r =
        run("--array 4 --m 10 --k 7 --p 9 --k-tile 3 --k-policy partials --vcd w.vcd --json r.json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rep = json::parse(slurp(path("r.json")));
    const auto v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_EQ(v.rises("tb.controller.advance").size(), rep["advance_edges"].get<std::uint64_t>());
    EXPECT_EQ(v.rises("tb.controller.c_write").size(), 10u * 3);  // 10 rows of C in 3 column tiles
}

// R x C: R row scopes of C PEs each, named by position; every edge of every tile is dumped.
TEST_F(wave_test, RectangularArrayIsRRowsOfCPes) {
    const auto r = run("--array 2x3 --m 5 --k 4 --p 7 --vcd w.vcd --json r.json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rep = json::parse(slurp(path("r.json")));
    const auto v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_TRUE(v.has("tb.array.row_1.pe_1_2.acc"));
    EXPECT_TRUE(v.has("tb.array.row_0.pe_0_2.terms"));
    EXPECT_FALSE(v.has("tb.array.row_2.pe_2_0.acc"));  // only 2 rows
    EXPECT_FALSE(v.has("tb.array.row_0.pe_0_3.acc"));  // of 3 PEs
    // ceil(5/2) x ceil(7/3) = 9 tiles of 4 + 2 + 3 - 2 = 7 edges; one C write per real row per tile.
    EXPECT_EQ(rep["advance_edges"].get<std::uint64_t>(), 9u * 7);
    EXPECT_EQ(v.rises("tb.controller.advance").size(), 9u * 7);
    EXPECT_EQ(v.rises("tb.controller.c_write").size(), 5u * 3);
}

TEST_F(wave_test, VcdPesChoosesTheTracedPes) {
    ASSERT_EQ(run("--array 4 --m 5 --k 3 --p 5 --vcd w.vcd --vcd-pes 1:2,3").status, 0);
    auto v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_TRUE(v.has("tb.array.row_1.pe_1_3.acc"));
    EXPECT_TRUE(v.has("tb.array.row_2.pe_2_3.acc"));
    EXPECT_FALSE(v.has("tb.array.row_0.pe_0_3.acc"));
    EXPECT_FALSE(v.has("tb.array.row_1.pe_1_2.acc"));
    ASSERT_EQ(run("--vcd w.vcd --vcd-pes none").status, 0);
    v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_FALSE(v.has("tb.array.row_0.pe_0_0.acc"));
    EXPECT_EQ(v.rises("tb.controller.advance").size(), 20u);
    // The default: all PEs up to 16x16, none above.
    ASSERT_EQ(run("--array 16 --m 3 --k 2 --p 3 --vcd w.vcd").status, 0);
    EXPECT_TRUE(parse_vcd(slurp(path("w.vcd"))).has("tb.array.row_15.pe_15_15.terms"));
    ASSERT_EQ(run("--array 17 --m 3 --k 2 --p 3 --vcd w.vcd").status, 0);
    v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_FALSE(v.has("tb.array.row_0.pe_0_0.terms"));
    EXPECT_TRUE(v.has("tb.controller.advance"));
}

TEST_F(wave_test, BadWaveOptionsExitTwoWithOneLineAndNoFile) {
    const struct {
        const char* args;
        const char* says;
    } cases[] = {
        {"--vcd w.vcd --vcd-pes 1:0,0", "empty"},
        {"--vcd w.vcd --vcd-pes 0:2,0", "not an index in [0, 1]"},
        {"--vcd w.vcd --vcd-pes rows", "must be all, none or R0:R1,C0:C1"},
        {"--vcd w.vcd --vcd-pes 0,x", "not an index"},
        {"--vcd-pes all", "--vcd-pes needs --vcd"},
        {"--vcd w.vcd --engine functional", "--vcd needs --engine cycle"},
        {"--vcd ''", "--vcd needs a file name"},
        {"--vcd nodir/w.vcd", "does not exist"},
        {"--vcd w.vcd --trace w.vcd", "give each output its own file"},
        {"--gtkw w.gtkw", "--gtkw needs --vcd: it is the GTKWave save file of that waveform"},
        {"--vcd w.vcd --gtkw ''", "--gtkw needs a file name"},
        {"--vcd w.vcd --gtkw w.vcd", "give each output its own file"},
        {"--vcd w.vcd --gtkw nodir/w.gtkw", "does not exist"},
        {"--progress --no-progress", "contradict"},
        {"--array 1024 --m 1 --k 1 --p 1 --vcd w.vcd --vcd-pes all --max-memory 1G", "VCD signal table"},
    };
    for (const auto& c : cases) {
        const auto r = run(c.args);
        EXPECT_EQ(r.status, 2) << c.args;
        EXPECT_NE(r.err.find(c.says), std::string::npos) << c.args << ": " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
        EXPECT_TRUE(r.out.empty()) << c.args;
        EXPECT_FALSE(std::filesystem::exists(path("w.vcd"))) << c.args;
    }
    // Nothing but the outputs is left behind, no temporaries either.
    for (const auto& e : std::filesystem::directory_iterator(path("")))
        EXPECT_TRUE(e.path().filename() == "stdout.txt" || e.path().filename() == "stderr.txt") << e.path();
}

TEST_F(wave_test, StdoutFailureLeavesNoWaveformBehind) {
    // The VCD and the trace were streamed while the job ran; a failure afterwards removes them too.
    const auto r = run("--vcd w.vcd --trace t.json", ">/dev/full");
    EXPECT_EQ(r.status, 2);
    EXPECT_NE(r.err.find("no output files written"), std::string::npos) << r.err;
    for (const auto& e : std::filesystem::directory_iterator(path("")))
        EXPECT_TRUE(e.path().filename() == "stderr.txt") << e.path();
}

TEST_F(wave_test, FailedJobStillWritesItsWaveform) {
    // A watchdog failure is exit 1, and its waveform is what one opens to see why.
    const auto r = run("--inject skip-advance --vcd w.vcd --trace t.json --json r.json");
    EXPECT_EQ(r.status, 1) << r.err;
    const auto v = parse_vcd(slurp(path("w.vcd")));
    EXPECT_EQ(v.rises("tb.controller.advance").size(), 4u);  // tile 0's four edges, then the watchdog
    EXPECT_EQ(v.at("tb.controller.phase", v.last_time), 0u);
    const auto t = json::parse(slurp(path("t.json")));
    bool failed = false;
    for (const auto& e : t["traceEvents"])
        failed = failed || (e.contains("args") && e["args"].value("failed", false));
    EXPECT_TRUE(failed);
}

// ws and is: the VCD has each PE's stationary register, streamed token and partial sum, and a
// preload pulse per preload edge. Checked against A and B themselves: after each fold's preload
// every PE holds its stationary operand; on each stream edge the west column holds the stream's
// tokens in their skew, and the bottom row the finished partial sum of the fold's terms, worked out
// here; after each fold every PE has consumed T terms more.
TEST_F(wave_test, StationaryDataflowsShowThePreloadTheStreamAndThePartialSums) {
    const std::uint64_t M = 10, K = 7, P = 9, n = 4, fold_terms = 4;
    std::vector<std::int32_t> a(M * K), b(K * P);
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = std::int32_t(i * 7 % 23) - 11;
    for (std::size_t i = 0; i < b.size(); ++i)
        b[i] = std::int32_t(i * 5 % 19) - 9;
    systolic::io::write_npy(p("a.npy"), "<i4", M, K, a.data(), a.size() * 4);
    systolic::io::write_npy(p("b.npy"), "<i4", K, P, b.data(), b.size() * 4);
    auto A = [&](std::uint64_t i, std::uint64_t kk) { return std::int64_t(a[i * K + kk]); };
    auto B = [&](std::uint64_t kk, std::uint64_t j) { return std::int64_t(b[kk * P + j]); };
    for (const std::string df : {"ws", "is"}) {
        const bool ws = df == "ws";
        const std::string args =
            "--dataflow " + df + " --array 4 --vcd-pes all --a " + p("a.npy") + " --b " + p("b.npy");
        SCOPED_TRACE(args);
        const auto d = run_with_vcd(args);
        const vcd_data& v = d.vcd;
        for (std::uint64_t i = 0; i < M; ++i)
            for (std::uint64_t j = 0; j < P; ++j) {
                std::int64_t want = 0;
                for (std::uint64_t kk = 0; kk < K; ++kk)
                    want += A(i, kk) * B(kk, j);
                ASSERT_EQ(d.c[i * P + j], want) << "C(" << i << "," << j << ")";
            }
        const std::string ctl = "tb.controller.";
        const auto preloads = v.rises(ctl + "preload"), advances = v.rises(ctl + "advance");
        EXPECT_EQ(preloads.size(), d.report["preload_edges"].get<std::uint64_t>());
        EXPECT_EQ(advances.size(), d.report["advance_edges"].get<std::uint64_t>());
        ASSERT_GT(preloads.size(), 0u);
        auto pe = [](std::uint64_t i, std::uint64_t j, const char* what) {
            return "tb.array.row_" + std::to_string(i) + ".pe_" + std::to_string(i) + "_" +
                   std::to_string(j) + "." + what;
        };
        auto operand = [&](const std::string& name, std::uint64_t t) {
            return std::int64_t(std::int32_t(std::uint32_t(v.at(name, t))));
        };
        const std::uint64_t stream = ws ? M : P;  // T
        // The fold's stationary operand w(i, j), its stream's s(t, i), from A and B; zero outside.
        auto w_of = [&](std::uint64_t r0, std::uint64_t c0, std::uint64_t k0, std::uint64_t i,
                        std::uint64_t j) {
            const std::uint64_t kk = k0 + i, col = (ws ? c0 : r0) + j;
            if (i >= fold_terms || kk >= K || col >= (ws ? P : M)) return std::int64_t(0);
            return ws ? B(kk, col) : A(col, kk);
        };
        auto s_of = [&](std::uint64_t k0, std::uint64_t t, std::uint64_t i) {
            const std::uint64_t kk = k0 + i;
            if (i >= fold_terms || kk >= K) return std::int64_t(0);
            return ws ? A(t, kk) : B(kk, t);
        };
        // Each (tile, fold): its preload edges, then its stream edges.
        std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<std::uint64_t>> preload_of, stream_of;
        for (const std::uint64_t t : preloads) {
            EXPECT_EQ(v.at(ctl + "phase", t), 6u) << t;
            EXPECT_EQ(v.text_at(ctl + "phase_name", t), "preload") << t;
            preload_of[{v.at(ctl + "tile", t), v.at(ctl + "chunk", t)}].push_back(t);
        }
        for (const std::uint64_t t : advances) {
            EXPECT_EQ(v.at(ctl + "phase", t), 3u) << t;
            stream_of[{v.at(ctl + "tile", t), v.at(ctl + "chunk", t)}].push_back(t);
        }
        ASSERT_EQ(preload_of.size(), stream_of.size());
        std::uint64_t sums_checked = 0;
        for (const auto& [key, pl] : preload_of) {
            const auto& st = stream_of.at(key);
            ASSERT_EQ(pl.size(), n);
            ASSERT_EQ(st.size(), stream + n + n - 2);
            const std::uint64_t r0 = v.at(ctl + "r0", pl[0]), c0 = v.at(ctl + "c0", pl[0]);
            const std::uint64_t k0 = key.second * fold_terms;
            for (std::uint64_t i = 0; i < n; ++i)
                for (std::uint64_t j = 0; j < n; ++j)
                    EXPECT_EQ(operand(pe(i, j, "stationary"), pl.back()), w_of(r0, c0, k0, i, j))
                        << "tile " << key.first << " fold " << key.second << " PE(" << i << "," << j << ")";
            for (std::uint64_t e = 0; e < st.size(); ++e) {
                for (std::uint64_t i = 0; i < n; ++i) {  // row i's west token: s(e - i, i) or a bubble
                    const bool valid = e >= i && e - i < stream;
                    EXPECT_EQ(v.at(pe(i, 0, "stream_valid"), st[e]), valid ? 1u : 0u) << "edge " << e;
                    if (valid) {
                        EXPECT_EQ(operand(pe(i, 0, "stream"), st[e]), s_of(k0, e - i, i)) << "edge " << e;
                    }
                }
                for (std::uint64_t j = 0; j < n; ++j) {  // the bottom row: psum of t = e - (R-1) - j
                    if (e < n - 1 + j || e - (n - 1) - j >= stream) continue;
                    const std::uint64_t t = e - (n - 1) - j;
                    std::int64_t want = 0;
                    for (std::uint64_t i = 0; i < n; ++i)
                        want += s_of(k0, t, i) * w_of(r0, c0, k0, i, j);
                    EXPECT_EQ(std::int64_t(v.at(pe(n - 1, j, "psum"), st[e])), want)
                        << "tile " << key.first << " fold " << key.second << " edge " << e << " column " << j;
                    ++sums_checked;
                }
            }
            for (std::uint64_t i = 0; i < n; ++i)
                for (std::uint64_t j = 0; j < n; ++j)
                    EXPECT_EQ(v.at(pe(i, j, "terms"), st.back()), (key.second + 1) * stream);
        }
        EXPECT_EQ(sums_checked, preload_of.size() * stream * n);
        // The os registers are not in a ws or is VCD.
        EXPECT_FALSE(v.has(pe(0, 0, "acc")));
    }
}

// The timeline: one span per tile; per tile its chunks and phases inside it, in time order.
void check_trace(const std::string& args, const json& rep, const json& trace) {
    SCOPED_TRACE(args);
    struct span {
        std::string name;
        std::uint64_t begin, end;  // ps
        json args;
    };
    auto ps = [](const json& v) { return std::uint64_t(v.get<double>() * 1e6 + 0.5); };
    std::map<std::uint64_t, span> tiles;
    std::map<std::uint64_t, std::vector<span>> phases, chunks;
    std::uint64_t c_bytes = 0, dma = 0;
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") == "M") continue;
        ASSERT_EQ(e.at("ph"), "X");
        const span s{e.at("name"), ps(e.at("ts")), ps(e.at("ts")) + ps(e.at("dur")), e.at("args")};
        const std::string cat = e.at("cat");
        if (cat == "dma") {
            // A track per stream, after the controller's: A, B, then C with the partial sums.
            const int stream = s.name == "read A" ? 2 : s.name == "read B" ? 3 : 4;
            EXPECT_EQ(e.at("tid"), stream) << s.name;
            ++dma;
            if (s.name == "write C") c_bytes += s.args.at("bytes").get<std::uint64_t>();
            continue;
        }
        EXPECT_EQ(e.at("tid"), 1);
        const std::uint64_t tile = s.args.at("tile");
        if (cat == "tile") {
            EXPECT_TRUE(tiles.emplace(tile, s).second) << "two spans for tile " << tile;
        } else if (cat == "chunk") {
            chunks[tile].push_back(s);
        } else {
            ASSERT_EQ(cat, "phase");
            phases[tile].push_back(s);
        }
    }
    EXPECT_EQ(tiles.size(), rep["tiles"].get<std::size_t>());
    EXPECT_GT(dma, 0u);
    EXPECT_EQ(c_bytes, rep["m"].get<std::uint64_t>() * rep["p"].get<std::uint64_t>() * 8);
    const std::uint64_t k_chunks = rep["k_chunks"];
    const bool stationary = rep["dataflow"] != "os";
    for (const auto& [index, t] : tiles) {
        auto& ph = phases[index];
        std::sort(ph.begin(), ph.end(), [](const span& a, const span& b) { return a.begin < b.begin; });
        ASSERT_FALSE(ph.empty());
        EXPECT_EQ(ph.front().name, "clear");
        EXPECT_EQ(ph.back().name, "drain");
        EXPECT_EQ(ph.front().begin, t.begin);
        EXPECT_EQ(ph.back().end, t.end);
        EXPECT_EQ(chunks[index].size(), k_chunks);
        std::uint64_t advances = 0, preloads = 0;
        for (std::size_t i = 0; i < ph.size(); ++i) {
            EXPECT_GE(ph[i].begin, t.begin);
            EXPECT_LE(ph[i].end, t.end);
            if (i > 0) {
                EXPECT_EQ(ph[i].begin, ph[i - 1].end) << "phases of tile " << index << " overlap or gap";
            }
            if (ph[i].name == "advance" || ph[i].name == "preload") {
                advances += ph[i].name == "advance";
                EXPECT_EQ(ph[i].end - ph[i].begin, ph[i].args.at("edges").get<std::uint64_t>() * ps_per_ns);
            }
            if (ph[i].name == "preload") {  // each fold: its blocks' load, the preload, its stream
                ++preloads;
                EXPECT_TRUE(i > 0 && ph[i - 1].name == "load") << "tile " << index;
                EXPECT_TRUE(i + 1 < ph.size() && ph[i + 1].name == "advance") << "tile " << index;
            }
            if (i > 0 && ph[i].name == "load") {
                EXPECT_TRUE(ph[i - 1].name == "clear" || ph[i - 1].name == "advance" ||
                            ph[i - 1].name == "drain");
            }
        }
        EXPECT_EQ(advances, k_chunks);
        EXPECT_EQ(preloads, stationary ? k_chunks : 0);
        for (const auto& c : chunks[index]) {
            EXPECT_EQ(c.name,
                      (stationary ? "fold " : "chunk ") + std::to_string(c.args.at("chunk").get<int>()));
            EXPECT_GE(c.begin, t.begin);
            EXPECT_LE(c.end, t.end);
        }
    }
}

TEST_F(wave_test, TraceNestsPhasesInTilesInTimeOrder) {
    for (const std::string args :
         {"", "--k-tile 2", "--array 4 --m 10 --k 7 --p 9 --order random --seed 3",
          "--array 4 --m 10 --k 7 --p 9 --k-tile 3 --k-policy partials",
          "--array 4 --m 10 --k 7 --p 9 --engine functional", "--array 4 --m 10 --k 7 --p 9 --dataflow ws",
          "--array 4 --m 10 --k 7 --p 9 --dataflow is --order col",
          "--array 4 --m 10 --k 7 --p 9 --dataflow ws --engine functional"}) {
        const auto r = run(args + " --trace t.json --json r.json");
        ASSERT_EQ(r.status, 0) << args << r.err;
        check_trace(args, json::parse(slurp(path("r.json"))), json::parse(slurp(path("t.json"))));
    }
}

// With double buffering the waveform shows the overlap and the waiting: the prefetch signal is high
// while a later tile's operands come in, at some of this tile's advance edges; the stall phase (5)
// lasts exactly the stall cycles the report counts, one clock each; and every advance edge and every
// byte of C still shows, as without scratchpads.
TEST_F(wave_test, DoubleBufferingShowsThePrefetchAndTheStalls) {
    const std::string args = "--array 4 --m 8 --k 12 --p 16 --seed 3 --buffers double --dram-bandwidth 4";
    const auto d = run_with_vcd(args);
    SCOPED_TRACE(args);
    const auto& mem = d.report.at("memory");
    const std::string ctl = "tb.controller.";
    ASSERT_TRUE(d.vcd.has(ctl + "prefetch"));
    const auto edges = d.vcd.rises(ctl + "advance");
    EXPECT_EQ(edges.size(), d.report["advance_edges"].get<std::uint64_t>());
    EXPECT_FALSE(d.vcd.rises(ctl + "prefetch").empty());
    std::size_t overlapped = 0;
    for (const std::uint64_t t : edges) {
        EXPECT_EQ(d.vcd.at(ctl + "phase", t), 3u) << "edge at " << t;
        overlapped += d.vcd.at(ctl + "prefetch", t) == 1;
    }
    EXPECT_GT(overlapped, 0u) << "no advance edge while a prefetch ran";
    const std::uint64_t stall_cycles = mem.at("stall_cycles");
    EXPECT_GT(stall_cycles, 0u) << "4 bytes a cycle should keep a 4x4 array waiting";
    std::uint64_t stalled = 0;
    const auto& phase = d.vcd.of(ctl + "phase");
    for (std::size_t i = 0; i + 1 < phase.size(); ++i) {
        if (std::stoull(phase[i].value, nullptr, 2) != 5) continue;
        stalled += phase[i + 1].time - phase[i].time;
        EXPECT_EQ(d.vcd.text_at(ctl + "phase_name", phase[i].time), "stall");
    }
    EXPECT_EQ(stalled, stall_cycles * ps_per_ns);
    std::uint64_t c_bytes = 0;
    for (const std::uint64_t t : d.vcd.rises(ctl + "c_write"))
        c_bytes += d.vcd.at(ctl + "c_len", t);
    EXPECT_EQ(c_bytes, 8u * 16u * 8u);
}

// The timeline with double buffering: a track per stream whose spans never overlap each other (one
// DRAM channel), bytes per stream as the report counts them between DRAM and the scratchpads, the
// prefetches marked, and transfers that overlap the controller's advance phases.
TEST_F(wave_test, TraceHasATrackPerStreamAndMarksThePrefetches) {
    const std::string args = "--array 4 --m 8 --k 12 --p 16 --seed 3 --buffers double --dram-bandwidth 4";
    SCOPED_TRACE(args);
    const auto r = run(args + " --trace t.json --json r.json");
    ASSERT_EQ(r.status, 0) << r.err;
    const auto rep = json::parse(slurp(path("r.json")));
    const auto trace = json::parse(slurp(path("t.json")));
    std::map<int, std::string> track;
    struct interval {
        std::uint64_t begin, end;
    };
    std::map<int, std::vector<interval>> spans;
    std::vector<interval> advances;
    std::map<std::string, std::uint64_t> bytes;
    std::size_t prefetches = 0;
    auto ps = [](const json& v) { return std::uint64_t(v.get<double>() * 1e6 + 0.5); };
    for (const auto& e : trace.at("traceEvents")) {
        if (e.at("ph") == "M") {
            if (e.at("name") == "thread_name") track[e.at("tid")] = e.at("args").at("name");
            continue;
        }
        const interval i{ps(e.at("ts")), ps(e.at("ts")) + ps(e.at("dur"))};
        if (e.at("cat") == "phase" && e.at("name") == "advance") advances.push_back(i);
        if (e.at("cat") != "dma") continue;
        const std::string name = e.at("name");
        const char stream = name == "read A" ? 'A' : name == "read B" ? 'B' : 'C';
        EXPECT_EQ(track[e.at("tid")], std::string("tb.controller.dma ") + stream) << name;
        spans[e.at("tid")].push_back(i);
        bytes[e.at("name")] += e.at("args").at("bytes").get<std::uint64_t>();
        prefetches += e.at("args").at("prefetch").get<bool>();
    }
    EXPECT_EQ(track[1], "tb.controller");
    EXPECT_EQ(track[2], "tb.controller.dma A");
    EXPECT_EQ(track[3], "tb.controller.dma B");
    EXPECT_EQ(track[4], "tb.controller.dma C");
    for (auto& [tid, list] : spans) {
        std::sort(list.begin(), list.end(),
                  [](const interval& a, const interval& b) { return a.begin < b.begin; });
        for (std::size_t i = 1; i < list.size(); ++i)
            EXPECT_GE(list[i].begin, list[i - 1].end)
                << track[tid] << ": transfers " << i - 1 << " and " << i;
    }
    const auto& mem = rep.at("memory").at("bytes");
    EXPECT_EQ(bytes["read A"], mem.at("a").at("dram").get<std::uint64_t>());
    EXPECT_EQ(bytes["read B"], mem.at("b").at("dram").get<std::uint64_t>());
    EXPECT_EQ(bytes["write C"], mem.at("c").at("dram").get<std::uint64_t>());
    EXPECT_GT(prefetches, 0u);
    std::size_t overlapping = 0;
    for (const auto& [tid, list] : spans)
        for (const interval& t : list)
            for (const interval& a : advances)
                overlapping += t.begin < a.end && a.begin < t.end;
    EXPECT_GT(overlapping, 0u) << "no transfer while the array advanced";
}

TEST_F(wave_test, ProgressGoesToStderrNeverStdout) {
    const auto r = run("--array 4 --m 10 --k 7 --p 9 --progress --json -");
    ASSERT_EQ(r.status, 0) << r.err;
    EXPECT_NO_THROW(json::parse(r.out)) << r.out;  // stdout is the report alone
    EXPECT_NE(r.err.find("9/9 tiles"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("edges/s"), std::string::npos) << r.err;
    // Not a terminal and not asked for: no bar.
    const auto quiet = run("--array 4 --m 10 --k 7 --p 9");
    EXPECT_EQ(quiet.err.find("tiles"), std::string::npos) << quiet.err;
    const auto off = run("--array 4 --m 10 --k 7 --p 9 --no-progress");
    EXPECT_EQ(off.err, "");
}

}  // namespace
