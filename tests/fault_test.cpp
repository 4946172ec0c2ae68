// Fault injection: each known defect the seeds warn about is planted in the model, and the
// scoreboard or the watchdog must catch it with its specific message; the same run without the
// fault passes. A testbench that cannot fail proves nothing.
#include <gtest/gtest.h>

#include <sstream>

#include "bench_set.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<int32_format>::build({2, 4});
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

job_options with(fault f, std::uint64_t k_tile = 0) {
    job_options o;
    o.inject = f;
    o.run.k_tile = k_tile;
    return o;
}

// The seed example with and without the fault: clean passes, faulty fails.
job_check<int32_format> faulty_seed_run(fault f, std::uint64_t k_tile = 0) {
    auto& b = bench_set<int32_format>::get(2);
    expect_pass(b.run(seed_example<int32_format>(), with(fault::none, k_tile)));
    const auto out = b.run(seed_example<int32_format>(), with(f, k_tile));
    EXPECT_FALSE(out.pass());
    // The fault is gone again for the next job.
    expect_pass(b.run(seed_example<int32_format>(), with(fault::none, k_tile)));
    return out;
}

TEST(Faults, ClearBetweenKChunksIsCaughtByTheScoreboard) {
    const auto out = faulty_seed_run(fault::clear_between_k, 2);
    EXPECT_TRUE(out.result.completed());
    EXPECT_TRUE(has_error(out, "C(0,0) expected 7, got 6")) << out.scoreboard.errors.front();
    EXPECT_GT(out.scoreboard.mismatches, 0u);
}

TEST(Faults, InvalidPaddingIsCaughtByTheWatchdog) {
    const auto out = faulty_seed_run(fault::invalid_padding);
    EXPECT_EQ(out.result.status, job_status::watchdog);
    // Tile 1 at (0,2) has one real column: the PEs of the padded column see no valid B token.
    EXPECT_NE(out.result.error.find("tile 1 at origin (0,2)"), std::string::npos) << out.result.error;
    EXPECT_NE(out.result.error.find("pe_0_1 consumed 0 of 3 terms, pe_1_1 consumed 0 of 3 terms"),
              std::string::npos)
        << out.result.error;
}

TEST(Faults, NoMaskIsCaughtByTheScoreboardWithTheAddress) {
    auto& b = bench_set<int32_format>::get(2);
    const matmul_job job = b.plan_memory({3, 3, 3}, job_options{});
    const auto out = faulty_seed_run(fault::no_mask);
    EXPECT_GT(out.scoreboard.out_of_range_writes, 0u);
    // The first stray element: tile (0,2) row 0, local column 1, i.e. global C(0,3), which is
    // stride padding after the real row.
    std::ostringstream addr;
    addr << "write outside C at 0x" << std::hex << job.c.address(0, 3);
    EXPECT_TRUE(has_error(out, addr.str())) << out.scoreboard.errors.front();
    EXPECT_FALSE(out.scoreboard.untouched_ok);
}

TEST(Faults, GlobalSkewIsCaught) {
    const auto out = faulty_seed_run(fault::global_skew);
    EXPECT_EQ(out.result.status, job_status::watchdog);
    // Tile (0,0) is unaffected (global = local); the B streams of tile (0,2) start 2 edges late.
    EXPECT_NE(out.result.error.find("tile 1 at origin (0,2)"), std::string::npos) << out.result.error;
    EXPECT_NE(out.result.error.find("pe_0_0 consumed 1 of 3 terms"), std::string::npos) << out.result.error;
}

TEST(Faults, SkipAdvanceIsCaughtByTheWatchdog) {
    const auto out = faulty_seed_run(fault::skip_advance);
    EXPECT_EQ(out.result.status, job_status::watchdog);
    // With 4 edges instead of 5 the last term never reaches PE(1,1), the farthest PE.
    EXPECT_NE(out.result.error.find("within 4 advance edges: pe_1_1 consumed 2 of 3 terms"),
              std::string::npos)
        << out.result.error;
}

// On a larger, multi-chunk job every fault is still caught.
TEST(Faults, EveryFaultFailsALargerSplitJob) {
    auto& b = bench_set<int32_format>::get(4);
    const auto pr = random_problem<int32_format>({10, 13, 7}, 99);
    expect_pass(b.run(pr, with(fault::none, 5)));
    for (auto f : {fault::clear_between_k, fault::invalid_padding, fault::no_mask, fault::global_skew,
                   fault::skip_advance}) {
        const auto out = b.run(pr, with(f, 5));
        EXPECT_FALSE(out.pass()) << to_string(f);
    }
}

}  // namespace
