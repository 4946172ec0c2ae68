// systolic-run's plain C++ core: SCALE-Sim topology files (GEMM and convolution, lowered as
// SCALE-Sim lowers them), every kind of bad row, array lists, and the records and reports.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "cli_options.h"
#include "progress.h"
#include "run_options.h"
#include "run_report.h"
#include "scale_config.h"
#include "topology.h"

namespace {

using namespace systolic::run;

// The usage error f throws, or "no error".
template <class F>
std::string usage_error_of(F&& f) {
    try {
        f();
    } catch (const systolic::cli::usage_error& e) {
        return e.what();
    }
    return "no error";
}

std::string error_of(const std::string& text, const std::string& path = "t.csv") {
    try {
        parse_topology(text, path);
    } catch (const topology_error& e) {
        return e.what();
    }
    return "no error";
}

TEST(Topology, GemmRowsWithTrailingCommas) {
    const auto t =
        parse_topology("Layer, M, N, K,\nQKT, 1024, 1024, 64,\nQKTV, 1024, 64, 1024,\n", "dir/gpt2.csv");
    EXPECT_EQ(t.name, "gpt2");
    EXPECT_EQ(t.kind, layer_kind::gemm);
    ASSERT_EQ(t.layers.size(), 2u);
    EXPECT_EQ(t.layers[1].id, 1u);
    EXPECT_EQ(t.layers[1].name, "QKTV");
    EXPECT_EQ(t.layers[1].line, 3u);
    // SCALE-Sim's N is our P.
    EXPECT_EQ(t.layers[1].gemm.m, 1024u);
    EXPECT_EQ(t.layers[1].gemm.p, 64u);
    EXPECT_EQ(t.layers[1].gemm.k, 1024u);
}

TEST(Topology, RowsWithoutTrailingCommaBlankLinesAndCrlf) {
    const auto t = parse_topology("Layer,M,N,K\r\n\r\nA,3,5,7\r\n  \nB,1,1,1", "x");
    ASSERT_EQ(t.layers.size(), 2u);
    EXPECT_EQ(t.layers[0].gemm.p, 5u);
    EXPECT_EQ(t.layers[1].line, 5u);
}

TEST(Topology, ConvolutionLoweredAsScaleSim) {
    const auto t = parse_topology(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "Conv1, 229, 229, 7, 7, 3, 64, 2,\n"
        "Odd, 230, 230, 7, 7, 3, 64, 2,\n"
        "Rect, 10, 20, 3, 5, 4, 8, 3, 2,\n",
        "r.csv");
    ASSERT_EQ(t.layers.size(), 3u);
    EXPECT_EQ(t.kind, layer_kind::conv);
    EXPECT_EQ(t.layers[0].conv.ofmap_h, 112u);  // ceil((229 - 7 + 2) / 2)
    EXPECT_EQ(t.layers[0].gemm.m, 112u * 112u);
    EXPECT_EQ(t.layers[0].gemm.k, 7u * 7u * 3u);
    EXPECT_EQ(t.layers[0].gemm.p, 64u);
    // SCALE-Sim rounds the output side up: 230 gives 113 where a floor would give 112.
    EXPECT_EQ(t.layers[1].conv.ofmap_h, 113u);
    // A ninth column is the column stride.
    EXPECT_EQ(t.layers[2].conv.ofmap_h, 4u);  // ceil((10 - 3 + 3) / 3)
    EXPECT_EQ(t.layers[2].conv.ofmap_w, 9u);  // ceil((20 - 5 + 2) / 2)
    EXPECT_EQ(t.layers[2].gemm.m, 36u);
    EXPECT_EQ(t.layers[2].gemm.k, 60u);
}

TEST(Topology, DepthwiseLayersSplitPerChannelAsScaleSim) {
    const auto t = parse_topology(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "Conv_DP, 8, 8, 3, 3, 3, 1, 1,\nNext, 8, 8, 1, 1, 3, 4, 1,\n",
        "m.csv");
    ASSERT_EQ(t.layers.size(), 4u);
    EXPECT_EQ(t.layers[0].name, "Conv_DPChannel_0");
    EXPECT_EQ(t.layers[2].name, "Conv_DPChannel_2");
    EXPECT_EQ(t.layers[2].gemm.k, 9u);
    EXPECT_EQ(t.layers[3].id, 3u);
    EXPECT_EQ(t.layers[3].name, "Next");
}

// A network layer's GEMMs, as scripts/import and SCALE-Sim name them, belong to the layer; other
// names, digits or dots in them included, are layers of their own.
TEST(Topology, LayerGroupIsTheNetworkLayerOfAGemm) {
    const std::pair<const char*, const char*> cases[] = {
        {"conv.g3", "conv"},
        {"features.1.0.block.0.g15", "features.1.0.block.0"},
        {"attn.qk.b11", "attn.qk"},
        {"attn.av.b0", "attn.av"},
        {"mm.g1.b2", "mm"},
        {"Conv_DPChannel_7", "Conv_DP"},
        {"Conv_DP.g2", "Conv_DP"},
        {"convChannel_3", "convChannel_3"},  // no "DP": not a SCALE-Sim depth-wise copy
        {"Conv_DPChannel_", "Conv_DPChannel_"},
        {"x.g", "x.g"},
        {".b1", ".b1"},
        {"x.bias1", "x.bias1"},
        {"layer2.0", "layer2.0"},
        {"fc", "fc"},
    };
    for (const auto& [name, group] : cases)
        EXPECT_EQ(layer_group(name), group) << name;
    // The depth-wise copies the parser makes all belong to their row's layer.
    const auto t = parse_topology(
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, Strides,\n"
        "Conv_DP, 8, 8, 3, 3, 3, 1, 1,\nNext, 8, 8, 1, 1, 3, 4, 1,\n",
        "m.csv");
    for (const auto& l : t.layers)
        EXPECT_EQ(layer_group(l.name), l.id < 3 ? "Conv_DP" : "Next") << l.name;
}

TEST(Topology, BadRowsNameFileLineAndField) {
    const std::string g = "Layer, M, N, K,\nA, 1, 2, 3,\n";
    EXPECT_EQ(error_of(g + "B, 4, x5, 6,\n"),
              "t.csv:3: field 'N' (column 3): expected a positive integer, got 'x5'");
    EXPECT_EQ(
        error_of(g + "B, 4, 5,\n"),
        "t.csv:3: field 'K' (column 4): missing (the row has 3 fields, a GEMM row has 4: Layer, M, N, K)");
    EXPECT_EQ(error_of(g + "B, 0, 5, 6,\n"), "t.csv:3: field 'M' (column 2): must be positive, got '0'");
    EXPECT_EQ(error_of(g + "B, -4, 5, 6,\n"),
              "t.csv:3: field 'M' (column 2): expected a positive integer, got '-4'");
    EXPECT_EQ(error_of(g + "B, 4, 5, 2.5,\n"),
              "t.csv:3: field 'K' (column 4): expected a positive integer, got '2.5'");
    EXPECT_EQ(error_of(g + "B, 4, 5, 6, 7,\n"),
              "t.csv:3: too many fields (5; a GEMM row has 4: Layer, M, N, K)");
    EXPECT_EQ(error_of(g + ", 4, 5, 6,\n"), "t.csv:3: field 'Layer' (column 1): is empty");
    EXPECT_EQ(error_of(g + "B, 4, , 6,\n"), "t.csv:3: field 'N' (column 3): is empty");
    EXPECT_EQ(error_of(g + "B, 99999999999, 5, 6,\n"),
              "t.csv:3: field 'M' (column 2): '99999999999' is larger than 2147483647");
    EXPECT_EQ(error_of("Layer, M, N,\nA, 1, 2,\n").substr(0, 40), "t.csv:1: the header is neither SCALE-Sim");
    EXPECT_EQ(error_of(""), "t.csv: empty file (expected a SCALE-Sim topology header)");
    EXPECT_EQ(error_of("Layer, M, N, K,\n\n"), "t.csv: no layers after the header");
    EXPECT_EQ(error_of(std::string("Layer, M, N, K,\nA\0, 1, 2, 3,\n", 27)),
              "t.csv: not a text file (it holds NUL bytes)");
    const std::string c =
        "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width, Channels, Num Filter, "
        "Strides,\n";
    EXPECT_EQ(error_of(c + "C, 5, 5, 7, 3, 1, 1, 1,\n"),
              "t.csv:2: field 'Filter Height' (column 4): the filter (7) is taller than the IFMAP (5)");
    EXPECT_EQ(error_of(c + "C, 5, 5, 3, 3, 1, 1,\n"),
              "t.csv:2: field 'Strides' (column 8): missing (the row has 7 fields, a convolution row has 8)");
    EXPECT_EQ(error_of(c + "C, 5, 5, 3, 3, 1, 1, 0,\n"),
              "t.csv:2: field 'Strides' (column 8): must be positive, got '0'");
    EXPECT_EQ(error_of(c + "C, 100000, 100000, 1, 1, 1, 1, 1,\n"),
              "t.csv:2: the lowered GEMM's M (output pixels) is larger than 2147483647");
    EXPECT_EQ(
        error_of(g + "B, 4\n, 5, 6,\n"),
        "t.csv:3: field 'N' (column 3): missing (the row has 2 fields, a GEMM row has 4: Layer, M, N, K)");
}

TEST(Topology, FilesThatAreNotRegularAreRefused) {
    EXPECT_THROW(read_topology("/nonexistent/t.csv"), topology_error);
    EXPECT_THROW(read_topology("/"), topology_error);
}

TEST(Topology, ShippedWorkloads) {
    const auto g = read_topology(std::string(SYSTOLIC_WORKLOADS) + "/gpt2.csv");
    ASSERT_EQ(g.layers.size(), 6u);
    std::uint64_t macs = 0;
    for (const auto& l : g.layers)
        macs += l.gemm.m * l.gemm.k * l.gemm.p;
    EXPECT_EQ(macs, 20686307328u);  // about 21 G MACs per layer of GPT-2 (d = 1600, 1024 tokens)
    const auto r = read_topology(std::string(SYSTOLIC_WORKLOADS) + "/resnet18.csv");
    ASSERT_EQ(r.layers.size(), 21u);
    // The IFMAP sides include the zero padding, so the outputs are ResNet-18's: 112, 56, 28, 14, 7.
    const std::vector<std::uint64_t> sides = {112, 56, 56, 56, 56, 28, 28, 28, 28, 28, 14,
                                              14,  14, 14, 14, 7,  7,  7,  7,  7,  1};
    for (std::size_t i = 0; i < sides.size(); ++i) {
        EXPECT_EQ(r.layers[i].conv.ofmap_h, sides[i]) << r.layers[i].name;
        EXPECT_EQ(r.layers[i].conv.ofmap_w, sides[i]) << r.layers[i].name;
    }
}

// The arrays of a list as "RxC" names, which gtest prints readably.
std::vector<std::string> names(const std::vector<systolic::array_shape>& arrays) {
    std::vector<std::string> out;
    for (const auto& a : arrays)
        out.push_back(array_name(a));
    return out;
}

TEST(ArrayList, SizesSquaresRectanglesAndErrors) {
    EXPECT_EQ(names(parse_array_list("32,64,128", "--array")),
              (std::vector<std::string>{"32x32", "64x64", "128x128"}));
    EXPECT_EQ(names(parse_array_list("128x128, 8X8", "--array")),
              (std::vector<std::string>{"128x128", "8x8"}));
    // R rows of C PEs: 12x14 is not 14x12, and both may be in one sweep.
    EXPECT_EQ(names(parse_array_list("32,12x14,14x12", "--array")),
              (std::vector<std::string>{"32x32", "12x14", "14x12"}));
    const auto eyeriss = parse_array_list("12x14", "--array");
    ASSERT_EQ(eyeriss.size(), 1u);
    EXPECT_EQ(eyeriss[0].rows, 12u);
    EXPECT_EQ(eyeriss[0].cols, 14u);
    auto err = [](const std::string& text) {
        return usage_error_of([&] { parse_array_list(text, "--array"); });
    };
    EXPECT_EQ(err("0"), "--array: array side 0 is out of range [1, 1024]");
    EXPECT_EQ(err("2048"), "--array: array side 2048 is out of range [1, 1024]");
    EXPECT_EQ(err("0x4"), "--array: array side 0 is out of range [1, 1024]");
    EXPECT_EQ(err("4x2048"), "--array: array side 2048 is out of range [1, 1024]");
    EXPECT_EQ(err("32,32"), "--array: array 32x32 is given twice");
    EXPECT_EQ(err("32,32x32"), "--array: array 32x32 is given twice");
    EXPECT_EQ(err("32,"), "--array: '32,' is not a list of array sizes");
    EXPECT_EQ(err("abc"), "--array: 'abc' is not an array size (N or RxC)");
    EXPECT_EQ(err("4x"), "--array: '4x' is not an array size (N or RxC)");
    EXPECT_EQ(err("x"), "--array: 'x' is not an array size (N or RxC)");
    EXPECT_EQ(err("4x4x4"), "--array: '4x4x4' is not an array size (N or RxC)");
    EXPECT_EQ(shell_quote("/a/b.csv"), "/a/b.csv");
    EXPECT_EQ(shell_quote("it's"), "'it'\\''s'");
}

// A job is a layer on an array in a dataflow: its ID and its file name say all three.
TEST(ArrayList, JobIdsAndFilesNameTheDataflow) {
    using systolic::dataflow_kind;
    EXPECT_EQ(job_id({12, 14}, dataflow_kind::ws, 2), "12x14:ws:2");
    const auto job = parse_job("64x64:is:3");
    EXPECT_EQ(array_name(job.array), "64x64");
    ASSERT_TRUE(job.dataflow.has_value());
    EXPECT_EQ(*job.dataflow, dataflow_kind::is);
    EXPECT_EQ(job.layer, 3u);
    const auto rect = parse_job(job_id({12, 14}, dataflow_kind::os, 2));
    EXPECT_EQ(rect.array.rows, 12u);
    EXPECT_EQ(rect.array.cols, 14u);
    EXPECT_EQ(rect.dataflow, dataflow_kind::os);
    EXPECT_EQ(rect.layer, 2u);
    // RxC:ID, for a run of one dataflow: the dataflow is the run's.
    const auto short_id = parse_job("32:7");
    EXPECT_EQ(array_name(short_id.array), "32x32");
    EXPECT_FALSE(short_id.dataflow.has_value());
    EXPECT_EQ(short_id.layer, 7u);
    auto err = [](const std::string& text) { return usage_error_of([&] { parse_job(text); }); };
    EXPECT_EQ(err("64x64"), "--job '64x64' is not RxC:DF:ID (or RxC:ID)");
    EXPECT_EQ(err("64x64:ws:"), "--job '64x64:ws:' is not RxC:DF:ID (or RxC:ID)");
    EXPECT_EQ(err("64x64:rs:1"), "--job '64x64:rs:1': the dataflow must be os, ws or is");
    EXPECT_EQ(err("64x64:ws:x:1"), "--job '64x64:ws:x:1': the dataflow must be os, ws or is");
    EXPECT_EQ(job_file_name({64, 64}, dataflow_kind::os, 3), "job-64x64-os-0003.json");
    EXPECT_EQ(job_file_name({12, 14}, dataflow_kind::is, 3), "job-12x14-is-0003.json");
}

TEST(ArrayList, DataflowListsInTheOrderGiven) {
    using systolic::dataflow_kind;
    EXPECT_EQ(parse_dataflow_list("is, os,ws", "--dataflow"),
              (std::vector<dataflow_kind>{dataflow_kind::is, dataflow_kind::os, dataflow_kind::ws}));
    EXPECT_EQ(parse_dataflow_list("ws", "--dataflow"), (std::vector<dataflow_kind>{dataflow_kind::ws}));
    auto err = [](const std::string& text) {
        return usage_error_of([&] { parse_dataflow_list(text, "--dataflow"); });
    };
    EXPECT_EQ(err("rs"), "--dataflow must be os, ws or is (or a comma list of them), got 'rs'");
    EXPECT_EQ(err("os,WS"), "--dataflow must be os, ws or is (or a comma list of them), got 'WS'");
    EXPECT_EQ(err("ws,is,ws"), "--dataflow: dataflow ws is given twice");
    EXPECT_EQ(err(""), "--dataflow: '' is not a list of dataflows (os, ws or is)");
    EXPECT_EQ(err("os,"), "--dataflow: 'os,' is not a list of dataflows (os, ws or is)");
    EXPECT_EQ(err("os,,ws"), "--dataflow: 'os,,ws' is not a list of dataflows (os, ws or is)");
}

layer_record sample_record() {
    layer_record r;
    r.topology = "t";
    r.layers_in_topology = 2;
    r.sweep = {"4x4", "8x8"};
    r.dataflows = {systolic::dataflow_kind::os};
    r.layer_id = 1;
    r.layer = "L, \"one\"";
    r.kind = layer_kind::gemm;
    r.array_rows = r.array_cols = 4;
    r.m = 6;
    r.k = 10;
    r.p = 5;
    r.dtype = systolic::dtype::int8;
    r.engine = systolic::engine_kind::cycle;
    r.seed = 18446744073709551615ull;
    r.data = data_source::random;
    r.status = systolic::job_status::completed;
    r.pass = true;
    r.scoreboard.checked = 30;
    r.tiles = 4;
    r.advance_edges = 4 * 16;
    r.macs_real = 6 * 10 * 5;
    r.macs_padded = 4 * 16 * 10;
    r.real_outputs = 6 * 5;
    r.masked_outputs = 4 * 16 - 6 * 5;
    // Folds of a 6x5 product on 4x4: 4x4, 4x1, 2x4, 2x1 used PEs, 16 edges each.
    r.folds = {{1, 16, 2, 20}, {1, 16, 4, 40}, {1, 16, 8, 80}, {1, 16, 16, 160}};
    r.clock_ps = 1000;
    r.sim_time_ps = 1234567;
    r.overflows = 7;
    return r;
}

TEST(Report, ScaleSimFiguresFromCountedEdges) {
    const compute_figures f = compute_figures_of(sample_record());
    EXPECT_EQ(f.total_cycles, 63u);  // the last 0-based cycle index
    EXPECT_EQ(f.stall_cycles, 0u);
    EXPECT_DOUBLE_EQ(f.overall_util, 300.0 * 100 / (63.0 * 16));
    EXPECT_DOUBLE_EQ(f.mapping_efficiency, (16 + 8 + 4 + 2) / 16.0 / 4 * 100);
    EXPECT_DOUBLE_EQ(f.compute_util, (160 + 80 + 40 + 20) / (16.0 * 16) / 4 * 100);
    const std::string csv = compute_report_csv({sample_record()});
    EXPECT_EQ(
        csv.substr(0, csv.find('\n')),
        "LayerID, Total Cycles, Stall Cycles, Overall Util %, Mapping Efficiency %, Compute Util %, "
        "Advance Edges, MACs Padded, MACs Real, Sim Time ns, Layer, Array, M, K, P, Tiles, Engine, Pass, "
        "Total Cycles (incl. prefetch), Dataflow, Preload Edges, Expect, Expect Failures, Max Abs Error, "
        "Max Rel Error, Overflows,");
    EXPECT_EQ(
        csv.substr(csv.find('\n') + 1),
        "1, 63, 0, 29.7619, 46.8750, 29.2969, 64, 640, 300, 1234.567, \"L, \"\"one\"\"\", 4x4, 6, 10, 5, 4, "
        "cycle, PASS, 0, os, 0, none, 0, 0, 0, 7,\n");
}

// The same 6x5 product with K = 10 under ws on 4x4: 2 tiles of all 6 rows by 4 and 1 columns, each
// 3 folds of 4, 4 and 2 terms; a fold preloads in 4 edges and streams 6 rows in 6 + 4 + 4 - 2 = 12.
// SCALE-Sim's folds are those 6, its cycles the preload and advance edges - 1.
layer_record stationary_record() {
    layer_record r = sample_record();
    r.sweep = {"4x4"};
    r.dataflows = {systolic::dataflow_kind::os, systolic::dataflow_kind::ws};
    r.dataflow = systolic::dataflow_kind::ws;
    r.layer_id = 0;
    r.tiles = 2;
    r.preload_edges = 2 * 3 * 4;
    r.advance_edges = 2 * 3 * 12;
    r.macs_padded = 2 * 3 * 16 * 6;
    r.masked_outputs = 2 * 6 * 4 - 6 * 5;  // each tile's 6 stream rows by 4 columns
    // Folds of L x n used PEs, L x n x 6 real MACs: n = 4 (the first tile) and 1 (the second).
    r.folds = {{1, 16, 2, 12}, {2, 16, 4, 24}, {1, 16, 8, 48}, {2, 16, 16, 96}};
    return r;
}

TEST(Report, StationaryFiguresCountThePreload) {
    const layer_record r = stationary_record();
    const compute_figures f = compute_figures_of(r);
    EXPECT_EQ(f.total_cycles, 24u + 72u - 1u);
    EXPECT_DOUBLE_EQ(f.overall_util, 300.0 * 100 / (95.0 * 16));
    // SCALE-Sim's mapping efficiency: the mean over its 6 folds of L x n / (R x C).
    EXPECT_DOUBLE_EQ(f.mapping_efficiency, (16 + 16 + 8 + 4 + 4 + 2) / 16.0 / 6 * 100);
    EXPECT_DOUBLE_EQ(f.compute_util, 300.0 / (16.0 * 16) / 6 * 100);
    const std::string csv = compute_report_csv({r});
    EXPECT_EQ(
        csv.substr(csv.find('\n') + 1),
        "0, 95, 0, 19.7368, 52.0833, 19.5312, 72, 576, 300, 1234.567, \"L, \"\"one\"\"\", 4x4, 6, 10, 5, 2, "
        "cycle, PASS, 0, ws, 24, none, 0, 0, 0, 7,\n");
    const std::string text = job_file_text(r);
    const layer_record back = record_from_json(nlohmann::json::parse(text).at("record"), "x");
    EXPECT_EQ(job_file_text(back), text);
    EXPECT_EQ(back.dataflow, systolic::dataflow_kind::ws);
    EXPECT_EQ(back.preload_edges, 24u);
    EXPECT_EQ(back.overflows, 7u);
    const auto j = nlohmann::json::parse(report_json({r}));
    EXPECT_EQ(j.at("dataflows"), (std::vector<std::string>{"os", "ws"}));
    EXPECT_EQ(j.at("arrays")[0].at("dataflow"), "ws");
    EXPECT_EQ(j.at("arrays")[0].at("preload_edges"), 24);
    EXPECT_DOUBLE_EQ(j.at("arrays")[0].at("utilization_percent").get<double>(), 300.0 * 100 / (96.0 * 16));
    EXPECT_EQ(bandwidth_report_csv({r}).substr(bandwidth_report_csv({r}).rfind(", 4x4")), ", 4x4, ws,\n");
    EXPECT_EQ(traffic_report_csv({r}).substr(traffic_report_csv({r}).rfind(", ")), ", ws,\n");

    // A record checks itself against the counting rules of its dataflow.
    nlohmann::json good = nlohmann::json::parse(text).at("record");
    struct tamper {
        const char* what;
        void (*spoil)(nlohmann::json&);
        const char* says;
    };
    const tamper cases[] = {
        {"a fold missing", [](nlohmann::json& j) { j["folds"][0]["count"] = 2; },
         "'folds': they count 7 folds"},
        {"dataflow not in the run",
         [](nlohmann::json& j) {
             j["dataflows"] = {"os", "is"};
         },
         "'dataflow'"},
        {"unknown dataflow",
         [](nlohmann::json& j) {
             j["dataflows"] = {"os", "ws", "rs"};
         },
         "'dataflows'"},
        {"dataflow twice",
         [](nlohmann::json& j) {
             j["dataflows"] = {"ws", "ws"};
         },
         "'dataflows'"},
        {"no dataflows", [](nlohmann::json& j) { j["dataflows"] = nlohmann::json::array(); }, "'dataflows'"},
        {"os with a preload",
         [](nlohmann::json& j) {
             j["dataflow"] = "os";
             j["tiles"] = 6;
         },
         "'preload_edges'"},
        {"no preload edges", [](nlohmann::json& j) { j.erase("preload_edges"); }, "'preload_edges'"},
        {"no preload time", [](nlohmann::json& j) { j["time_ps"].erase("preload"); }, "'preload'"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        nlohmann::json j = good;
        c.spoil(j);
        try {
            record_from_json(j, "jobs/x.json");
            ADD_FAILURE() << "accepted";
        } catch (const report_error& e) {
            EXPECT_NE(std::string(e.what()).find(c.says), std::string::npos) << e.what();
        }
    }
    // A fault that does not exist in the record's dataflow.
    nlohmann::json os = nlohmann::json::parse(job_file_text(sample_record())).at("record");
    os["inject"] = "skip-preload";
    EXPECT_THROW(record_from_json(os, "x"), report_error);
    // A stationary job that stopped in a tile has fewer folds than its tiles would.
    good["folds"].erase(0);
    good["status"] = "watchdog";
    good["pass"] = false;
    EXPECT_NO_THROW(record_from_json(good, "x"));
}

// A record of a run with --config: SCALE-Sim's buffers and a DRAM channel, and what they cost.
layer_record memory_record() {
    layer_record r = sample_record();
    r.memory.config = "scale.cfg";
    r.memory.buffers = systolic::buffer_mode::double_buffered;
    r.memory.interface_bandwidth = "USER";
    r.memory.a_sram = r.memory.b_sram = r.memory.c_sram = 64 * 1024;
    r.memory.dram_bandwidth = 10;
    systolic::memory_report& m = r.memory_use;
    m.stall_cycles = 37;
    m.prefetch_cycles = 12;
    m.total_cycles = 150;
    m.a = {60, 160};  // A read once; each of the 4 tiles feeds its rows x K
    m.b = {50, 200};
    m.c = {120, 120};  // 30 int32 outputs
    m.average_bandwidth = 230.0 / 150;
    m.peak_bandwidth = 1.0 / 3;  // not a short decimal: must read back exactly
    m.zero_stall_bandwidth = 2.75;
    m.streamed_tiles = 1;
    m.stream_k_chunk = 4;
    return r;
}

// Stalls count into SCALE-Sim's Total Cycles (and so into its utilisation); v3's column is the
// whole job, prefetch and last drain included.
TEST(Report, StallsAndPrefetchInTheScaleSimFigures) {
    const layer_record r = memory_record();
    const compute_figures f = compute_figures_of(r);
    EXPECT_EQ(f.stall_cycles, 37u);
    EXPECT_EQ(f.total_cycles, 63u + 37u);
    EXPECT_EQ(f.total_cycles_incl_prefetch, 150u);
    EXPECT_DOUBLE_EQ(f.overall_util, 300.0 * 100 / (100.0 * 16));
    const std::string csv = compute_report_csv({r});
    EXPECT_EQ(
        csv.substr(csv.find('\n') + 1),
        "1, 100, 37, 18.7500, 46.8750, 29.2969, 64, 640, 300, 1234.567, \"L, \"\"one\"\"\", 4x4, 6, 10, 5, "
        "4, cycle, PASS, 150, os, 0, none, 0, 0, 0, 7,\n");
    // SRAM words over Total Cycles, DRAM words over the whole job; C's words are 4 bytes.
    const bandwidth_figures b = bandwidth_figures_of(r);
    EXPECT_DOUBLE_EQ(b.ifmap_sram, 160.0 / 100);
    EXPECT_DOUBLE_EQ(b.filter_sram, 200.0 / 100);
    EXPECT_DOUBLE_EQ(b.ofmap_sram, 30.0 / 100);
    EXPECT_DOUBLE_EQ(b.ifmap_dram, 60.0 / 150);
    EXPECT_DOUBLE_EQ(b.filter_dram, 50.0 / 150);
    EXPECT_DOUBLE_EQ(b.ofmap_dram, 30.0 / 150);
    EXPECT_EQ(bandwidth_report_csv({r}),
              "LayerID, Avg IFMAP SRAM BW, Avg FILTER SRAM BW, Avg OFMAP SRAM BW, Avg IFMAP DRAM BW, "
              "Avg FILTER DRAM BW, Avg OFMAP DRAM BW, Avg DRAM Bytes/Cycle, Peak DRAM Bytes/Cycle, "
              "Zero-Stall DRAM Bytes/Cycle, Streamed Tiles, Stream K Chunk, Layer, Array, Dataflow,\n"
              "1, 1.6000, 2.0000, 0.3000, 0.4000, 0.3333, 0.2000, 1.5333, 0.3333, 2.7500, 1, 4, "
              "\"L, \"\"one\"\"\", 4x4, os,\n");
    // Without a memory system nothing moved through scratchpads: zeros, not a division by zero.
    EXPECT_EQ(bandwidth_figures_of(sample_record()).ifmap_dram, 0.0);
}

TEST(Report, JobFilesWithAMemorySystemReadBackExactly) {
    const layer_record r = memory_record();
    const std::string text = job_file_text(r);
    const layer_record back = record_from_json(nlohmann::json::parse(text).at("record"), "x");
    EXPECT_EQ(job_file_text(back), text);
    EXPECT_EQ(back.memory_use.peak_bandwidth, 1.0 / 3);
    // No bandwidth removes stalls that come from latency: infinity, written "inf", reads back.
    layer_record never = r;
    never.memory_use.zero_stall_bandwidth = HUGE_VAL;
    const std::string inf_text = job_file_text(never);
    EXPECT_NE(inf_text.find("\"zero_stall_bandwidth\": \"inf\""), std::string::npos) << inf_text;
    EXPECT_EQ(job_file_text(record_from_json(nlohmann::json::parse(inf_text).at("record"), "x")), inf_text);
    EXPECT_EQ(back.memory, r.memory);
    EXPECT_EQ(bandwidth_report_csv({back}), bandwidth_report_csv({r}));
    EXPECT_EQ(report_json({back}), report_json({r}));
    // A run with another memory system is another run.
    layer_record other = sample_record();
    other.layer_id = 0;
    try {
        check_complete({other, back}, "jobs");
        ADD_FAILURE() << "accepted";
    } catch (const report_error& e) {
        EXPECT_NE(std::string(e.what()).find("different runs"), std::string::npos) << e.what();
    }
}

TEST(Report, JobFilesReadBackExactly) {
    const layer_record r = sample_record();
    const std::string text = job_file_text(r);
    const auto back = record_from_json(nlohmann::json::parse(text).at("record"), "x");
    EXPECT_EQ(job_file_text(back), text);
    EXPECT_EQ(compute_report_csv({back}), compute_report_csv({r}));
    EXPECT_EQ(report_json({back}), report_json({r}));
}

// The record's keys are declared once (record_fields) and the reader is derived from the same
// declaration as the writer: a record with every key set to its own value, none its default, reads
// back to the same record, so a key swapped, dropped or misspelt on either side shows.
TEST(Report, JobFilesWithEveryKeyDistinctReadBackExactly) {
    layer_record r;
    r.topology = "topo";
    r.layers_in_topology = 1053;
    r.sweep = {"4x5", "9x9"};
    r.dataflows = {systolic::dataflow_kind::os, systolic::dataflow_kind::ws};
    r.layer_id = 1002;
    r.layer = "conv1";
    r.kind = layer_kind::conv;
    r.conv = {1003, 1004, 3, 4, 5, 1005, 1, 8};  // lowers to M = 1001 x 126, K = 3 x 4 x 5, P = 1005
    r.array_rows = 4;
    r.array_cols = 5;
    r.dataflow = systolic::dataflow_kind::ws;
    r.m = 1001 * 126;
    r.k = 60;
    r.p = 1005;
    r.dtype = systolic::dtype::bf16;
    r.engine = systolic::engine_kind::functional;
    r.seed = 1006;
    r.data = data_source::npy;
    r.k_tile = 7;
    r.inject = systolic::verify::fault::skip_preload;
    r.memory = {"scale.cfg", systolic::buffer_mode::double_buffered, "CALC", 1007, 1008, 1009, 1010};
    r.operand_bytes = 2;
    r.output_bytes = 6;
    r.status = systolic::job_status::watchdog;  // a job that stopped: its counts need not be the shape's
    r.error = "the watchdog fired";
    r.pass = false;
    r.scoreboard.checked = 1011;
    r.scoreboard.mismatches = 1012 - 1011 + 8;
    r.scoreboard.errors = {"C(0,0) expected 1, got 2"};
    r.expect = {expect_result::fail, 1013, 1014 - 1013 + 10, 0.25, 0.125, {"C(1,1) differs"}};
    r.tiles = 1015;
    r.advance_edges = 1016;
    r.macs_padded = 1017;
    r.macs_real = 1016 - 1000;
    r.preload_edges = 1018;
    r.overflows = 1019;
    r.real_outputs = 1020;
    r.masked_outputs = 1021;
    r.folds = {{22, 1023, 17, 1024}, {25, 1026, 18, 1027}};
    r.clock_ps = 1028;
    r.sim_time_ps = 1029;
    r.clear_ps = 1030;
    r.load_ps = 1031;
    r.preload_ps = 1032;
    r.advance_ps = 1033;
    r.drain_ps = 1034;
    r.traffic = {1035, 1036, 1037, 1038, 1039, 1040, 1041, 1042, 1043};
    systolic::memory_report& m = r.memory_use;
    m.stall_cycles = 1044;
    m.prefetch_cycles = 1045;
    m.total_cycles = 1046;
    m.a = {1047, 1048};
    m.b = {1049, 1050};
    m.c = {1051, 1052};
    m.average_bandwidth = 0.5;
    m.peak_bandwidth = 1.0 / 3;
    m.zero_stall_bandwidth = HUGE_VAL;
    m.streamed_tiles = 19;
    m.stream_k_chunk = 12;
    energy_record e;
    e.table = "tbl";
    e.node_nm = 1053.5;
    e.priced = true;
    e.total_pj = 1054.25;
    e.pj_per_mac = 1055.125;
    e.component_pj = {1056.5, 1057.5, 1058.5, 1059.5, 1060.5, 1061.5, 1062.5};
    e.total_mm2 = 1063.5;
    e.mac_random = 1064;
    e.mac_gated = 1065;
    e.idle = 1066;
    e.preload = 1067;
    e.a_toggles = 1068;
    e.b_toggles = 1069;
    e.acc_toggles = 1070;
    e.unpriced = {"pe.idle"};
    r.energy = e;

    const nlohmann::json j = to_json(r);
    // Every number differs from every other (the convolution's, which the shape repeats, aside), and
    // no leaf is its default.
    std::vector<double> numbers;
    std::function<void(const nlohmann::json&)> leaves = [&](const nlohmann::json& v) {
        if (v.is_structured()) {
            for (const auto& e : v)
                leaves(e);
        } else if (v.is_number()) {
            numbers.push_back(v.get<double>());
        } else {
            EXPECT_FALSE(v.is_null() || v == "" || v == "none") << v;
        }
    };
    nlohmann::json without_conv = j;
    without_conv.erase("conv");
    leaves(without_conv);
    std::sort(numbers.begin(), numbers.end());
    EXPECT_EQ(std::adjacent_find(numbers.begin(), numbers.end()), numbers.end());
    EXPECT_EQ(std::count(numbers.begin(), numbers.end(), 0.0), 0);
    const layer_record back = record_from_json(j, "x");
    EXPECT_EQ(to_json(back), j);
    EXPECT_EQ(back.scoreboard.mismatches, 9u);
    EXPECT_EQ(back.expect, r.expect);
    EXPECT_EQ(back.memory, r.memory);
    EXPECT_EQ(back.folds, r.folds);
    EXPECT_TRUE(std::isinf(back.memory_use.zero_stall_bandwidth));
    EXPECT_EQ(back.drain_ps, 1034u);
    ASSERT_TRUE(back.energy);
    EXPECT_EQ(*back.energy, e);
    // Each component's pJ under its name, in the energy library's order.
    EXPECT_EQ(j.at("energy").at("component_pj").at("pe"), 1056.5);
    EXPECT_EQ(j.at("energy").at("component_pj").at("links"), 1062.5);
}

// --energy: ENERGY_REPORT.csv's row per job (its keys as the other reports', then the energy), the
// network's totals per (array, dataflow) in report.json, no energy anywhere without --energy, and
// records priced by other tables are other runs.
TEST(Report, EnergyRowsTotalsAndRuns) {
    layer_record a = sample_record(), b = sample_record();
    a.layer_id = 0;
    a.layer = "A";
    b.layer = "B";
    a.sweep = b.sweep = {"4x4"};
    energy_record e;
    e.table = "horowitz45";
    e.node_nm = 45;
    e.priced = true;
    e.component_pj = {1, 2, 0.5, 0, 0, 4, 0};
    e.total_pj = 7.5;
    e.pj_per_mac = 7.5 / double(a.macs_real);
    e.total_mm2 = 0.25;
    a.energy = e;
    e.component_pj = {2, 2, 0, 0, 0, 0, 0};
    e.total_pj = 4;
    e.pj_per_mac = 4 / double(b.macs_real);
    e.total_mm2 = 0.5;
    b.energy = e;
    EXPECT_EQ(
        energy_report_csv({a, b}),
        "LayerID, Layer, Array, Dataflow, Total pJ, pJ per MAC, pe pJ, registers pJ, a_sram pJ, "
        "b_sram pJ, c_sram pJ, dram pJ, links pJ, Total mm2,\n"
        "0, " +
            a.layer + ", 4x4, os, 7.5, " +
            [&] {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.10g", 7.5 / double(a.macs_real));
                return std::string(buf);
            }() +
            ", 1, 2, 0.5, 0, 0, 4, 0, 0.25,\n"
            "1, " +
            b.layer + ", 4x4, os, 4, " +
            [&] {
                char buf[32];
                std::snprintf(buf, sizeof buf, "%.10g", 4 / double(b.macs_real));
                return std::string(buf);
            }() +
            ", 2, 2, 0, 0, 0, 0, 0, 0.5,\n");
    const auto j = nlohmann::json::parse(report_json({a, b}));
    const auto& total = j.at("arrays")[0].at("energy");
    EXPECT_EQ(total.at("total_pj"), 11.5);
    EXPECT_DOUBLE_EQ(total.at("pj_per_mac").get<double>(), 11.5 / double(a.macs_real + b.macs_real));
    EXPECT_EQ(total.at("total_mm2"), 0.5);  // the array that runs both layers
    EXPECT_EQ(j.at("energy").at("table"), "horowitz45");
    EXPECT_NO_THROW(check_complete({a, b}, "jobs"));
    // Without --energy: no key, no row.
    const auto plain = nlohmann::json::parse(report_json({sample_record()}));
    EXPECT_FALSE(plain.contains("energy"));
    EXPECT_FALSE(plain.at("arrays")[0].contains("energy"));
    EXPECT_FALSE(plain.at("layers")[0].contains("energy"));
    layer_record other = b, unpriced = b;
    other.energy->table = "tpu7";
    unpriced.energy.reset();
    for (const layer_record& x : {other, unpriced}) {
        try {
            check_complete({a, x}, "jobs");
            ADD_FAILURE() << "accepted";
        } catch (const report_error& err) {
            EXPECT_NE(std::string(err.what()).find("different runs"), std::string::npos) << err.what();
        }
    }
}

// A job file's record is checked as the topology reader checks a row: every number an unsigned
// integer in its range, every name from its list, the shape the layer lowers to, and counts that
// agree with each other. A tampered file is refused, naming the file and the field.
TEST(Report, JobFilesAreCheckedFieldByField) {
    const nlohmann::json good = nlohmann::json::parse(job_file_text(sample_record())).at("record");
    struct tamper {
        const char* what;
        void (*spoil)(nlohmann::json&);
        const char* says;
    };
    const tamper cases[] = {
        {"negative m", [](nlohmann::json& j) { j["m"] = -5; }, "'m'"},
        {"zero m", [](nlohmann::json& j) { j["m"] = 0; }, "'m'"},
        {"fractional k", [](nlohmann::json& j) { j["k"] = 2.5; }, "'k'"},
        {"huge p", [](nlohmann::json& j) { j["p"] = 0x80000000ull; }, "'p'"},
        {"text layers", [](nlohmann::json& j) { j["layers_in_topology"] = "2"; }, "'layers_in_topology'"},
        {"no layers", [](nlohmann::json& j) { j["layers_in_topology"] = 0; }, "'layers_in_topology'"},
        {"layer past the end", [](nlohmann::json& j) { j["layer_id"] = 2; }, "'layer_id'"},
        {"empty layer name", [](nlohmann::json& j) { j["layer"] = ""; }, "'layer'"},
        {"zero rows", [](nlohmann::json& j) { j["array_rows"] = 0; }, "'array_rows'"},
        {"huge array", [](nlohmann::json& j) { j["array_cols"] = 4096; }, "'array_cols'"},
        {"unknown dtype", [](nlohmann::json& j) { j["dtype"] = "int16"; }, "'dtype'"},
        {"unknown engine", [](nlohmann::json& j) { j["engine"] = "warp"; }, "'engine'"},
        {"unknown data", [](nlohmann::json& j) { j["data"] = "file"; }, "'data'"},
        {"unknown fault", [](nlohmann::json& j) { j["inject"] = "gremlin"; }, "'inject'"},
        {"unknown status", [](nlohmann::json& j) { j["status"] = "finished"; }, "'status'"},
        {"unknown kind", [](nlohmann::json& j) { j["kind"] = "matmul"; }, "'kind'"},
        {"conv without its fields", [](nlohmann::json& j) { j["kind"] = "conv"; }, "'conv'"},
        {"gemm with conv fields", [](nlohmann::json& j) { j["conv"] = {1, 1, 1, 1, 1, 1, 1, 1}; }, "'conv'"},
        {"conv not lowering to the GEMM",
         [](nlohmann::json& j) {
             j["kind"] = "conv";
             j["conv"] = {4, 4, 2, 2, 3, 5, 1, 1};  // M = 3 x 3, K = 2 x 2 x 3, P = 5: not 6, 10, 5
         },
         "'conv'"},
        {"sweep twice the same",
         [](nlohmann::json& j) {
             j["sweep"] = {"4x4", "4x4"};
         },
         "'sweep'"},
        {"sweep not an array",
         [](nlohmann::json& j) {
             j["sweep"] = {"4x4", "4by4"};
         },
         "'sweep'"},
        {"pass with mismatches", [](nlohmann::json& j) { j["scoreboard"]["mismatches"] = 1; }, "'pass'"},
        {"pass when not completed", [](nlohmann::json& j) { j["status"] = "watchdog"; }, "'pass'"},
        {"more checked than C has", [](nlohmann::json& j) { j["scoreboard"]["checked"] = 31; }, "'checked'"},
        {"more real MACs than padded", [](nlohmann::json& j) { j["macs_real"] = 641; }, "'macs_real'"},
        {"folds that are not the tiles", [](nlohmann::json& j) { j["tiles"] = 5; }, "'folds'"},
        {"more used PEs than the array has", [](nlohmann::json& j) { j["folds"][0]["used_pes"] = 17; },
         "'folds'"},
        {"a string for a number", [](nlohmann::json& j) { j["traffic"]["reads"] = "many"; }, "'reads'"},
        {"unknown buffers", [](nlohmann::json& j) { j["memory"]["buffers"] = "triple"; }, "'buffers'"},
        {"unknown interface bandwidth", [](nlohmann::json& j) { j["memory"]["interface_bandwidth"] = "MAX"; },
         "'interface_bandwidth'"},
        {"CALC without a config", [](nlohmann::json& j) { j["memory"]["interface_bandwidth"] = "CALC"; },
         "'interface_bandwidth'"},
        {"negative bandwidth", [](nlohmann::json& j) { j["memory_use"]["peak_bandwidth"] = -1.0; },
         "'peak_bandwidth'"},
        {"text bandwidth", [](nlohmann::json& j) { j["memory_use"]["average_bandwidth"] = "fast"; },
         "'average_bandwidth'"},
        {"more streamed tiles than tiles", [](nlohmann::json& j) { j["memory_use"]["streamed_tiles"] = 5; },
         "'streamed_tiles'"},
        {"no stream bytes", [](nlohmann::json& j) { j["memory_use"]["b"].erase("dram"); }, "'dram'"},
        {"zero word size", [](nlohmann::json& j) { j["operand_bytes"] = 0; }, "'operand_bytes'"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.what);
        nlohmann::json j = good;
        c.spoil(j);
        try {
            record_from_json(j, "jobs/x.json");
            ADD_FAILURE() << "accepted";
        } catch (const report_error& e) {
            const std::string what = e.what();
            EXPECT_EQ(what.rfind("jobs/x.json: ", 0), 0u) << what;
            EXPECT_NE(what.find(c.says), std::string::npos) << what;
            EXPECT_EQ(what.find('\n'), std::string::npos) << what;
        }
    }
    EXPECT_NO_THROW(record_from_json(good, "jobs/x.json"));
}

// Text that is not UTF-8 is refused before it is parsed, with the file and the line.
TEST(Report, JobFilesMustBeUtf8) {
    const auto dir = std::filesystem::temp_directory_path() / ("run_core_utf8_" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    std::string text = job_file_text(sample_record());
    text.replace(text.find("L, "), 1, "\xff");
    const std::string file = (dir / "job.json").string();
    std::ofstream(file, std::ios::binary) << text;
    try {
        read_job_file(file);
        ADD_FAILURE() << "accepted";
    } catch (const report_error& e) {
        EXPECT_NE(std::string(e.what()).find(file + ":"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("not UTF-8 text (byte 0xff"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

TEST(Topology, TextMustBeUtf8) {
    try {
        parse_topology("Layer, M, N, K,\nA, 1, 2, 3,\nna\xefve, 1, 2, 3,\n", "t.csv");
        ADD_FAILURE() << "accepted";
    } catch (const topology_error& e) {
        EXPECT_EQ(std::string(e.what()), "t.csv:3: not UTF-8 text (byte 0xef at column 3)");
    }
}

TEST(Report, MergeRefusesMixedDuplicateAndMissingJobs) {
    auto err = [](const std::vector<layer_record>& v) {
        try {
            check_complete(v, "jobs");
        } catch (const report_error& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    layer_record a = sample_record(), b = sample_record(), c = sample_record(), d = sample_record();
    a.layer_id = 0;
    c.layer_id = 0;
    c.array_rows = c.array_cols = 8;
    d.array_rows = d.array_cols = 8;
    EXPECT_EQ(err({a, b, c, d}), "no error");
    EXPECT_EQ(err({a, b, c}),
              "jobs: no record for layer 1 on 8x8 in os (3 of 4 jobs present); run line 4 of the --emit-jobs "
              "output again (with Slurm, sbatch --array=4)");
    EXPECT_EQ(err({a, b, b, c, d}), "jobs: layer 1 on 4x4 in os appears twice");
    d.dtype = systolic::dtype::int32;
    EXPECT_NE(err({a, b, c, d}).find("different runs"), std::string::npos);
    EXPECT_EQ(err({}), "jobs: no job records");
    // Report order: the sweep's order of arrays, then LayerID.
    std::vector<layer_record> v = {sample_record(), c, a};
    sort_records(v);
    EXPECT_EQ(v[0].layer_id, 0u);
    EXPECT_EQ(v[1].layer_id, 1u);
    EXPECT_EQ(v[2].array_rows, 8u);

    // A sweep of dataflows: every (array, dataflow, layer) once, in the order of the arrays, then of
    // the dataflows, then of the layers.
    std::vector<layer_record> all;
    for (const char* array : {"4x4", "8x8"})
        for (const auto df : {systolic::dataflow_kind::is, systolic::dataflow_kind::os})
            for (std::uint64_t id : {1u, 0u}) {
                layer_record r = sample_record();
                r.array_rows = r.array_cols = array[0] == '4' ? 4 : 8;
                r.dataflows = {systolic::dataflow_kind::is, systolic::dataflow_kind::os};
                r.dataflow = df;
                r.layer_id = id;
                all.push_back(r);
            }
    EXPECT_EQ(err(all), "no error");
    std::vector<layer_record> some(all.begin() + 1, all.end());
    EXPECT_EQ(err(some),
              "jobs: no record for layer 1 on 4x4 in is (7 of 8 jobs present); run line 2 of the --emit-jobs "
              "output again (with Slurm, sbatch --array=2)");
    // Every missing job, by its line of --emit-jobs (the Slurm array index), as ranges.
    EXPECT_EQ(
        err({all[2], all[3], all[5], all[7]}),
        "jobs: no record for layer 0 on 4x4 in is and 3 more jobs (4 of 8 jobs present); run lines 1-2,6,8 "
        "of the --emit-jobs output again (with Slurm, sbatch --array=1-2,6,8)");
    some.push_back(all[1]);
    EXPECT_EQ(err(some), "jobs: layer 0 on 4x4 in is appears twice");
    some = all;
    some[3].dataflows = {systolic::dataflow_kind::os, systolic::dataflow_kind::is};
    EXPECT_NE(err(some).find("different runs"), std::string::npos);
    std::reverse(all.begin(), all.end());
    sort_records(all);
    std::string order;
    for (const auto& r : all)
        order += r.array_name() + ":" + to_string(r.dataflow) + ":" + std::to_string(r.layer_id) + " ";
    EXPECT_EQ(order, "4x4:is:0 4x4:is:1 4x4:os:0 4x4:os:1 8x8:is:0 8x8:is:1 8x8:os:0 8x8:os:1 ");
}

// SCALE-Sim's own shipped configurations, v2's scale.cfg (with os, as it ships) and v3's (whose
// Dataflow is ws: set to os here), read as SCALE-Sim reads them.
const char* v2_scale_cfg =
    "[general]\nrun_name = scale_example_run_32x32_os\n\n[architecture_presets]\nArrayHeight:    32\n"
    "ArrayWidth:     32\nIfmapSramSzkB:   64 \nFilterSramSzkB:  64 \nOfmapSramSzkB:   64 \nIfmapOffset:    "
    "0\n"
    "FilterOffset:   10000000\nOfmapOffset:    20000000\nBandwidth : 10\nDataflow : os\nMemoryBanks:   1\n\n"
    "[run_presets]\nInterfaceBandwidth: CALC \n";
const char* v3_scale_cfg =
    "[general]\nrun_name = scale_example_run_32x32_ws\n\n[architecture_presets]\nArrayHeight:    32\n"
    "ArrayWidth:     16\nIfmapSramSzkB:   64\nFilterSramSzkB:  32\nOfmapSramSzkB:   16\nIfmapOffset:    0\n"
    "FilterOffset:   10000000\nOfmapOffset:    20000000\nBandwidth : 10\nDataflow : os\nMemoryBanks:   1\n"
    "ReadRequestBuffer: 32\nWriteRequestBuffer: 32\n\n[layout]\nIfmapCustomLayout: False\n"
    "IfmapSRAMBankBandwidth: 10\nIfmapSRAMBankNum: 10\nIfmapSRAMBankPort: 2\nFilterCustomLayout: False\n"
    "FilterSRAMBankBandwidth: 10\nFilterSRAMBankNum: 10\nFilterSRAMBankPort: 2\n\n[sparsity]\n"
    "SparsitySupport : false\nSparseRep : ellpack_block\nOptimizedMapping : false\nBlockSize : 8\n"
    "RandomNumberGeneratorSeed : 40\n\n[run_presets]\nInterfaceBandwidth: USER\nUseRamulatorTrace: False\n";

TEST(ScaleConfig, ShippedConfigurationsMapToTheArrayAndDoubleBuffers) {
    const scale_config v2 = parse_scale_config(v2_scale_cfg, "scale.cfg", max_array);
    EXPECT_EQ(v2.array, (systolic::array_shape{32, 32}));
    EXPECT_EQ(v2.mode, interface_bandwidth::calc);
    EXPECT_EQ(v2.bandwidth, 10u);
    const systolic::memory_config m2 = memory_of(v2, 1);
    EXPECT_EQ(m2.buffers, systolic::buffer_mode::double_buffered);
    EXPECT_EQ(m2.a_sram, 65536u);
    EXPECT_EQ(m2.b_sram, 65536u);
    EXPECT_EQ(m2.c_sram, 65536u);
    EXPECT_EQ(m2.dram_bandwidth, 0.0);  // CALC: unlimited, the report says what was needed

    const scale_config v3 = parse_scale_config(v3_scale_cfg, "v3.cfg", max_array);
    EXPECT_EQ(v3.array, (systolic::array_shape{32, 16}));  // ArrayHeight rows of ArrayWidth PEs
    EXPECT_EQ(v3.mode, interface_bandwidth::user);
    const systolic::memory_config m3 = memory_of(v3, 4);  // fp32 words
    EXPECT_EQ(m3.a_sram, 65536u);
    EXPECT_EQ(m3.b_sram, 32768u);
    EXPECT_EQ(m3.c_sram, 16384u);
    EXPECT_EQ(m3.dram_bandwidth, 40.0);  // 10 words of 4 bytes per cycle

    // configparser's other spellings: '=' as well as ':', keys in any case, ; and # comments.
    const scale_config odd = parse_scale_config(
        "; a comment\n[architecture_presets]\narrayheight = 8\nARRAYWIDTH=4\n  # indented comment\n"
        "ifmapsramszkb: 1\nFilterSramSzkB: 2\nOfmapSramSzkB: 3\nDataflow: os\n[run_presets]\n"
        "InterfaceBandwidth: CALC\r\n",
        "odd.cfg", max_array);
    EXPECT_EQ(odd.array, (systolic::array_shape{8, 4}));
    EXPECT_EQ(memory_of(odd, 1).c_sram, 3072u);
    EXPECT_EQ(odd.bandwidth, 0u);  // CALC needs none
    EXPECT_EQ(odd.dataflow, systolic::dataflow_kind::os);

    // Dataflow: SCALE-Sim's three, which are ours (v3 ships ws).
    std::string ws = v3_scale_cfg;
    ws.replace(ws.find("Dataflow : os"), 13, "Dataflow : ws");
    EXPECT_EQ(parse_scale_config(ws, "v3.cfg", max_array).dataflow, systolic::dataflow_kind::ws);
    ws.replace(ws.find("Dataflow : ws"), 13, "Dataflow : is");
    EXPECT_EQ(parse_scale_config(ws, "v3.cfg", max_array).dataflow, systolic::dataflow_kind::is);
}

std::string config_error_of(const std::string& text) {
    try {
        parse_scale_config(text, "my.cfg", max_array);
    } catch (const config_error& e) {
        return e.what();
    }
    return "no error";
}

// Every bad or unknown key is one line naming the file, the line and the key.
TEST(ScaleConfig, BadKeysNameFileLineAndKey) {
    const std::string head = "[architecture_presets]\nArrayHeight: 4\nArrayWidth: 4\n";
    const std::string rest =
        "IfmapSramSzkB: 1\nFilterSramSzkB: 1\nOfmapSramSzkB: 1\nDataflow: os\n[run_presets]\n"
        "InterfaceBandwidth: CALC\n";
    EXPECT_EQ(config_error_of(head + rest), "no error");
    struct bad {
        std::string text, says;
    };
    const bad cases[] = {
        {head + "IfmapSramSize: 1\n" + rest,
         "my.cfg:4: key 'IfmapSramSize' is not a SCALE-Sim configuration key in [architecture_presets]"},
        {head + "InterfaceBandwidth: USER\n" + rest,
         "my.cfg:4: key 'InterfaceBandwidth' is not a SCALE-Sim configuration key in [architecture_presets] "
         "(it "
         "belongs in [run_presets])"},
        {"[architecture_presets]\nArrayHeight: four\nArrayWidth: 4\n" + rest,
         "my.cfg:2: key 'ArrayHeight': 'four' is not a positive integer"},
        {"[architecture_presets]\nArrayHeight: 4\nArrayWidth: 2048\n" + rest,
         "my.cfg:3: key 'ArrayWidth': 2048 is outside [1, 1024]"},
        {head + "IfmapSramSzkB: 0\n" + rest.substr(rest.find('\n') + 1),
         "my.cfg:4: key 'IfmapSramSzkB': 0 is outside [1, 1073741824]"},
        {head + "arrayheight: 8\n" + rest, "my.cfg:4: key 'ArrayHeight' is also on line 2"},
        {head + rest + "[architecture_presets]\n",
         "my.cfg:10: section [architecture_presets] is also on line 1"},
        {head + rest + "[dram]\n",
         "my.cfg:10: section [dram] is not one of SCALE-Sim's configuration sections"},
        {"ArrayHeight: 4\n" + head + rest, "my.cfg:1: key 'ArrayHeight' comes before any [section]"},
        {head + "just words\n" + rest,
         "my.cfg:4: not a [section], a 'key: value' line or a comment: 'just words'"},
        {head + "[open\n" + rest, "my.cfg:4: not a [section] line: '[open'"},
        {head + "MemoryBanks: 4\n" + rest,
         "my.cfg:4: key 'MemoryBanks': '4' is not supported, only 1 (one DRAM channel)"},
        {head + rest + "UseRamulatorTrace: True\n",
         "my.cfg:10: key 'UseRamulatorTrace': 'True' is not supported, only False (no Ramulator DRAM model)"},
        {head + rest + "[sparsity]\nSparsitySupport: true\n",
         "my.cfg:11: key 'SparsitySupport': 'true' is not supported, only false (dense operands)"},
        {head + rest.substr(0, rest.find("Dataflow")) +
             "Dataflow: rs\n[run_presets]\nInterfaceBandwidth: CALC\n",
         "my.cfg:7: key 'Dataflow': 'rs' is not os, ws or is"},
        // SCALE-Sim takes its names in lower case only.
        {head + rest.substr(0, rest.find("Dataflow")) +
             "Dataflow: WS\n[run_presets]\nInterfaceBandwidth: CALC\n",
         "my.cfg:7: key 'Dataflow': 'WS' is not os, ws or is"},
        {head + rest.substr(0, rest.find("CALC")) + "calc\n",
         "my.cfg:9: key 'InterfaceBandwidth': 'calc' is not CALC or USER"},
        {head + rest.substr(0, rest.find("CALC")) + "USER\n",
         "my.cfg:9: InterfaceBandwidth USER needs the key 'Bandwidth' in [architecture_presets]"},
        {head + "Bandwidth: 10,20\n" + rest,
         "my.cfg:4: key 'Bandwidth': '10,20' is a list; give one value (one DRAM channel serves the three "
         "streams)"},
        {head + "Bandwidth: 0\n" + rest, "my.cfg:4: key 'Bandwidth': 0 is outside [1, 4294967296]"},
        {"[architecture_presets]\nArrayWidth: 4\n" + rest,
         "my.cfg: no key 'ArrayHeight' in [architecture_presets]"},
        {head + rest.substr(0, rest.find("[run_presets]")),
         "my.cfg: no key 'InterfaceBandwidth' in [run_presets]"},
        {head + "Dataflow\xff: os\n" + rest, "my.cfg:4: not UTF-8 text (byte 0xff at column 9)"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.text);
        EXPECT_EQ(config_error_of(c.text), c.says);
    }
    // A file that cannot be read is one line too.
    try {
        read_scale_config("/nonexistent/dir/x.cfg", max_array);
        ADD_FAILURE() << "accepted";
    } catch (const config_error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/dir/x.cfg"), std::string::npos) << e.what();
        EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos);
    }
}

// The configurations shipped beside the topologies, as SCALE-Sim v3 reads them too.
TEST(ScaleConfig, ShippedConfigurations) {
    const auto calc = read_scale_config(std::string(SYSTOLIC_WORKLOADS) + "/scale_os32_calc.cfg", max_array);
    const auto user = read_scale_config(std::string(SYSTOLIC_WORKLOADS) + "/scale_os32_user.cfg", max_array);
    EXPECT_EQ(calc.array, (systolic::array_shape{32, 32}));
    EXPECT_EQ(calc.mode, interface_bandwidth::calc);
    EXPECT_EQ(user.mode, interface_bandwidth::user);
    EXPECT_EQ(memory_of(user, 1).dram_bandwidth, 10.0);
    EXPECT_EQ(memory_of(user, 1).a_sram, 65536u);
}

// docs/scale-sim.md's table of configuration keys is the reader's table, row for row.
TEST(ScaleConfig, DocsListEveryKeyAsTheReaderTakesIt) {
    std::ifstream in(std::string(SYSTOLIC_WORKLOADS) + "/../docs/scale-sim.md");
    const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(doc.empty());
    for (const auto& k : scale_config_keys) {
        const std::string use = k.use == key_use::ignored   ? "accepted, ignored"
                                : k.use == key_use::must_be ? "must be `" + std::string(k.value) + "`"
                                                            : "used";
        const std::string row =
            "| `[" + std::string(k.section) + "]` | `" + k.key + "` | " + use + " | " + k.why + " |\n";
        EXPECT_NE(doc.find(row), std::string::npos) << row;
    }
}

// systolic-run's line on the executables' one bar: the share done, the time left, the label, and
// cut to the terminal's width.
TEST(RunProgress, LineSaysTheShareTheTimeLeftAndTheLabel) {
    systolic::cli::progress_state s{25, 100, std::nullopt, 3.0, false, 0};
    EXPECT_EQ(progress_line(s, "job 1/4"), "[#######.......................]  25% 3 s left  job 1/4");
    s.seconds_left = std::nullopt;
    s.done = 250;  // past the total: a full bar
    EXPECT_EQ(progress_line(s, "x"), "[##############################] 100% x");
    s.columns = 21;
    EXPECT_EQ(progress_line(s, "x"), "[" + std::string(19, '#'));
}

}  // namespace
