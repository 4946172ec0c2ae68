// The protocol checker inside the testbench (tb/testbench.h): every job's bus traffic passes
// controller -> protocol checker -> bus monitor -> memory, is checked (more than zero calls, no
// violation), and a broken rule fails the run through the scoreboard with the checker's message.
#include <gtest/gtest.h>

#include <string>
#include <vector>

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
        bench_set<fp32_format>::build({3});
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

// Reads, DMI for reads, C writes, the partial-sum buffer's read-modify-writes and int8 output: all
// follow the base protocol. Before the bus monitor refused DMI requests for write access, it
// answered them with a read-only grant, and every run here failed on that.
TEST(TestbenchProtocol, EveryJobsTrafficIsCheckedAndClean) {
    auto& b = bench_set<int32_format>::get(4);
    for (auto policy : {k_policy::preserve, k_policy::partials})
        for (bool int8_out : {false, true})
            for (auto engine : {engine_kind::cycle, engine_kind::functional}) {
                job_options o;
                o.run.k_tile = 3;
                o.run.policy = policy;
                o.run.quant.enabled = int8_out;
                o.run.quant.scale = 0.01;
                o.run.engine = engine;
                o.run.order = tile_order::serpentine;
                const std::uint64_t before = b.checker.checked();
                const auto out = b.run(random_problem<int32_format>({9, 10, 7}, 5), o);
                expect_pass(out);
                EXPECT_EQ(out.scoreboard.protocol_violations, 0u);
                EXPECT_GT(b.checker.checked() - before, 9u);  // one C write per row and tile at least
                EXPECT_TRUE(b.checker.violations().empty());
            }
    auto& f = bench_set<fp32_format>::get(3);
    const std::uint64_t before = f.checker.checked();
    expect_pass(f.run(random_problem<fp32_format>({5, 4, 5}, 6)));
    EXPECT_GT(f.checker.checked(), before);
}

// A target that changes the streaming width of a read on its way back: the data and the job are
// fine, so only the checker can see it. Clean, then faulty, then clean again.
TEST(TestbenchProtocol, AViolationFailsTheRunWithTheCheckersMessage) {
    auto& b = bench_set<int32_format>::get(2);
    const auto pr = seed_example<int32_format>();
    expect_pass(b.run(pr));

    b.monitor.dmi_reads = false;  // every read passes b_transport, where the fault is planted
    b.monitor.on_read = [](const tlm::tlm_generic_payload& t) {
        // The payload is the controller's own (non-const) object; the monitor only lends it as const.
        const_cast<tlm::tlm_generic_payload&>(t).set_streaming_width(t.get_streaming_width() + 1);
    };
    const auto bad = b.run(pr);
    b.monitor.on_read = nullptr;
    b.monitor.dmi_reads = true;

    EXPECT_TRUE(bad.result.completed());
    EXPECT_EQ(bad.scoreboard.mismatches, 0u);  // C is right ...
    EXPECT_FALSE(bad.pass());                  // ... and the run fails all the same
    EXPECT_GT(bad.scoreboard.protocol_violations, 0u);
    ASSERT_FALSE(bad.scoreboard.errors.empty());
    // The first read is A's row 0: 3 int32 operands, 12 bytes.
    EXPECT_NE(
        bad.scoreboard.errors[0].find(
            "protocol: tb_int32_2.env.checker: b_transport: the target changed the streaming width from 12"),
        std::string::npos)
        << bad.scoreboard.errors[0];

    const auto clean = b.run(pr);
    expect_pass(clean);
    EXPECT_EQ(clean.scoreboard.protocol_violations, 0u);
}

}  // namespace
