// Testbenches for SystemC test executables. SystemC elaborates once per process, so a test
// executable builds every bench it needs (one per format and array size) before the first
// sc_start, from a gtest Environment, and the tests then run jobs on them one after another.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "systolic/number_format.h"
#include "systolic/verify/testbench.h"

namespace systolic::verify {

template <class Format>
class bench_set {
public:
    // Square N x N benches.
    static void build(const std::vector<std::size_t>& sizes) {
        for (auto n : sizes)
            add(n, n, std::to_string(n));
    }
    // R x C benches (R rows of C PEs), as (R, C) pairs.
    static void build_shapes(const std::vector<std::pair<std::size_t, std::size_t>>& shapes) {
        for (const auto& [rows, cols] : shapes)
            add(rows, cols, std::to_string(rows) + "x" + std::to_string(cols));
    }
    static testbench<Format>& get(std::size_t n) { return get(n, n); }
    static testbench<Format>& get(std::size_t rows, std::size_t cols) { return *map().at({rows, cols}); }

private:
    using key = std::pair<std::size_t, std::size_t>;
    static void add(std::size_t rows, std::size_t cols, const std::string& suffix) {
        typename testbench<Format>::config cfg;
        cfg.rows = rows;
        cfg.cols = cols;
        const std::string name = std::string("tb_") + Format::name + "_" + suffix;
        map()[{rows, cols}] = std::make_unique<testbench<Format>>(name.c_str(), cfg);
    }
    static std::map<key, std::unique_ptr<testbench<Format>>>& map() {
        static std::map<key, std::unique_ptr<testbench<Format>>> m;
        return m;
    }
};

// Every format's benches: N x N for each of `sizes`, R x C for each of `shapes`.
inline void build_every_format(const std::vector<std::size_t>& sizes,
                               const std::vector<std::pair<std::size_t, std::size_t>>& shapes) {
    for_each_format([&](auto format) {
        using Format = decltype(format);
        bench_set<Format>::build(sizes);
        bench_set<Format>::build_shapes(shapes);
    });
}

// One random case in a line: enough to find it again.
inline std::string describe(const problem_shape& s, std::size_t rows, std::size_t cols, const job_options& o,
                            std::uint64_t seed) {
    return "seed " + std::to_string(seed) + ": M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
           " P=" + std::to_string(s.p) + " array " + std::to_string(rows) + "x" + std::to_string(cols) +
           " dataflow " + to_string(o.run.dataflow) + " k_tile=" + std::to_string(o.run.k_tile) +
           " policy=" + to_string(o.run.policy) + " order=" + to_string(o.run.order) +
           " overflow=" + to_string(o.run.overflow) + (o.run.quant.enabled ? " int8 out" : "") +
           (o.run.memory.buffers == buffer_mode::double_buffered
                ? " buffers double A " + std::to_string(o.run.memory.a_sram) + " B " +
                      std::to_string(o.run.memory.b_sram) + " C " + std::to_string(o.run.memory.c_sram) +
                      " bandwidth " + std::to_string(o.run.memory.dram_bandwidth)
                : "");
}

// Two runs of one job (the two engines) that must agree on every counter, per tile too, and on
// the memory system's.
template <class Format>
void expect_same_counters(const job_check<Format>& a, const job_check<Format>& b, const std::string& what) {
    const auto &ra = a.result, &rb = b.result;
    EXPECT_EQ(ra.advance_edges, rb.advance_edges) << what;
    EXPECT_EQ(ra.preload_edges, rb.preload_edges) << what;
    EXPECT_EQ(ra.macs_padded, rb.macs_padded) << what;
    EXPECT_EQ(ra.macs_real, rb.macs_real) << what;
    EXPECT_EQ(ra.real_outputs, rb.real_outputs) << what;
    EXPECT_EQ(ra.masked_outputs, rb.masked_outputs) << what;
    EXPECT_EQ(ra.overflows, rb.overflows) << what;
    EXPECT_EQ(ra.partial_overflows, rb.partial_overflows) << what;
    EXPECT_EQ(ra.saturated_outputs, rb.saturated_outputs) << what;
    EXPECT_EQ(ra.end - ra.start, rb.end - rb.start) << what;  // same steps, same simulated time
    // The memory system: stepped by the cycle engine, by the event rules with the functional one.
    const auto &ma = ra.memory, &mb = rb.memory;
    EXPECT_EQ(ma.stall_cycles, mb.stall_cycles) << what;
    EXPECT_EQ(ma.prefetch_cycles, mb.prefetch_cycles) << what;
    EXPECT_EQ(ma.total_cycles, mb.total_cycles) << what;
    EXPECT_EQ(ma.a.dram, mb.a.dram) << what;
    EXPECT_EQ(ma.b.dram, mb.b.dram) << what;
    EXPECT_EQ(ma.c.dram, mb.c.dram) << what;
    EXPECT_EQ(ma.a.array, mb.a.array) << what;
    EXPECT_EQ(ma.b.array, mb.b.array) << what;
    EXPECT_EQ(ma.zero_stall_bandwidth, mb.zero_stall_bandwidth) << what;
    ASSERT_EQ(ra.tiles.size(), rb.tiles.size()) << what;
    for (std::size_t t = 0; t < ra.tiles.size(); ++t) {
        EXPECT_EQ(ra.tiles[t].advance_edges_per_chunk, rb.tiles[t].advance_edges_per_chunk) << what;
        EXPECT_EQ(ra.tiles[t].preload_edges, rb.tiles[t].preload_edges) << what;
        EXPECT_EQ(ra.tiles[t].macs_real, rb.tiles[t].macs_real) << what;
        EXPECT_EQ(ra.tiles[t].real_outputs, rb.tiles[t].real_outputs) << what;
    }
}

// The end-of-test checks every case shares: the job completed, something was checked, the
// scoreboard saw no error, every element of C was written once and nothing outside it changed.
template <class Format>
void expect_pass(const job_check<Format>& out) {
    EXPECT_TRUE(out.result.completed()) << out.result.error;
    EXPECT_TRUE(out.pass());
    EXPECT_GT(out.scoreboard.checked, 0u);
    EXPECT_EQ(out.scoreboard.checked, out.job.shape.m * out.job.shape.p);
    EXPECT_EQ(out.scoreboard.out_of_range_writes, 0u);
    EXPECT_TRUE(out.scoreboard.untouched_ok);
    for (const auto& e : out.scoreboard.errors)
        ADD_FAILURE() << e;
    EXPECT_EQ(out.result.advance_edges, out.expected.advance_edges);
    EXPECT_EQ(out.result.macs_padded, out.expected.macs_padded);
    EXPECT_EQ(out.result.macs_real, out.expected.macs_real);
}

// True when any scoreboard error line contains `needle`.
template <class Format>
bool has_error(const job_check<Format>& out, const std::string& needle) {
    for (const auto& e : out.scoreboard.errors)
        if (e.find(needle) != std::string::npos) return true;
    return false;
}

}  // namespace systolic::verify
