// End-to-end cases from the seeds (001/003) and the core cases, each a full run through the
// SystemC model: tile controller -> bus monitor -> TLM memory, checked by the scoreboard.
// SystemC elaborates once per process, so every bench (one per array size) is built before the
// first sc_start and the jobs run one after another.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "bench_set.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"
#include "systolic/verify/testbench.h"

namespace {

using namespace systolic;
using namespace systolic::verify;
using fmt = int32_format;
using acc_t = fmt::accumulator_type;

const std::vector<std::size_t> bench_sizes = {1, 2, 3, 4, 5, 8};

testbench<fmt>& bench(std::size_t n) {
    return bench_set<fmt>::get(n);
}

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<fmt>::build(bench_sizes);
        bench_set<fmt>::build_shapes({{3, 5}, {5, 3}, {1, 4}});
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

// The shared end-of-test checks, plus: every write landed on C, C equals a reference computed
// here (not the scoreboard's copy), and the masked outputs follow the counting rule.
void expect_pass(const job_check<fmt>& out, const problem<fmt>& pr) {
    verify::expect_pass(out);
    EXPECT_EQ(out.scoreboard.writes, pr.shape.m * pr.shape.p);
    EXPECT_EQ(out.c_as<acc_t>(), reference_gemm<fmt>(pr.shape, pr.a, pr.b));
    EXPECT_EQ(out.result.masked_outputs, out.expected.outputs_masked);
}

std::vector<std::pair<std::uint64_t, std::uint64_t>> origins(const job_check<fmt>& out) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> v;
    for (const auto& t : out.result.tiles)
        v.emplace_back(t.where.r0, t.where.c0);
    return v;
}

TEST(SeedExample, ProducesTheSeedFigures) {
    const auto pr = seed_example<fmt>();
    const auto out = bench(2).run(pr);
    expect_pass(out, pr);
    EXPECT_EQ(out.c_as<acc_t>(), (std::vector<acc_t>{7, 2, 5, 16, 5, 14, 25, 8, 23}));
    using o = std::pair<std::uint64_t, std::uint64_t>;
    EXPECT_EQ(origins(out), (std::vector<o>{{0, 0}, {0, 2}, {2, 0}, {2, 2}}));
    ASSERT_EQ(out.result.tiles.size(), 4u);
    for (const auto& t : out.result.tiles)
        EXPECT_EQ(t.advance_edges, 5u);
    EXPECT_EQ(out.result.advance_edges, 20u);
    EXPECT_EQ(out.result.macs_padded, 48u);
    EXPECT_EQ(out.result.macs_real, 27u);
}

TEST(SeedExample, LastTileHasOneRealOutput) {
    // Row order visits (2,2) last, so the array still holds that tile's local result.
    const auto pr = seed_example<fmt>();
    auto& b = bench(2);
    const auto out = b.run(pr);
    expect_pass(out, pr);
    const auto& last = out.result.tiles.back();
    EXPECT_EQ(last.where.r0, 2u);
    EXPECT_EQ(last.where.c0, 2u);
    EXPECT_EQ(last.real_outputs, 1u);
    EXPECT_EQ(last.masked_outputs, 3u);
    EXPECT_EQ(b.array().at(0, 0).accumulator(), 23);
    EXPECT_EQ(b.array().at(0, 1).accumulator(), 0);
    EXPECT_EQ(b.array().at(1, 0).accumulator(), 0);
    EXPECT_EQ(b.array().at(1, 1).accumulator(), 0);
    EXPECT_EQ(out.c_as<acc_t>()[2 * 3 + 2], 23);
}

TEST(SeedExample, PaddingIsValidZerosSoEveryPeConsumesK) {
    const auto pr = seed_example<fmt>();
    auto& b = bench(2);
    const auto out = b.run(pr);
    expect_pass(out, pr);
    // In the last tile three of four PEs are padding, yet all consumed exactly K = 3 terms.
    for (std::size_t i = 0; i < 2; ++i)
        for (std::size_t j = 0; j < 2; ++j) {
            EXPECT_EQ(b.array().at(i, j).consumed(), 3u) << b.array().pe_name(i, j);
            EXPECT_TRUE(b.array().at(i, j).done(3));
        }
}

// Every operand read lies on elements of A or B: padding rows and columns are never read.
TEST(Padding, NoOutOfRangeOperandIsRead) {
    for (auto n : {2, 4, 8}) {
        auto& b = bench(n);
        const auto pr = random_problem<fmt>({5, 3, 7}, 11);
        const matmul_job job = b.plan_memory(pr.shape, job_options{});
        std::uint64_t reads = 0, stray = 0;
        b.monitor.dmi_reads = false;
        b.monitor.on_read = [&](const tlm::tlm_generic_payload& t) {
            ++reads;
            for (std::uint64_t off = 0; off < t.get_data_length(); off += sizeof(std::int32_t)) {
                const auto addr = t.get_address() + off;
                if (!job.a.covers(addr) && !job.b.covers(addr)) ++stray;
            }
        };
        const auto out = b.run(pr);
        EXPECT_EQ(out.job.a.base, job.a.base);
        b.monitor.on_read = nullptr;
        b.monitor.dmi_reads = true;
        expect_pass(out, pr);
        EXPECT_GT(reads, 0u);
        EXPECT_EQ(stray, 0u) << "N=" << n;
    }
}

TEST(OutputMask, OnlyRealOutputsAreWrittenAndNothingElseChanges) {
    for (auto n : {2, 3, 5, 8}) {
        const auto pr = random_problem<fmt>({7, 4, 6}, 3);
        const auto out = bench(n).run(pr);
        expect_pass(out, pr);
        std::uint64_t masked = 0, real = 0;
        for (const auto& t : out.result.tiles) {
            EXPECT_EQ(t.real_outputs, t.where.rows * t.where.cols);
            EXPECT_EQ(t.real_outputs + t.masked_outputs, std::uint64_t(n) * n);
            masked += t.masked_outputs;
            real += t.real_outputs;
        }
        EXPECT_EQ(real, 42u);
        EXPECT_EQ(masked, out.result.tiles.size() * n * n - 42u);
    }
}

TEST(Shapes, SingleElement) {
    const auto pr = make_problem<fmt>({1, 1, 1}, {6}, {7});
    for (auto n : {1, 2, 4}) {
        const auto out = bench(n).run(pr);
        expect_pass(out, pr);
        EXPECT_EQ(out.c_as<acc_t>(), (std::vector<acc_t>{42}));
        EXPECT_EQ(out.result.tiles.size(), 1u);
        EXPECT_EQ(out.result.advance_edges, 1u + 2 * (n - 1));
    }
}

TEST(Shapes, DimensionsDivisibleByN) {
    const auto pr = random_problem<fmt>({8, 5, 12}, 21);
    const auto out = bench(4).run(pr);
    expect_pass(out, pr);
    EXPECT_EQ(out.result.tiles.size(), 6u);
    EXPECT_EQ(out.result.masked_outputs, 0u);
    EXPECT_EQ(out.result.macs_padded, out.result.macs_real);
}

TEST(Shapes, NonSquare) {
    for (const problem_shape s : {problem_shape{5, 7, 3}, {1, 9, 9}, {9, 2, 1}, {3, 17, 11}, {13, 1, 4}}) {
        const auto pr = random_problem<fmt>(s, s.m * 100 + s.k * 10 + s.p);
        for (auto n : {2, 3}) {
            const auto out = bench(n).run(pr);
            expect_pass(out, pr);
        }
    }
}

TEST(Shapes, KEqualsOne) {
    const auto pr = random_problem<fmt>({6, 1, 5}, 5);
    const auto out = bench(4).run(pr);
    expect_pass(out, pr);
    EXPECT_EQ(out.expected.advance_edges_per_tile, 1u + 2 * 3);
}

TEST(Shapes, ArrayOfOnePe) {
    const auto pr = random_problem<fmt>({3, 4, 5}, 8);
    const auto out = bench(1).run(pr);
    expect_pass(out, pr);
    EXPECT_EQ(out.result.tiles.size(), 15u);
    EXPECT_EQ(out.result.advance_edges, 15u * 4);
    EXPECT_EQ(out.result.masked_outputs, 0u);
}

TEST(Shapes, ArrayLargerThanTheMatrix) {
    const auto pr = random_problem<fmt>({3, 4, 5}, 9);
    const auto out = bench(8).run(pr);
    expect_pass(out, pr);
    EXPECT_EQ(out.result.tiles.size(), 1u);
    EXPECT_EQ(out.result.masked_outputs, 64u - 15u);
    EXPECT_EQ(out.result.macs_padded, 64u * 4);
}

TEST(TileOrder, EveryOrderGivesTheSameC) {
    const auto pr = random_problem<fmt>({11, 6, 9}, 77);
    const auto reference = reference_gemm<fmt>(pr.shape, pr.a, pr.b);
    std::set<std::vector<std::pair<std::uint64_t, std::uint64_t>>> schedules;
    for (auto order :
         {tile_order::row_major, tile_order::col_major, tile_order::serpentine, tile_order::random}) {
        for (std::uint64_t seed : {1, 2, 3}) {
            job_options opt;
            opt.run.order = order;
            opt.run.order_seed = seed;
            const auto out = bench(3).run(pr, opt);
            expect_pass(out, pr);
            EXPECT_EQ(out.c_as<acc_t>(), reference) << to_string(order);
            schedules.insert(origins(out));
        }
    }
    // The orders really differ (row, col, snake, and three random schedules).
    EXPECT_GE(schedules.size(), 5u);
}

TEST(Layout, PackedRows) {
    const auto pr = random_problem<fmt>({5, 6, 7}, 4);
    job_options opt;
    opt.packed = true;
    const auto out = bench(4).run(pr, opt);
    expect_pass(out, pr);
    EXPECT_EQ(out.job.c.row_stride, 7u * sizeof(acc_t));
}

TEST(RandomShapes, MatchTheReference) {
    std::mt19937_64 rng(2026);
    for (int i = 0; i < 40; ++i) {
        const problem_shape s{1 + rng() % 19, 1 + rng() % 23, 1 + rng() % 19};
        const auto n = bench_sizes[rng() % bench_sizes.size()];
        job_options opt;
        opt.run.order = static_cast<tile_order>(rng() % 4);
        opt.run.order_seed = rng();
        const auto pr = random_problem<fmt>(s, rng(), 1 << 20);
        const auto out = bench(n).run(pr, opt);
        SCOPED_TRACE("N=" + std::to_string(n) + " M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
                     " P=" + std::to_string(s.p));
        expect_pass(out, pr);
    }
}

// R x C arrays: R row modules of C PEs each, named by position; ceil(M/R) x ceil(P/C) tiles of up to
// R rows by C columns, each K + R + C - 2 edges, counted as they were stepped.
TEST(Rectangular, ArrayIsRRowsOfCPesAndTilesFollowRAndC) {
    for (const auto& [rows, cols] :
         std::vector<std::pair<std::size_t, std::size_t>>{{3, 5}, {5, 3}, {1, 4}}) {
        auto& b = bench_set<fmt>::get(rows, cols);
        const std::string shape = std::to_string(rows) + "x" + std::to_string(cols);
        SCOPED_TRACE(shape);
        EXPECT_EQ(b.array().rows(), rows);
        EXPECT_EQ(b.array().cols(), cols);
        const std::string base = std::string(b.array().name());
        EXPECT_EQ(std::string(b.array().at(rows - 1, cols - 1).name()),
                  base + ".row_" + std::to_string(rows - 1) + ".pe_" + std::to_string(rows - 1) + "_" +
                      std::to_string(cols - 1));
        EXPECT_EQ(b.array().pe_name(rows - 1, 0), "pe_" + std::to_string(rows - 1) + "_0");
        const std::vector<sc_core::sc_object*> row_modules = b.array().get_child_objects();
        EXPECT_EQ(row_modules.size(), rows);
        for (const auto* r : row_modules)
            EXPECT_EQ(r->get_child_objects().size(), cols) << r->name();

        const problem_shape s{13, 6, 11};  // neither M nor P a multiple of 3 or 5
        const auto pr = random_problem<fmt>(s, 7, 1 << 20);
        const auto out = b.run(pr);
        expect_pass(out, pr);
        const std::uint64_t tiles = (13 + rows - 1) / rows * ((11 + cols - 1) / cols);
        ASSERT_EQ(out.result.tiles.size(), tiles);
        for (const auto& t : out.result.tiles) {
            EXPECT_EQ(t.advance_edges, 6 + rows + cols - 2);
            EXPECT_EQ(t.macs_padded, rows * cols * 6);
            EXPECT_EQ(t.real_outputs, t.where.rows * t.where.cols);
            EXPECT_EQ(t.masked_outputs, rows * cols - t.real_outputs);
        }
        EXPECT_EQ(out.result.advance_edges, tiles * (6 + rows + cols - 2));
        EXPECT_EQ(out.result.masked_outputs, tiles * rows * cols - 13 * 11);
    }
}

TEST(Timing, PhasesAddUp) {
    const auto pr = random_problem<fmt>({4, 9, 4}, 1);
    auto& b = bench(2);
    const auto out = b.run(pr);
    expect_pass(out, pr);
    const auto clock = b.controller.cfg().clock_period;
    const auto& ph = out.result.phases;
    EXPECT_EQ(ph.advance, double(out.result.advance_edges) * clock);
    EXPECT_EQ(ph.clear, double(out.result.tiles.size()) * clock);
    EXPECT_GT(ph.load, sc_core::SC_ZERO_TIME);
    EXPECT_GT(ph.drain, sc_core::SC_ZERO_TIME);
    EXPECT_EQ(out.result.end - out.result.start, ph.clear + ph.load + ph.advance + ph.drain);
}

// A C that lies outside the memory: the drain's write gets an address error, the job ends with a
// bus error naming the transaction, and nothing hangs.
TEST(Errors, BusErrorEndsTheJobCleanly) {
    auto& b = bench(2);
    b.mem.resize(0x1000);
    auto job = make_job({2, 2, 2}, 4, 8, 0x100, 0x200, 0x10000);
    b.controller.start(job);
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS), sc_core::SC_EXIT_ON_STARVATION);
    ASSERT_FALSE(b.controller.busy());
    EXPECT_EQ(b.controller.result().status, job_status::bus_error);
    EXPECT_NE(b.controller.result().error.find("WRITE 0x00010000"), std::string::npos)
        << b.controller.result().error;
    EXPECT_NE(b.controller.result().error.find("TLM_ADDRESS_ERROR_RESPONSE"), std::string::npos);
    // The bench is still usable afterwards.
    const auto pr = seed_example<fmt>();
    expect_pass(b.run(pr), pr);
}

TEST(Errors, MalformedJobIsRejected) {
    auto& b = bench(2);
    auto job = make_job({2, 2, 2}, 4, 8, 0x100, 0x200, 0x104);  // C overlaps A
    EXPECT_THROW(b.controller.start(job), std::invalid_argument);
    EXPECT_FALSE(b.controller.busy());
    job = make_job({0, 2, 2}, 4, 8, 0x100, 0x200, 0x300);
    EXPECT_THROW(b.controller.start(job), std::invalid_argument);
}

}  // namespace
