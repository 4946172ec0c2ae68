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
