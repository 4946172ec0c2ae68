// Weight and input stationary against each other, against output stationary and across the two
// engines: seeded random jobs (every format, square and rectangular arrays, K-splitting, int8
// output, every tile order, both overflow modes, buffers none and double) run through the whole testbench,
// each checked by the scoreboard against the reference in the dataflow's own order. For every case:
//  - the cycle and functional engines give the same C bytes, the same counters and the same memory
//    report (stall cycles, traffic);
//  - ws and is give the same C bytes (both sum folds of min(KT, R) terms and add them in k order);
//  - integer C under wrap equals output stationary's (integer addition with wrap is associative);
//  - the tiles, folds, preload and advance edges the cycle engine stepped are those worked out here.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "bench_set.h"
#include "format_types.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

constexpr std::uint64_t cases = 200;  // per format and stationary dataflow
const std::vector<std::pair<std::size_t, std::size_t>> arrays = {
    {1, 1}, {2, 2}, {3, 3}, {4, 4}, {5, 5}, {8, 8}, {1, 4}, {4, 1}, {3, 5}, {5, 3}, {2, 7}, {7, 2}};

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        build_every_format({}, arrays);
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

template <class Format>
void compare_dataflows(std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    const auto [rows, cols] = arrays[rng() % arrays.size()];
    const problem_shape s{1 + rng() % 17, 1 + rng() % 23, 1 + rng() % 17};
    job_options o;
    o.run.order = static_cast<tile_order>(rng() % 4);
    o.run.order_seed = rng();
    o.run.k_tile = rng() % 3 == 0 ? 0 : 1 + rng() % s.k;
    if (Format::is_integer) o.run.overflow = rng() % 2 ? overflow_mode::saturate : overflow_mode::wrap;
    if (rng() % 4 == 0) {
        o.run.quant.enabled = true;
        o.run.quant.scale = 1.0 / double(1 + rng() % 300);
        o.run.quant.zero_point = std::int32_t(rng() % 21) - 10;
    }
    // Half the cases double-buffered, with scratchpads unlimited or of a size every dataflow's
    // blocks fit twice at these shapes, and a DRAM channel unlimited or of 1 to 16 bytes per cycle.
    if (rng() % 2) {
        const std::uint64_t sizes[] = {0, 2048, 65536};
        o.run.memory.buffers = buffer_mode::double_buffered;
        o.run.memory.a_sram = sizes[rng() % 3];
        o.run.memory.b_sram = sizes[rng() % 3];
        o.run.memory.c_sram = sizes[rng() % 3];
        o.run.memory.dram_bandwidth = double(rng() % 17);
    }
    double range = default_range<Format>();
    if constexpr (Format::is_integer)
        if (rng() % 4 == 0) range = double(std::numeric_limits<typename Format::operand_type>::max());
    const auto pr = random_problem<Format>(s, rng(), range);
    auto& b = bench_set<Format>::get(rows, cols);

    o.run.dataflow = dataflow_kind::os;
    const auto os = b.run(pr, o);
    ASSERT_TRUE(os.pass()) << describe(s, rows, cols, o, seed);
    std::vector<std::uint8_t> ws_c;
    for (const dataflow_kind df : {dataflow_kind::ws, dataflow_kind::is}) {
        o.run.dataflow = df;
        const std::string what = std::string(Format::name) + " " + describe(s, rows, cols, o, seed);
        o.run.engine = engine_kind::cycle;
        const auto cyc = b.run(pr, o);
        o.run.engine = engine_kind::functional;
        const auto fun = b.run(pr, o);
        o.run.engine = engine_kind::cycle;
        ASSERT_TRUE(cyc.pass()) << what << ": "
                                << (cyc.scoreboard.errors.empty() ? "" : cyc.scoreboard.errors[0]);
        ASSERT_TRUE(fun.pass()) << what << ": "
                                << (fun.scoreboard.errors.empty() ? "" : fun.scoreboard.errors[0]);
        EXPECT_EQ(cyc.c, fun.c) << what;
        expect_same_counters(cyc, fun, what);
        if (df == dataflow_kind::ws) {
            ws_c = cyc.c;
        } else {
            EXPECT_EQ(cyc.c, ws_c) << what << ": is differs from ws";
        }
        if (Format::is_integer && o.run.overflow == overflow_mode::wrap) {
            EXPECT_EQ(cyc.c, os.c) << what << ": differs from os";
        }

        // The rules worked out here: the stationary operand's columns (P for ws, M for is) in tiles
        // of C; folds of L = min(KT, R) terms; R preload edges and T + R + C - 2 stream edges per
        // fold, T being M (ws) or P (is); T x C output slots per tile.
        const std::uint64_t t_len = df == dataflow_kind::ws ? s.m : s.p;
        const std::uint64_t extent = df == dataflow_kind::ws ? s.p : s.m;
        const std::uint64_t kt = o.run.k_tile == 0 || o.run.k_tile > s.k ? s.k : o.run.k_tile;
        const std::uint64_t l = std::min<std::uint64_t>(kt, rows);
        const std::uint64_t folds = (s.k + l - 1) / l, tiles = (extent + cols - 1) / cols;
        const auto& r = cyc.result;
        EXPECT_EQ(r.tiles.size(), tiles) << what;
        for (const auto& t : r.tiles) {
            EXPECT_EQ(t.advance_edges_per_chunk, std::vector<std::uint64_t>(folds, t_len + rows + cols - 2))
                << what;
            EXPECT_EQ(t.preload_edges, folds * rows) << what;
        }
        EXPECT_EQ(r.macs_padded, tiles * folds * rows * cols * t_len) << what;
        EXPECT_EQ(r.macs_real, s.m * s.k * s.p) << what;
        EXPECT_EQ(r.masked_outputs, tiles * t_len * cols - s.m * s.p) << what;
        if (::testing::Test::HasFailure()) return;
    }
}

template <class Format>
void run_cases(std::uint64_t first) {
    for (std::uint64_t seed = first; seed < first + cases; ++seed) {
        compare_dataflows<Format>(seed);
        if (::testing::Test::HasFailure()) return;
    }
}

template <class Format>
class DataflowCrossCheck : public ::testing::Test {};
TYPED_TEST_SUITE(DataflowCrossCheck, systolic::test::format_types, systolic::test::format_name);

TYPED_TEST(DataflowCrossCheck, RandomJobs) {
    run_cases<TypeParam>(1000 * (systolic::test::format_index<TypeParam> + 1));
}

}  // namespace
