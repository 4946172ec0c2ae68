// The energy account's counts (action_counts.h, action_counter.h): both engines give the same counts
// on random jobs of every format, dataflow, buffer mode and K-split; the counts hold against what is
// worked out here from the operands alone (the random MACs, the PE-edges, the memories' bytes); a
// 2 x 2 job's toggles equal the ones worked out by hand below; and the one-edge form of the array (a
// fabric's) counts as its runs of edges do.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "bench_set.h"
#include "format_types.h"
#include "systolic/action_counter.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

const std::vector<std::size_t> sizes = {1, 2, 3, 4};
// Two wide enough for the counting kernels' vector loops to run whole vectors and a remainder.
const std::vector<std::pair<std::size_t, std::size_t>> rect_shapes = {{1, 3}, {3, 1},  {2, 3},
                                                                      {3, 2}, {5, 37}, {37, 5}};

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        build_every_format(sizes, rect_shapes);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

// Zero or not, decided here from the value (not the model's operand_is_zero): any float zero is zero.
template <class T>
bool nonzero(T v) {
    if constexpr (std::is_same_v<T, bf16>)
        return v.to_float() != 0.0f;
    else
        return v != T{0};
}

// The random MACs from first principles: the (i, j, k) with A(i, k) and B(k, j) both nonzero.
template <class Format>
std::uint64_t nonzero_products(const problem<Format>& pr) {
    const auto& s = pr.shape;
    std::uint64_t n = 0;
    for (std::uint64_t i = 0; i < s.m; ++i)
        for (std::uint64_t j = 0; j < s.p; ++j)
            for (std::uint64_t k = 0; k < s.k; ++k)
                n += nonzero(pr.a[i * s.k + k]) && nonzero(pr.b[k * s.p + j]);
    return n;
}

// Operands with zeros in them (a third of them; floats of both signs), so gating happens.
template <class Format>
problem<Format> sparse_problem(const problem_shape& s, std::mt19937_64& rng) {
    auto pr = random_problem<Format>(s, rng());
    using T = typename Format::operand_type;
    for (auto* v : {&pr.a, &pr.b})
        for (auto& x : *v)
            if (rng() % 3 == 0) x = value_from<T>(rng() % 2 ? 0.0 : -0.0);
    return pr;
}

template <class Format>
void compare_counts(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::size_t rows, cols;
    if (rng() % 2) {
        rows = cols = sizes[rng() % sizes.size()];
    } else {
        std::tie(rows, cols) = rect_shapes[rng() % rect_shapes.size()];
    }
    // Up to twice the array's rows and columns.
    const problem_shape s{1 + rng() % std::max<std::size_t>(9, 2 * rows), 1 + rng() % 11,
                          1 + rng() % std::max<std::size_t>(9, 2 * cols)};
    job_options o;
    o.run.count_actions = true;
    o.run.dataflow = static_cast<dataflow_kind>(rng() % 3);
    o.run.order = static_cast<tile_order>(rng() % 4);
    o.run.order_seed = rng();
    o.run.k_tile = rng() % 3 == 0 ? 0 : 1 + rng() % s.k;
    if (Format::is_integer) o.run.overflow = rng() % 2 ? overflow_mode::saturate : overflow_mode::wrap;
    const bool buffered = rng() % 2;
    if (buffered)
        o.run.memory.buffers = buffer_mode::double_buffered;
    else if (!is_stationary(o.run.dataflow) && rng() % 2)
        o.run.policy = k_policy::partials;
    const auto pr = sparse_problem<Format>(s, rng);
    const std::string what = std::string(Format::name) + " " + describe(s, rows, cols, o, seed);

    auto& b = bench_set<Format>::get(rows, cols);
    o.run.engine = engine_kind::cycle;
    const auto cyc = b.run(pr, o);
    o.run.engine = engine_kind::functional;
    const auto fun = b.run(pr, o);
    ASSERT_TRUE(cyc.pass()) << what;
    ASSERT_TRUE(fun.pass()) << what;
    const action_counts &c = cyc.result.actions, &f = fun.result.actions;

    // The engines agree on everything, part by part first so that a difference names itself.
    EXPECT_EQ(c.pe.mac_random, f.pe.mac_random) << what;
    EXPECT_EQ(c.pe.mac_gated, f.pe.mac_gated) << what;
    EXPECT_EQ(c.pe.idle, f.pe.idle) << what;
    EXPECT_EQ(c.pe.preload, f.pe.preload) << what;
    EXPECT_EQ(c.toggles.a_toggles, f.toggles.a_toggles) << what;
    EXPECT_EQ(c.toggles.b_toggles, f.toggles.b_toggles) << what;
    EXPECT_EQ(c.toggles.acc_toggles, f.toggles.acc_toggles) << what;
    EXPECT_TRUE(c == f) << what;

    // From first principles: the random MACs from the operands, one action per PE-edge, a preload
    // action per PE on every preload edge, the valid MACs every PE's terms.
    const job_result& r = cyc.result;
    EXPECT_EQ(c.pe.mac_random, nonzero_products(pr)) << what;
    EXPECT_EQ(c.pe.total(), rows * cols * (r.advance_edges + r.preload_edges)) << what;
    EXPECT_EQ(c.pe.preload, rows * cols * r.preload_edges) << what;
    EXPECT_EQ(c.pe.mac_random + c.pe.mac_gated, r.macs_padded) << what;
    // Something moved through the registers (every job has a nonzero operand with a third zeros
    // only by chance; a job of all zeros toggles nothing, so only ask when there is one).
    if (c.pe.mac_random > 0) {
        EXPECT_GT(c.toggles.a_toggles, 0u) << what;
        EXPECT_GT(c.toggles.b_toggles, 0u) << what;
    }

    // The memories: the DMA port's bytes per stream, and the scratchpads' as the memory report has them.
    EXPECT_EQ(c.dram_a_read_bytes, r.traffic.a_read) << what;
    EXPECT_EQ(c.dram_b_read_bytes, r.traffic.b_read) << what;
    EXPECT_EQ(c.dram_c_read_bytes, r.traffic.partials_read) << what;
    EXPECT_EQ(c.dram_c_write_bytes, r.traffic.c_written + r.traffic.partials_written) << what;
    const std::uint64_t osz = sizeof(typename Format::operand_type);
    if (buffered) {
        EXPECT_EQ(c.a_sram.write_bytes, r.memory.a.dram) << what;
        EXPECT_EQ(c.a_sram.read_bytes, r.memory.a.array) << what;
        EXPECT_EQ(c.b_sram.read_words * osz, r.memory.b.array) << what;
        EXPECT_EQ(c.c_sram.write_bytes, r.memory.c.array) << what;
        EXPECT_EQ(c.c_sram.read_bytes, r.memory.c.dram) << what;
        EXPECT_GT(c.a_sram.read_words, 0u) << what;
    } else {
        EXPECT_EQ(c.a_sram, buffer_counts{}) << what;
        EXPECT_EQ(c.c_sram, buffer_counts{}) << what;
    }
    EXPECT_EQ(c.rows, rows);
    EXPECT_EQ(c.cols, cols);
    EXPECT_EQ(c.operand_bits, 8 * osz);
    EXPECT_EQ(c.accumulator_bits, 8 * sizeof(typename Format::accumulator_type));
}

template <class Format>
class ActionCounts : public ::testing::Test {};
TYPED_TEST_SUITE(ActionCounts, systolic::test::format_types, systolic::test::format_name);

// 50 seeds per format, 200 in all: os, ws and is, buffers none and double, K-splits, both policies.
TYPED_TEST(ActionCounts, EnginesAgreeAndMatchTheOperands) {
    for (std::uint64_t seed = 1; seed <= 50; ++seed) {
        compare_counts<TypeParam>(7000 + 1000 * systolic::test::format_index<TypeParam> + seed);
        if (::testing::Test::HasFatalFailure()) return;
    }
}

// Without count_actions the PEs are not counted (no counter exists); the memories still are.
TEST(ActionCounts, OffCountsNoPeActions) {
    const auto pr = make_problem<int8_format>({2, 2, 2}, {1, 2, 3, 4}, {1, 0, 2, 1});
    for (engine_kind e : {engine_kind::cycle, engine_kind::functional}) {
        job_options o;
        o.run.engine = e;
        const auto r = bench_set<int8_format>::get(2, 2).run(pr, o);
        ASSERT_TRUE(r.pass());
        EXPECT_EQ(r.result.actions.pe, pe_action_counts{});
        EXPECT_EQ(r.result.actions.toggles, toggle_counts{});
        EXPECT_EQ(r.result.actions.dram_a_read_bytes, 4u);
    }
}

// Worked by hand: int8 on 2 x 2 PEs, output stationary, M = K = P = 2 (one tile, 4 edges):
//   A = [[1, 2], [3, -1]], B = [[1, 0], [2, 1]] (B(k, j)).
// PE(i, j) holds A(i, e - i - j) and B(e - i - j, j) on edge e (0 outside 0..1); the job starts
// cleared, and ends with no clear after the tile.
//   A registers (8 bits; 3 = 0000'0011, -1 = 1111'1111):
//     PE(0,0): 1, 2, 0, 0      0->1 1, 1->2 2, 2->0 1                 = 4
//     PE(0,1): 0, 1, 2, 0                                              = 4
//     PE(1,0): 0, 3, -1, 0     0->3 2, 3->-1 6, -1->0 8               = 16
//     PE(1,1): 0, 0, 3, -1     2 + 6 (holds -1 after)                 = 8     a_toggles = 32
//   B registers: column 0 is 1, 2; column 1 is 0, 1
//     PE(0,0): 1, 2, 0, 0 = 4;  PE(1,0): 0, 1, 2, 0 = 4;  PE(0,1): 0, 0, 1, 0 = 2;  PE(1,1): 0, 0, 0, 1 = 1
//                                                                      b_toggles = 11
//   Accumulators (32 bits), their partial sums after each MAC:
//     PE(0,0): 1, 5     0->1 1, 1->5 1                                 = 2
//     PE(0,1): 0, 2     0->0 0, 0->2 1                                 = 1
//     PE(1,0): 3, 1     0->3 2, 3->1 1                                 = 3
//     PE(1,1): 0, -1    0->0 0, 0->-1 32                               = 32    acc_toggles = 38
//   Actions: 4 PEs x 4 edges = 16; 8 valid MACs, of which B(0, 1) = 0 gates 2; 8 idle.
TEST(ActionCounts, HandWorkedTwoByTwo) {
    const auto pr = make_problem<int8_format>({2, 2, 2}, {1, 2, 3, -1}, {1, 0, 2, 1});
    for (engine_kind e : {engine_kind::cycle, engine_kind::functional}) {
        job_options o;
        o.run.engine = e;
        o.run.count_actions = true;
        const auto r = bench_set<int8_format>::get(2, 2).run(pr, o);
        ASSERT_TRUE(r.pass());
        const action_counts& c = r.result.actions;
        EXPECT_EQ(c.toggles.a_toggles, 32u) << to_string(e);
        EXPECT_EQ(c.toggles.b_toggles, 11u) << to_string(e);
        EXPECT_EQ(c.toggles.acc_toggles, 38u) << to_string(e);
        EXPECT_EQ(c.pe.mac_random, 6u) << to_string(e);
        EXPECT_EQ(c.pe.mac_gated, 2u) << to_string(e);
        EXPECT_EQ(c.pe.idle, 8u) << to_string(e);
        EXPECT_EQ(c.pe.preload, 0u) << to_string(e);
    }
}

// The one-edge form of array_core (a fabric's arrays) counts as the streams' kernel does: the same
// random skewed streams (some lanes invalid throughout, a third of the values zero) through one core
// run by run and through another edge by edge, on every shape of the engine test, give the same
// tallies and sums.
template <class Format>
void one_edge_form_counts_as_the_streams(std::size_t rows, std::size_t cols, std::uint64_t seed) {
    using T = typename Format::operand_type;
    std::mt19937_64 rng(seed);
    const std::uint64_t kc = 1 + rng() % 13;
    std::vector<T> a(rows * kc), b(kc * cols);
    for (auto* v : {&a, &b})
        for (auto& x : *v)
            x = rng() % 3 == 0 ? T{} : value_from<T>(double(std::int64_t(rng() % 255) - 127));
    std::vector<std::uint64_t> row_delay(rows), col_delay(cols);
    std::vector<std::uint8_t> row_valid(rows), col_valid(cols);
    std::uint64_t edges = 0;
    for (std::size_t i = 0; i < rows; ++i) {
        row_delay[i] = i + rng() % 3;
        row_valid[i] = rng() % 4 != 0;
        edges = std::max(edges, row_delay[i] + kc + 2);
    }
    for (std::size_t j = 0; j < cols; ++j) {
        col_delay[j] = j + rng() % 3;
        col_valid[j] = rng() % 4 != 0;
        edges = std::max(edges, col_delay[j] + kc + 2);
    }
    const typename array_core<Format>::streams in{
        a.data(),        kc, b.data(), cols, kc, row_delay.data(), col_delay.data(), row_valid.data(),
        col_valid.data()};
    edge_tally by_runs, by_edges;
    array_core<Format> runs(rows, cols), one(rows, cols);
    runs.tally_into(&by_runs);
    one.tally_into(&by_edges);
    runs.advance(in, 0, edges);

    std::vector<T> west(rows), north(cols);
    std::vector<std::uint8_t> west_ok(rows), north_ok(cols);
    for (std::uint64_t e = 0; e < edges; ++e) {
        for (std::size_t i = 0; i < rows; ++i) {
            const bool in_stream = e >= row_delay[i] && e - row_delay[i] < kc;
            west_ok[i] = in_stream && row_valid[i];
            west[i] = in_stream ? a[i * kc + (e - row_delay[i])] : T{};
        }
        for (std::size_t j = 0; j < cols; ++j) {
            const bool in_stream = e >= col_delay[j] && e - col_delay[j] < kc;
            north_ok[j] = in_stream && col_valid[j];
            north[j] = in_stream ? b[(e - col_delay[j]) * cols + j] : T{};
        }
        one.advance(west.data(), west_ok.data(), north.data(), north_ok.data());
    }
    const std::string what = std::string(Format::name) + " " + std::to_string(rows) + "x" +
                             std::to_string(cols) + " seed " + std::to_string(seed);
    EXPECT_EQ(by_runs.mac_edges, edges) << what;
    EXPECT_EQ(by_edges.mac_edges, edges) << what;
    EXPECT_EQ(by_edges.valid, by_runs.valid) << what;
    EXPECT_EQ(by_edges.random, by_runs.random) << what;
    EXPECT_EQ(by_edges.row_toggles, by_runs.row_toggles) << what;
    EXPECT_EQ(by_edges.col_toggles, by_runs.col_toggles) << what;
    EXPECT_EQ(by_edges.sum_toggles, by_runs.sum_toggles) << what;
    EXPECT_GT(by_runs.row_toggles + by_runs.col_toggles, 0u) << what;
    for (std::size_t i = 0; i < rows; ++i)
        for (std::size_t j = 0; j < cols; ++j)
            EXPECT_EQ(register_bits(one.accumulator(i, j)), register_bits(runs.accumulator(i, j)))
                << what << " PE(" << i << ", " << j << ")";
}

TYPED_TEST(ActionCounts, OneEdgeFormCountsAsTheStreams) {
    std::uint64_t seed = 1;
    for (const std::size_t n : sizes)
        one_edge_form_counts_as_the_streams<TypeParam>(n, n, seed++);
    for (const auto& [rows, cols] : rect_shapes)
        for (int repeat = 0; repeat < 3; ++repeat)
            one_edge_form_counts_as_the_streams<TypeParam>(rows, cols, seed++);
    one_edge_form_counts_as_the_streams<TypeParam>(64, 64, seed++);
}

// The zero test and the widths, on their own.
TEST(ActionCounts, ZerosAndWidths) {
    EXPECT_TRUE(operand_is_zero(value_from<float>(-0.0)));
    EXPECT_TRUE(operand_is_zero(value_from<bf16>(-0.0)));
    EXPECT_FALSE(operand_is_zero(value_from<bf16>(1.0)));
    EXPECT_EQ(toggles_between(std::int8_t{0}, std::int8_t{-1}), 8u);
    EXPECT_EQ(toggles_between(std::int32_t{0}, std::int32_t{-1}), 32u);
    EXPECT_EQ(toggles_between(std::int64_t{0}, std::int64_t{-1}), 64u);
    EXPECT_EQ(toggles_between(value_from<bf16>(0.0), value_from<bf16>(-0.0)), 1u);
}

// The portable bit count (every path but AVX-512's) against the instruction, on random words.
TEST(ActionCounts, PortableBitCountIsThePopcount) {
    std::mt19937_64 rng(38);
    for (int n = 0; n < 100000; ++n) {
        const std::uint64_t x = rng() >> (n % 64);
        ASSERT_EQ(bit_count(x), unsigned(__builtin_popcountll(x))) << x;
        ASSERT_EQ(bit_count(std::uint32_t(x)), unsigned(__builtin_popcount(std::uint32_t(x)))) << x;
    }
}

}  // namespace
