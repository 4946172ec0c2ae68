// SystemC's teardown of many modules stays linear: testbenches destroy their PE modules in an order
// that lets the kernel find each one near the front of its module registry and of its parent's
// list of children (systolic_array.h). The modules are built (and timed) before the first
// sc_start, which adds the kernel's own modules behind ours as a real run does; the test then times
// the teardown against the construction in the same process, so the bound follows the machine's
// speed. A quadratic teardown takes several times the construction at these sizes, a linear one
// a small part of it. Built twice: as teardown_test, sixteen array sizes in one testbench_set, as a
// systolic-run sweep builds them (91 000 PE modules); with SYSTOLIC_TEARDOWN_FABRIC, a fabric of
// 32^3 arrays of one PE (98 304 modules, one child of the fabric per array).
#include <gtest/gtest.h>

#include <chrono>
#include <iostream>
#include <memory>
#include <string>

#include "systolic/verify/problem.h"
#include "systolic/verify/testbench.h"

// One test name per executable, so that CTest lists both.
#ifdef SYSTOLIC_TEARDOWN_FABRIC
#define SYSTOLIC_TEARDOWN_SUITE FabricTeardown
#else
#define SYSTOLIC_TEARDOWN_SUITE Teardown
#endif

namespace {

using namespace systolic;
using namespace systolic::verify;
using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::unique_ptr<testbench_set<int32_format>> benches;
double built = 0;

class build_benches : public ::testing::Environment {
public:
    void SetUp() override {
        const auto t0 = clock_type::now();
        benches = std::make_unique<testbench_set<int32_format>>();
        testbench<int32_format>::config cfg;
#ifdef SYSTOLIC_TEARDOWN_FABRIC
        cfg.rows = cfg.cols = 1;
        cfg.fabric = {32, 32, 32};
        benches->add("tb", cfg);
#else
        for (std::size_t n = 8; n <= 128; n += 8) {
            cfg.rows = cfg.cols = n;
            benches->add("tb_" + std::to_string(n), cfg);
        }
#endif
        built = seconds_since(t0);
        ASSERT_TRUE(benches->front().run(seed_example<int32_format>()).pass());
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new build_benches);

TEST(SYSTOLIC_TEARDOWN_SUITE, TakesLessThanConstruction) {
    const auto t0 = clock_type::now();
    benches.reset();
    const double torn_down = seconds_since(t0);
    std::cout << "built in " << built << " s, torn down in " << torn_down << " s\n";
    EXPECT_LT(torn_down, built + 0.1) << "built in " << built << " s, torn down in " << torn_down << " s";
}

}  // namespace
