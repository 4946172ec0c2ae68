// The memory system (memory_system.h, docs/memory.md): scratchpads with reuse, double buffering,
// DRAM bandwidth and stalls. Checked from first principles (the reuse formula per tile order, no
// stalls when nothing limits, bytes / bandwidth when bandwidth does) and by running jobs through the
// verification environment, whose scoreboard checks every value, on both engines.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "bench_set.h"
#include "systolic/memory_system.h"
#include "systolic/tile_plan.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

const std::vector<std::pair<std::size_t, std::size_t>> kShapes = {{2, 2}, {4, 4}, {2, 3}, {3, 2}};

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<int32_format>::build_shapes(kShapes);
        bench_set<int8_format>::build_shapes(kShapes);
        bench_set<fp32_format>::build_shapes(kShapes);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

constexpr std::uint64_t kOp = 4;        // int32 operands
constexpr std::uint64_t kAcc = 8;       // ... and their int64 accumulators
constexpr std::uint64_t kLatency = 10;  // the testbench memory's latency, in 1 ns cycles

memory_config buffers(std::uint64_t a = 0, std::uint64_t b = 0, std::uint64_t c = 0, double bandwidth = 0) {
    memory_config m;
    m.buffers = buffer_mode::double_buffered;
    m.a_sram = a;
    m.b_sram = b;
    m.c_sram = c;
    m.dram_bandwidth = bandwidth;
    return m;
}

job_options with(const memory_config& m, tile_order order = tile_order::row_major,
                 engine_kind engine = engine_kind::cycle) {
    job_options o;
    o.run.memory = m;
    o.run.order = order;
    o.run.engine = engine;
    return o;
}

std::uint64_t cycles_of(const job_result& r) {
    return std::uint64_t(std::llround((r.end - r.start) / sc_core::sc_time(1, sc_core::SC_NS)));
}

// The reuse formula, written from the tile grid alone: with A and B scratchpads of exactly two
// full blocks each, row order reads every A row once and all of B once per row of tiles; column
// order the other way round; snake order as row order, less the two B blocks it still holds at
// each turn (the last two columns of a left-to-right row, the first two of a right-to-left one).
struct dram_bytes {
    std::uint64_t a, b;
};
dram_bytes reuse_formula(tile_order order, problem_shape s, std::uint64_t r, std::uint64_t c) {
    const std::uint64_t tr = (s.m + r - 1) / r, tc = (s.p + c - 1) / c;
    const std::uint64_t a_all = s.m * s.k * kOp, b_all = s.k * s.p * kOp;
    auto width = [&](std::uint64_t col) { return std::min(c, s.p - col * c); };
    switch (order) {
        case tile_order::row_major:
            return {a_all, tc > 2 ? tr * b_all : b_all};
        case tile_order::col_major:
            return {tr > 2 ? tc * a_all : a_all, b_all};
        case tile_order::serpentine: {
            if (tc <= 2) return {a_all, b_all};
            std::uint64_t saved = 0;
            for (std::uint64_t turn = 0; turn + 1 < tr; ++turn)
                saved += s.k * (turn % 2 == 0 ? width(tc - 1) + width(tc - 2) : width(0) + width(1)) * kOp;
            return {a_all, tr * b_all - saved};
        }
        case tile_order::random:
            break;
    }
    return {0, 0};
}

matmul_job plain_job(problem_shape s) {
    return make_job(s, kOp, kAcc, 0x0, 0x100000, 0x200000);
}

TEST(MemoryRules, ReuseFormulaPerTileOrderFromThePlan) {
    const problem_shape s{10, 6, 14};  // on 3 x 4 and 4 x 3 arrays, edge tiles narrower and lower
    for (auto [r, c] : std::vector<std::pair<std::uint64_t, std::uint64_t>>{{2, 2}, {3, 4}, {4, 3}}) {
        for (auto order : {tile_order::row_major, tile_order::col_major, tile_order::serpentine}) {
            matmul_job job = plain_job(s);
            job.run.order = order;
            const tile_plan plan(job, r, c);
            const auto m = buffers(2 * r * s.k * kOp, 2 * s.k * c * kOp);
            const buffer_plan bp = plan_buffers(m, plan, kOp);
            std::uint64_t a = 0, b = 0;
            for (const auto& u : bp.units) {
                a += u.a_read ? u.a_bytes : 0;
                b += u.b_read ? u.b_bytes : 0;
            }
            const auto want = reuse_formula(order, s, r, c);
            EXPECT_EQ(a, want.a) << to_string(order) << " " << r << "x" << c;
            EXPECT_EQ(b, want.b) << to_string(order) << " " << r << "x" << c;
            EXPECT_EQ(bp.streamed_tiles, 0u);
        }
    }
}

TEST(MemoryRules, UnlimitedScratchpadsReadEachOperandOnceInAnyOrder) {
    const problem_shape s{9, 5, 11};
    for (auto order :
         {tile_order::row_major, tile_order::col_major, tile_order::serpentine, tile_order::random}) {
        matmul_job job = plain_job(s);
        job.run.order = order;
        job.run.order_seed = 7;
        const buffer_plan bp = plan_buffers(buffers(), tile_plan(job, 2, 3), kOp);
        std::uint64_t a = 0, b = 0;
        for (const auto& u : bp.units) {
            a += u.a_read ? u.a_bytes : 0;
            b += u.b_read ? u.b_bytes : 0;
        }
        EXPECT_EQ(a, s.m * s.k * kOp) << to_string(order);
        EXPECT_EQ(b, s.k * s.p * kOp) << to_string(order);
    }
}

TEST(MemoryRules, TilesThatDoNotFitTwiceAreStreamedInKSegments) {
    const problem_shape s{4, 40, 4};
    const matmul_job job = plain_job(s);
    const tile_plan plan(job, 2, 2);
    // 2 rows x 8 terms x 4 bytes = 64 bytes a block; two of them fit in 128.
    const buffer_plan bp = plan_buffers(buffers(128, 128), plan, kOp);
    EXPECT_EQ(bp.streamed_tiles, 4u);
    EXPECT_EQ(bp.stream_k_chunk, 8u);
    EXPECT_EQ(bp.units.size(), 4u * 5u);
    for (const auto& u : bp.units)
        EXPECT_LE(2 * u.a_bytes, 128u);
}

TEST(MemoryRules, ConfigChecksSayWhatIsWrong) {
    matmul_job job = plain_job({4, 4, 4});
    memory_config none;
    none.a_sram = 1024;
    EXPECT_NE(check_memory(none, job, 2, 2, kOp, kAcc).find("need buffers double"), std::string::npos);
    EXPECT_NE(validate_job(
                  [&] {
                      auto j = job;
                      j.run.memory = none;
                      return j;
                  }(),
                  kOp, kAcc)
                  .find("buffers double"),
              std::string::npos);
    EXPECT_NE(check_memory(buffers(0, 0, 16), job, 2, 2, kOp, kAcc).find("smaller than one tile's outputs"),
              std::string::npos);
    EXPECT_NE(check_memory(buffers(8), job, 2, 2, kOp, kAcc).find("A scratchpad"), std::string::npos);
    EXPECT_EQ(check_memory(buffers(16, 16, 32), job, 2, 2, kOp, kAcc), "");
    memory_config bad = buffers();
    bad.dram_bandwidth = -1;
    EXPECT_NE(check_memory(bad, job, 2, 2, kOp, kAcc).find("bandwidth"), std::string::npos);
    job.run.k_tile = 2;
    job.run.policy = k_policy::partials;
    job.partial = job.c;
    EXPECT_NE(check_memory_config(buffers(), job).find("preserve"), std::string::npos);
}

// --dram-bandwidth's range, in the model where every executable's jobs are checked: 1e-19 bytes
// per cycle once wrapped a transfer's cycle count to 0 (no stalls at all), and a job whose DRAM
// time passes what the simulated time holds ended in SystemC's E544. Now the cycle count saturates,
// a bandwidth below the least is refused, and so is a job too large for the bandwidth it has.
TEST(MemoryRules, TinyBandwidthIsRefusedAndNothingWraps) {
    constexpr std::uint64_t all = ~std::uint64_t{0};
    EXPECT_EQ(transfer_cycles(72, 0), 0u);  // unlimited
    EXPECT_EQ(transfer_cycles(72, 8), 9u);
    EXPECT_EQ(transfer_cycles(73, 8), 10u);
    EXPECT_EQ(transfer_cycles(72, 1e-3), 72000u);
    EXPECT_EQ(transfer_cycles(72, 1e-19), all);  // 7.2e20 cycles: saturated, not wrapped
    EXPECT_EQ(transfer_cycles(all, 1e-300), all);
    EXPECT_EQ(transfer_cycles(1, 4.9e-324), all);
    // The channel's timeline saturates too: the fetch ends at the end of time, not at once.
    memory_timeline t(1e-19);
    EXPECT_EQ(t.fetch(memory_timeline::stream::a, 72, kLatency).end, all);
    const matmul_job job = plain_job({4, 4, 4});
    EXPECT_EQ(min_dram_bandwidth, 1e-3);
    for (const double bw : {1e-9, 1e-19, 9.99e-4}) {
        SCOPED_TRACE(bw);
        memory_config m = buffers(0, 0, 0, bw);
        EXPECT_NE(check_memory_config(m, job).find("at least 0.001 bytes per cycle"), std::string::npos)
            << check_memory_config(m, job);
        m.buffers = buffer_mode::none;
        EXPECT_NE(check_memory(m, job, 2, 2, kOp, kAcc).find("at least 0.001"), std::string::npos);
    }
    EXPECT_EQ(check_memory(buffers(0, 0, 0, 1e-3), job, 2, 2, kOp, kAcc), "");
    // A job whose DRAM traffic at the least bandwidth would pass max_dram_cycles: on a 1 x 1 array
    // each of its 2^32 tiles reads a row of A and a column of B, 2^51 bytes in all.
    const matmul_job huge = plain_job({1 << 16, 1 << 16, 1 << 16});
    memory_config slow;
    slow.dram_bandwidth = 1e-3;
    const std::string err = check_memory(slow, huge, 1, 1, kOp, kAcc);
    EXPECT_NE(err.find("cycles on the DRAM channel at 0.001 bytes per cycle, more than the 2^48"),
              std::string::npos)
        << err;
    slow.dram_bandwidth = 0;  // unlimited: no DRAM time to bound
    EXPECT_EQ(check_memory(slow, huge, 1, 1, kOp, kAcc), "");
}

class MemoryTimeline : public ::testing::TestWithParam<channel_timing> {};
INSTANTIATE_TEST_SUITE_P(Timing, MemoryTimeline,
                         ::testing::Values(channel_timing::events, channel_timing::stepped),
                         [](const auto& info) {
                             return std::string(info.param == channel_timing::events ? "events" : "stepped");
                         });

TEST_P(MemoryTimeline, ReplayAtTheSameBandwidthGivesTheSameStalls) {
    memory_timeline t(2.0, 0, GetParam());
    t.fetch(memory_timeline::stream::a, 64, 10);
    t.clear(1);
    t.wait_operands();
    t.fetch(memory_timeline::stream::a, 64, 10);
    t.advance(5);
    t.clear(1);
    const std::uint64_t w = t.wait_operands();
    // The first read ends at 42 (10 + 64 / 2), the second, issued then, at 84; the array got to 48.
    EXPECT_EQ(t.prefetch_cycles(), 41u);
    EXPECT_EQ(w, 36u);
    EXPECT_EQ(t.stall_cycles(), w);
    EXPECT_EQ(t.replay_stalls(2.0), w);
    EXPECT_EQ(t.replay_stalls(0), 4u);  // the latency alone: the second read ends at 20, the array is at 16
    EXPECT_TRUE(std::isinf(t.zero_stall_bandwidth()));
}

// The two timings on the same random calls, a bounded C buffer and bandwidths from a fraction of a
// byte per cycle to unlimited: every request's start and end, every wait, and the totals agree.
TEST(MemoryTimelineTimings, SteppingTheChannelAgreesWithTheEventRules) {
    std::mt19937_64 rng(20261201);
    auto pick = [&rng](std::uint64_t lo, std::uint64_t hi) {
        return std::uniform_int_distribution<std::uint64_t>(lo, hi)(rng);
    };
    const double bandwidths[] = {0, 0.37, 1, 2.5, 16, 64};
    for (int run = 0; run < 300; ++run) {
        const double bw = bandwidths[pick(0, std::size(bandwidths) - 1)];
        const std::uint64_t capacity = pick(0, 1) ? 0 : pick(64, 512);
        memory_timeline ev(bw, capacity, channel_timing::events), st(bw, capacity, channel_timing::stepped);
        auto same = [&](const memory_timeline::request& a, const memory_timeline::request& b) {
            EXPECT_EQ(a.begin, b.begin);
            EXPECT_EQ(a.end, b.end);
            EXPECT_EQ(a.issue, b.issue);
        };
        const int calls = int(pick(1, 60));
        for (int i = 0; i < calls; ++i) {
            switch (pick(0, 6)) {
                case 0: {
                    const std::uint64_t bytes = pick(0, 300), lat = pick(0, 12);
                    const auto what = pick(0, 1) ? memory_timeline::stream::a : memory_timeline::stream::b;
                    same(ev.fetch(what, bytes, lat), st.fetch(what, bytes, lat));
                    break;
                }
                case 1:
                    EXPECT_EQ(ev.wait_operands(), st.wait_operands());
                    break;
                case 2: {
                    const std::uint64_t n = pick(0, 40);
                    ev.advance(n);
                    st.advance(n);
                    break;
                }
                case 3:
                    ev.clear(1);
                    st.clear(1);
                    break;
                case 4: {
                    const std::uint64_t bytes = pick(1, 64), lat = pick(0, 12);
                    EXPECT_EQ(ev.wait_room(bytes), st.wait_room(bytes));
                    same(ev.write(bytes, lat), st.write(bytes, lat));
                    break;
                }
                default:
                    break;
            }
            ASSERT_EQ(ev.now(), st.now()) << "run " << run << ", call " << i;
        }
        EXPECT_EQ(ev.finish(), st.finish());
        EXPECT_EQ(ev.now(), st.now());
        EXPECT_EQ(ev.stall_cycles(), st.stall_cycles());
        EXPECT_EQ(ev.prefetch_cycles(), st.prefetch_cycles());
        EXPECT_EQ(ev.peak_bandwidth(), st.peak_bandwidth());
        if (HasFailure()) {
            ADD_FAILURE() << "run " << run << ": bandwidth " << bw << ", C buffer " << capacity;
            return;
        }
    }
}

// ---- jobs through the verification environment (its scoreboard checks every value) ----

TEST(MemoryJobs, NoneKeepsTodaysTimesAndFillsTheReport) {
    auto& b = bench_set<int32_format>::get(2, 2);
    const auto pr = seed_example<int32_format>();
    const auto out = b.run(pr);
    expect_pass(out);
    EXPECT_EQ(out.result.phases.stall, sc_core::SC_ZERO_TIME);
    EXPECT_EQ(out.result.memory.stall_cycles, 0u);
    EXPECT_EQ(out.result.memory.total_cycles, cycles_of(out.result));
    EXPECT_EQ(out.result.memory.a.dram, out.result.traffic.a_read);
    EXPECT_EQ(out.result.memory.c.dram, out.result.traffic.c_written);
}

TEST(MemoryJobs, NoneWithBandwidthAddsBytesOverBandwidthPerTransfer) {
    auto& b = bench_set<int32_format>::get(2, 2);
    const auto pr = seed_example<int32_format>();
    const auto base = b.run(pr);
    job_options o;
    o.run.memory.dram_bandwidth = 3;
    const auto slow = b.run(pr, o);
    expect_pass(slow);
    // Each access: A rows of kc terms, B rows of the tile's columns, C rows of its columns.
    std::uint64_t extra = 0;
    auto per = [](std::uint64_t bytes) { return (bytes + 2) / 3; };
    for (const auto& t : base.result.tiles) {
        const tile& w = t.where;
        extra += w.rows * per(3 * kOp) + 3 * per(w.cols * kOp) + w.rows * per(w.cols * kAcc);
    }
    EXPECT_EQ(cycles_of(slow.result), cycles_of(base.result) + extra);
    EXPECT_EQ(slow.result.memory.stall_cycles, 0u);
}

TEST(MemoryJobs, UnlimitedBandwidthAndRoomyBuffersDoNotStall) {
    auto& b = bench_set<int32_format>::get(4, 4);
    const problem_shape s{16, 64, 16};
    const auto pr = random_problem<int32_format>(s, 3);
    const auto out = b.run(pr, with(buffers()));
    expect_pass(out);
    const memory_report& m = out.result.memory;
    EXPECT_EQ(m.stall_cycles, 0u);
    EXPECT_EQ(out.result.phases.stall, sc_core::SC_ZERO_TIME);
    const std::uint64_t tiles = 16, edges = out.result.advance_edges;
    // The first load (A and B block, one latency each), the clears and edges, the last C write.
    EXPECT_EQ(m.prefetch_cycles, 2 * kLatency - 1);
    EXPECT_EQ(m.total_cycles, m.prefetch_cycles + tiles + edges + kLatency);
    EXPECT_EQ(m.total_cycles, cycles_of(out.result));
    EXPECT_EQ(m.a.dram, s.m * s.k * kOp);
    EXPECT_EQ(m.b.dram, s.k * s.p * kOp);
    EXPECT_EQ(m.c.dram, s.m * s.p * kAcc);
    EXPECT_EQ(m.a.array, tiles * 4 * s.k * kOp);
    EXPECT_EQ(m.a.dram + m.b.dram + m.c.dram,
              out.result.traffic.a_read + out.result.traffic.b_read + out.result.traffic.c_written);
    // The least bandwidth without stalls: just above it none, just below it some.
    ASSERT_GT(m.zero_stall_bandwidth, 0.0);
    ASSERT_TRUE(std::isfinite(m.zero_stall_bandwidth));
    const auto above = b.run(pr, with(buffers(0, 0, 0, m.zero_stall_bandwidth * 1.002)));
    expect_pass(above);
    EXPECT_EQ(above.result.memory.stall_cycles, 0u);
    const auto below = b.run(pr, with(buffers(0, 0, 0, m.zero_stall_bandwidth * 0.99)));
    expect_pass(below);
    EXPECT_GT(below.result.memory.stall_cycles, 0u);
}

TEST(MemoryJobs, FarTooLittleBandwidthTakesBytesOverBandwidth) {
    auto& b = bench_set<int32_format>::get(4, 4);
    const problem_shape s{32, 64, 32};
    const auto pr = random_problem<int32_format>(s, 5);
    const double bw = 0.05;
    const auto out = b.run(pr, with(buffers(), tile_order::serpentine));
    expect_pass(out);
    const auto slow = b.run(pr, with(buffers(0, 0, 0, bw), tile_order::serpentine));
    expect_pass(slow);
    const memory_report& m = slow.result.memory;
    const double bytes = double(m.a.dram + m.b.dram + m.c.dram);
    EXPECT_NEAR(double(m.total_cycles) / (bytes / bw), 1.0, 0.02);
    EXPECT_GT(m.stall_cycles, 0u);
    EXPECT_EQ(m.a.dram, out.result.memory.a.dram);  // bandwidth changes time, never traffic
    EXPECT_NEAR(m.average_bandwidth, bw, bw * 0.02);
    EXPECT_GE(m.zero_stall_bandwidth, bw);
}

// Weight and input stationary under the same first principles. With unlimited bandwidth and
// scratchpads, nothing stalls and the job is the first load, the clears, every preload and
// advance edge, and the last C write; every operand is read from DRAM once. With far too little
// bandwidth the job takes its bytes over the bandwidth.
TEST(MemoryJobs, StationaryDataflowsFollowTheSameRules) {
    auto& b = bench_set<int32_format>::get(4, 4);
    const problem_shape s{16, 64, 16};
    const auto pr = random_problem<int32_format>(s, 3);
    for (const dataflow_kind df : {dataflow_kind::ws, dataflow_kind::is}) {
        SCOPED_TRACE(to_string(df));
        job_options o = with(buffers());
        o.run.dataflow = df;
        const auto out = b.run(pr, o);
        expect_pass(out);
        const memory_report& m = out.result.memory;
        EXPECT_EQ(m.stall_cycles, 0u);
        const std::uint64_t tiles = 4;  // 16 stationary columns in tiles of 4
        EXPECT_EQ(out.result.tiles.size(), tiles);
        EXPECT_EQ(m.prefetch_cycles, 2 * kLatency - 1);
        EXPECT_EQ(m.total_cycles,
                  m.prefetch_cycles + tiles + out.result.preload_edges + out.result.advance_edges + kLatency);
        EXPECT_EQ(m.total_cycles, cycles_of(out.result));
        EXPECT_EQ(m.a.dram, s.m * s.k * kOp);
        EXPECT_EQ(m.b.dram, s.k * s.p * kOp);
        EXPECT_EQ(m.c.dram, s.m * s.p * kAcc);
        // The streamed operand enters the array once per tile, the stationary one once in all.
        const std::uint64_t streamed = df == dataflow_kind::ws ? m.a.array : m.b.array;
        const std::uint64_t stationary = df == dataflow_kind::ws ? m.b.array : m.a.array;
        EXPECT_EQ(streamed, tiles * 16 * s.k * kOp);
        EXPECT_EQ(stationary, s.k * 16 * kOp);

        const double bw = 0.05;
        o.run.memory.dram_bandwidth = bw;
        const auto slow = b.run(pr, o);
        expect_pass(slow);
        const memory_report& ms = slow.result.memory;
        const double bytes = double(ms.a.dram + ms.b.dram + ms.c.dram);
        EXPECT_NEAR(double(ms.total_cycles) / (bytes / bw), 1.0, 0.02);
        EXPECT_GT(ms.stall_cycles, 0u);
    }
}

TEST(MemoryJobs, ReuseFormulaHoldsOnTheBus) {
    auto& b = bench_set<int32_format>::get(2, 2);
    const problem_shape s{10, 6, 14};
    const auto pr = random_problem<int32_format>(s, 11);
    for (auto order : {tile_order::row_major, tile_order::col_major, tile_order::serpentine}) {
        const auto out = b.run(pr, with(buffers(2 * 2 * s.k * kOp, 2 * s.k * 2 * kOp), order));
        expect_pass(out);
        const auto want = reuse_formula(order, s, 2, 2);
        EXPECT_EQ(out.result.traffic.a_read, want.a) << to_string(order);  // counted by the DMA port
        EXPECT_EQ(out.result.traffic.b_read, want.b) << to_string(order);
        EXPECT_EQ(out.result.memory.a.dram, want.a);
    }
}

TEST(MemoryJobs, SmallBuffersStreamAndStillCheckEveryValue) {
    auto& b = bench_set<int32_format>::get(2, 2);
    const problem_shape s{4, 40, 6};
    const auto pr = random_problem<int32_format>(s, 13);
    const auto out = b.run(pr, with(buffers(128, 128, 32, 4)));
    expect_pass(out);
    EXPECT_EQ(out.result.memory.streamed_tiles, 6u);
    EXPECT_EQ(out.result.memory.stream_k_chunk, 8u);
    EXPECT_EQ(out.result.memory.total_cycles, cycles_of(out.result));
}

TEST(MemoryJobs, SeedExampleAsDocsMemoryMdWorksItOut) {
    auto& b = bench_set<int32_format>::get(2, 2);
    for (auto engine : {engine_kind::cycle, engine_kind::functional}) {
        const auto out = b.run(seed_example<int32_format>(), with(buffers(), tile_order::row_major, engine));
        expect_pass(out);
        const memory_report& m = out.result.memory;
        EXPECT_EQ(m.prefetch_cycles, 19u);
        EXPECT_EQ(m.stall_cycles, 18u);
        EXPECT_EQ(m.total_cycles, 80u);
        EXPECT_EQ(cycles_of(out.result), 80u);
        EXPECT_EQ(out.result.phases.stall, sc_core::sc_time(18, sc_core::SC_NS));
        EXPECT_EQ(out.result.phases.drain, sc_core::sc_time(19, sc_core::SC_NS));
        EXPECT_EQ(m.a.dram, 36u);
        EXPECT_EQ(m.b.dram, 36u);
        EXPECT_EQ(m.c.dram, 72u);
        EXPECT_EQ(m.a.array, 24u + 24u + 12u + 12u);
        EXPECT_DOUBLE_EQ(m.peak_bandwidth, 44.0 / 5);
        EXPECT_DOUBLE_EQ(m.average_bandwidth, 144.0 / 80);
        EXPECT_TRUE(std::isinf(m.zero_stall_bandwidth));
    }
}

// The checks run in every mode: a planted defect is still caught with buffers double, streamed.
TEST(MemoryJobs, ThePlantedDefectsAreCaughtWithBuffersDouble) {
    auto& b = bench_set<int32_format>::get(2, 2);
    const problem_shape s{5, 24, 5};
    const auto pr = random_problem<int32_format>(s, 17);
    for (auto f : {fault::no_mask, fault::global_skew, fault::skip_advance, fault::clear_between_k}) {
        auto o = with(buffers(64, 64, 32, 2));
        o.run.k_tile = 10;
        o.inject = f;
        const auto bad = b.run(pr, o);
        EXPECT_FALSE(bad.pass() && bad.result.completed()) << to_string(f);
        o.inject = fault::none;
        expect_pass(b.run(pr, o));
    }
}

// Both engines: the same stall cycles, traffic and times on random jobs of every kind.
template <class Format>
void compare_engines(std::mt19937_64& rng, int index) {
    std::uniform_int_distribution<int> pick(0, 1 << 20);
    const auto [rows, cols] = kShapes[pick(rng) % kShapes.size()];
    auto& b = bench_set<Format>::get(rows, cols);
    const problem_shape s{1 + std::uint64_t(pick(rng) % 9), 1 + std::uint64_t(pick(rng) % 24),
                          1 + std::uint64_t(pick(rng) % 9)};
    const auto pr = random_problem<Format>(s, 100 + index);
    job_options o;
    o.run.order = tile_order(pick(rng) % 4);
    o.run.order_seed = std::uint64_t(index);
    if (pick(rng) % 3 == 0) o.run.k_tile = 1 + pick(rng) % s.k;
    if constexpr (std::is_same_v<Format, int8_format>) {
        if (pick(rng) % 2) {
            o.run.quant.enabled = true;
            o.run.quant.scale = 1.0 / 16;
        }
    }
    constexpr std::uint64_t osz = sizeof(typename Format::operand_type);
    const std::uint64_t csz = o.run.quant.enabled ? 1 : sizeof(typename Format::accumulator_type);
    const std::uint64_t tr = std::min<std::uint64_t>(rows, s.m), tc = std::min<std::uint64_t>(cols, s.p);
    o.run.memory.buffers = buffer_mode::double_buffered;
    // Small buffers (streaming, reloads) or none at all, and some bandwidth or none.
    if (pick(rng) % 2) {
        o.run.memory.a_sram = 2 * tr * osz * (1 + pick(rng) % 6);
        o.run.memory.b_sram = 2 * tc * osz * (1 + pick(rng) % 6);
        o.run.memory.c_sram = tr * tc * csz * (1 + pick(rng) % 3);
    }
    if (pick(rng) % 3) o.run.memory.dram_bandwidth = 0.25 * (1 + pick(rng) % 16);
    o.run.engine = engine_kind::cycle;
    const auto cyc = b.run(pr, o);
    o.run.engine = engine_kind::functional;
    const auto fun = b.run(pr, o);
    const std::string what = std::string(Format::name) + " case " + std::to_string(index);
    expect_pass(cyc);
    expect_pass(fun);
    const memory_report &x = cyc.result.memory, &y = fun.result.memory;
    EXPECT_EQ(x.stall_cycles, y.stall_cycles) << what;
    EXPECT_EQ(x.prefetch_cycles, y.prefetch_cycles) << what;
    EXPECT_EQ(x.total_cycles, y.total_cycles) << what;
    EXPECT_EQ(x.total_cycles, cycles_of(cyc.result)) << what;
    EXPECT_EQ(x.a.dram, y.a.dram) << what;
    EXPECT_EQ(x.b.dram, y.b.dram) << what;
    EXPECT_EQ(x.c.dram, y.c.dram) << what;
    EXPECT_EQ(x.a.array, y.a.array) << what;
    EXPECT_EQ(x.streamed_tiles, y.streamed_tiles) << what;
    EXPECT_EQ(x.peak_bandwidth, y.peak_bandwidth) << what;
    EXPECT_EQ(x.zero_stall_bandwidth, y.zero_stall_bandwidth) << what;
    EXPECT_EQ(cyc.result.phases.stall, fun.result.phases.stall) << what;
    EXPECT_EQ(cyc.result.end - cyc.result.start, fun.result.end - fun.result.start) << what;
    EXPECT_EQ(x.c.dram, s.m * s.p * csz) << what;
}

TEST(MemoryEngines, SameStallsAndTrafficOn240RandomCases) {
    std::mt19937_64 rng(20);
    for (int i = 0; i < 80; ++i) {
        compare_engines<int32_format>(rng, i);
        compare_engines<int8_format>(rng, i);
        compare_engines<fp32_format>(rng, i);
    }
}

}  // namespace
