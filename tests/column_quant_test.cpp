// Per-column (per-channel) requantization through the whole testbench: the vectors placed after C
// in the job's memory, read by the output stage over the DMA port, and every int8 output checked by
// the scoreboard against the reference's per-column rule. Both engines, all three dataflows,
// K-splitting both ways, with and without per-column zero points; the seeds' example worked out by
// hand; a vector the bus refuses ends the job with a bus error naming it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "bench_set.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

const std::vector<std::pair<std::size_t, std::size_t>> arrays = {{2, 2}, {3, 3}, {4, 2}, {2, 5}};

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<int8_format>::build_shapes(arrays);
        bench_set<int32_format>::build_shapes(arrays);
        bench_set<fp32_format>::build_shapes(arrays);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

job_options per_column(bool zero_points) {
    job_options o;
    o.run.quant.enabled = true;
    o.run.quant.columns = column_vectors{0, zero_points};
    return o;
}

// The seeds' example, C = [[7,2,5],[16,5,14],[25,8,23]], with scales 1, 1/2, 1/4 (nearest even:
// 2.5 -> 2, 1.25 -> 1, 3.5 -> 4, 5.75 -> 6) and zero points 0, 1, -1.
TEST(ColumnQuant, SeedExampleByHand) {
    auto pr = seed_example<int32_format>();
    pr.column_scales = {1, 0.5, 0.25};
    pr.column_zero_points = {0, 1, -1};
    auto& b = bench_set<int32_format>::get(2, 2);
    for (const engine_kind e : {engine_kind::cycle, engine_kind::functional}) {
        for (const dataflow_kind df : {dataflow_kind::os, dataflow_kind::ws, dataflow_kind::is}) {
            for (const bool zp : {false, true}) {
                auto o = per_column(zp);
                o.run.engine = e;
                o.run.dataflow = df;
                const auto out = b.run(pr, o);
                const std::string what = std::string(to_string(e)) + " " + to_string(df) + (zp ? " zp" : "");
                EXPECT_TRUE(out.pass())
                    << what << ": " << (out.scoreboard.errors.empty() ? "" : out.scoreboard.errors[0]);
                EXPECT_GT(out.scoreboard.checked, 0u) << what;
                const std::vector<std::int8_t> want =
                    zp ? std::vector<std::int8_t>{7, 2, 0, 16, 3, 3, 25, 5, 5}
                       : std::vector<std::int8_t>{7, 1, 1, 16, 2, 4, 25, 4, 6};
                EXPECT_EQ(out.c_as<std::int8_t>(), want) << what;
            }
        }
    }
}

// The same vectors for every column give per-tensor's C exactly.
TEST(ColumnQuant, UniformVectorIsPerTensor) {
    const auto pr0 = random_problem<int8_format>({7, 9, 11}, 5);
    auto& b = bench_set<int8_format>::get(3, 3);
    job_options tensor;
    tensor.run.quant.enabled = true;
    tensor.run.quant.scale = 1.0 / 97;
    tensor.run.quant.zero_point = 3;
    const auto once = b.run(pr0, tensor);
    ASSERT_TRUE(once.pass());
    auto pr = pr0;
    pr.column_scales.assign(11, 1.0 / 97);
    pr.column_zero_points.assign(11, 3);
    const auto cols = b.run(pr, per_column(true));
    ASSERT_TRUE(cols.pass());
    EXPECT_EQ(cols.c, once.c);
}

template <class Format>
void random_cases(std::uint64_t first, std::uint64_t count) {
    for (std::uint64_t seed = first; seed < first + count; ++seed) {
        std::mt19937_64 rng(seed);
        const auto [rows, cols] = arrays[rng() % arrays.size()];
        const problem_shape s{1 + rng() % 9, 1 + rng() % 13, 1 + rng() % 15};
        auto pr = random_problem<Format>(s, rng());
        const bool zp = rng() % 2;
        for (std::uint64_t j = 0; j < s.p; ++j) {
            // Scales over four decades, so that columns differ and some saturate.
            pr.column_scales.push_back(std::pow(10.0, -4.0 + 4.0 * double(rng() % 1000) / 1000));
            if (zp) pr.column_zero_points.push_back(std::int32_t(rng() % 41) - 20);
        }
        auto o = per_column(zp);
        o.run.quant.rounding = static_cast<rounding_mode>(rng() % 3);
        o.run.k_tile = rng() % 2 ? 0 : 1 + rng() % s.k;
        o.run.policy = rng() % 2 ? k_policy::partials : k_policy::preserve;
        o.run.order = static_cast<tile_order>(rng() % 4);
        o.run.order_seed = rng();
        auto& b = bench_set<Format>::get(rows, cols);
        std::vector<std::uint8_t> first_c;
        for (const dataflow_kind df : {dataflow_kind::os, dataflow_kind::ws, dataflow_kind::is}) {
            for (const engine_kind e : {engine_kind::cycle, engine_kind::functional}) {
                o.run.dataflow = df;
                o.run.engine = e;
                if (df != dataflow_kind::os)
                    o.run.policy = k_policy::preserve;  // stationary: no partial buffer
                const std::string what = std::string(Format::name) + " " + describe(s, rows, cols, o, seed);
                const auto out = b.run(pr, o);
                ASSERT_TRUE(out.pass())
                    << what << ": " << (out.scoreboard.errors.empty() ? "" : out.scoreboard.errors[0]);
                ASSERT_EQ(out.scoreboard.checked, s.m * s.p) << what;
                if (Format::is_integer) {  // integer sums do not depend on the order
                    if (first_c.empty()) first_c = out.c;
                    EXPECT_EQ(out.c, first_c) << what;
                }
            }
        }
    }
}

TEST(ColumnQuant, RandomInt8) {
    random_cases<int8_format>(100, 40);
}
TEST(ColumnQuant, RandomInt32) {
    random_cases<int32_format>(200, 40);
}
TEST(ColumnQuant, RandomFp32) {
    random_cases<fp32_format>(300, 40);
}

// The vector placed where the memory has nothing: the drain's read fails, the job ends with a bus
// error naming it, C is not written past the failure, and the bench runs the next job clean.
TEST(ColumnQuant, BusErrorOnTheVector) {
    auto pr = seed_example<int32_format>();
    pr.column_scales = {1, 0.5, 0.25};
    auto& b = bench_set<int32_format>::get(2, 2);
    auto o = per_column(false);
    matmul_job job = b.plan_memory(pr.shape, o);
    b.mem.resize(0x1000);
    job.run.quant.columns->base = 0x100000;
    b.controller.start(job);
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS), sc_core::SC_EXIT_ON_STARVATION);
    ASSERT_FALSE(b.controller.busy());
    EXPECT_EQ(b.controller.result().status, job_status::bus_error);
    EXPECT_NE(b.controller.result().error.find("scale vector"), std::string::npos)
        << b.controller.result().error;
    EXPECT_NE(b.controller.result().error.find("0x00100000"), std::string::npos)
        << b.controller.result().error;
    EXPECT_EQ(b.controller.result().real_outputs, 0u);
    const auto out = b.run(pr, o);
    EXPECT_TRUE(out.pass());
}

// What the job refuses: per-column scales without int8 output, with per-partial rounding, a
// misaligned vector, a vector under C.
TEST(ColumnQuant, ValidateJob) {
    matmul_job job = make_job({2, 3, 4}, 4, 1, 0x100, 0x200, 0x300);
    job.run.quant.enabled = true;
    job.run.quant.columns = column_vectors{0x400, true};
    EXPECT_EQ(validate_job(job, 4, 4), "");
    job.run.quant.columns->base = 0x404;
    EXPECT_EQ(validate_job(job, 4, 4), "the per-column scale vector is not 8-byte aligned");
    job.run.quant.columns->base = 0x2f8;  // 4 x 12 bytes: runs into C at 0x300
    EXPECT_EQ(validate_job(job, 4, 4), "C overlaps the per-column scale vector");
    job.run.quant.columns->base = 0x400;
    job.run.quant.per_partial = true;
    EXPECT_EQ(check_columns(job), "per-column scales quantize the complete sum only, not each partial");
    job.run.quant.per_partial = false;
    job.run.quant.enabled = false;
    job.c = make_layout(0x300, 2, 4, 4);
    EXPECT_EQ(validate_job(job, 4, 4), "per-column scales are for int8 output only");
}

}  // namespace
