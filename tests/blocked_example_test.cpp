// Seed 000's worked example as shipped in examples/blocked-4x4: C00 = A00*B00 + A01*B10 = [1 3; 4 5]
// on N = 2 with --k-tile 2, so that each K chunk is one K block. Run through systolic-tb in both K
// policies, and in-process to watch the partial that the first K block hands to the second.
//
// Under preserve that partial is the accumulators after the first chunk, read by an edge observer
// at the chunk's last edge; under partials it is the partial-sum buffer write.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "bench_set.h"
#include "io/npy.h"
#include "systolic/edge_observer.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"

namespace {

namespace fs = std::filesystem;
using namespace systolic;
using namespace systolic::verify;
using systolic::io::as_vector;
using systolic::io::read_matrix;
using acc64 = std::int64_t;

class benches : public ::testing::Environment {
public:
    void SetUp() override {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        bench_set<int32_format>::build({2});
    }
};
const auto* const env = ::testing::AddGlobalTestEnvironment(new benches);

const fs::path example_dir = SYSTOLIC_EXAMPLE_DIR;

problem<int32_format> example() {
    const auto a = read_matrix((example_dir / "a.npy").string(), "<i4", "int32");
    const auto b = read_matrix((example_dir / "b.npy").string(), "<i4", "int32");
    problem<int32_format> pr;
    pr.shape = {a.shape[0], a.shape[1], b.shape[1]};
    pr.a = as_vector<std::int32_t>(a);
    pr.b = as_vector<std::int32_t>(b);
    return pr;
}

job_options split(k_policy policy) {
    job_options o;
    o.run.k_tile = 2;
    o.run.policy = policy;
    return o;
}

TEST(BlockedExample, InputsAreTheSeedsBlocks) {
    const auto pr = example();
    ASSERT_EQ(pr.shape.m, 4u);
    ASSERT_EQ(pr.shape.k, 4u);
    ASSERT_EQ(pr.shape.p, 4u);
    auto block = [](const std::vector<std::int32_t>& m, int bi, int bj) {
        return std::vector<std::int32_t>{m[(2 * bi) * 4 + 2 * bj], m[(2 * bi) * 4 + 2 * bj + 1],
                                         m[(2 * bi + 1) * 4 + 2 * bj], m[(2 * bi + 1) * 4 + 2 * bj + 1]};
    };
    EXPECT_EQ(block(pr.a, 0, 0), (std::vector<std::int32_t>{1, 2, 3, 4}));
    EXPECT_EQ(block(pr.a, 0, 1), (std::vector<std::int32_t>{0, 1, 1, 0}));
    EXPECT_EQ(block(pr.b, 0, 0), (std::vector<std::int32_t>{1, 0, 0, 1}));
    EXPECT_EQ(block(pr.b, 1, 0), (std::vector<std::int32_t>{1, 1, 0, 1}));
}

// systolic-tb as the example's README runs it: C's top-left block is [1 3; 4 5] in both policies.
TEST(BlockedExample, SystolicTbGivesC00InBothPolicies) {
    const fs::path dir = fs::temp_directory_path() / ("systolic_blocked_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const char* policy : {"preserve", "partials"}) {
        SCOPED_TRACE(policy);
        const fs::path c_out = dir / (std::string("c_") + policy + ".npy"), log = dir / "out.txt";
        const std::string cmd = std::string(SYSTOLIC_TB) + " --array 2 --k-tile 2 --k-policy " + policy +
                                " --a " + (example_dir / "a.npy").string() + " --b " +
                                (example_dir / "b.npy").string() + " --c-out " + c_out.string() + " >" +
                                log.string() + " 2>&1";
        const int raw = std::system(cmd.c_str());
        std::ifstream in(log);
        std::stringstream out;
        out << in.rdbuf();
        ASSERT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << out.str();
        EXPECT_NE(out.str().find("K split: 2 chunks of up to 2"), std::string::npos) << out.str();
        EXPECT_NE(out.str().find("PASS"), std::string::npos) << out.str();
        const auto c = as_vector<acc64>(read_matrix(c_out.string(), "<i8", "int64"));
        ASSERT_EQ(c.size(), 16u);
        EXPECT_EQ((std::vector<acc64>{c[0], c[1], c[4], c[5]}), (std::vector<acc64>{1, 3, 4, 5}));
    }
    fs::remove_all(dir);
}

// Under partials, the first K block of the top-left tile stores A00*B00 = [1 2; 3 4] in the
// partial-sum buffer, and the second adds A01*B10 to it on the way to C.
TEST(BlockedExample, PartialsHandsOnA00B00) {
    auto& b = bench_set<int32_format>::get(2);
    const auto opt = split(k_policy::partials);
    const matmul_job job = b.plan_memory({4, 4, 4}, opt);
    ASSERT_TRUE(job.uses_partial_buffer());
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<acc64>> partial;  // (row, col) -> writes
    auto scoreboard_hook = b.monitor.on_write;
    b.monitor.on_write = [&](const tlm::tlm_generic_payload& t) {
        for (std::uint64_t off = 0; off < t.get_data_length(); off += sizeof(acc64)) {
            if (const auto e = job.partial.element_at(t.get_address() + off)) {
                acc64 v;
                std::memcpy(&v, t.get_data_ptr() + off, sizeof v);
                partial[{e->row, e->col}].push_back(v);
            }
        }
        scoreboard_hook(t);
    };
    const auto out = b.run(example(), opt);
    b.monitor.on_write = scoreboard_hook;
    expect_pass(out);
    const std::map<std::pair<std::uint64_t, std::uint64_t>, std::vector<acc64>> handed = {
        {{0, 0}, {1}}, {{0, 1}, {2}}, {{1, 0}, {3}}, {{1, 1}, {4}}};
    for (const auto& [where, values] : handed)
        EXPECT_EQ(partial[where], values) << "partial (" << where.first << "," << where.second << ")";
    const auto c = out.c_as<acc64>();
    EXPECT_EQ((std::vector<acc64>{c[0], c[1], c[4], c[5]}), (std::vector<acc64>{1, 3, 4, 5}));
    // Every element of the 4x4 buffer is stored once: one partial per output, from each tile's
    // first chunk.
    EXPECT_EQ(partial.size(), 16u);
    EXPECT_EQ(out.scoreboard.partial_writes, 16u);
}

// Under preserve, the first K block leaves A00*B00 = [1 2; 3 4] in the top-left tile's accumulators
// at its last edge, and the second chunk adds to them without a clear.
TEST(BlockedExample, PreserveKeepsA00B00InTheAccumulators) {
    struct last_edge_of_first_chunk final : edge_observer<int32_format> {
        std::vector<acc64> acc;
        void on_edge(const edge_event<int32_format>& e) override {
            if (e.step.where->index == 0 && e.step.chunk == 0 && e.edge + 1 == e.step.edges)
                acc = {e.array->accumulator(0, 0), e.array->accumulator(0, 1), e.array->accumulator(1, 0),
                       e.array->accumulator(1, 1)};
        }
    } seen;
    auto& b = bench_set<int32_format>::get(2);
    b.controller.set_observer(&seen);
    const auto out = b.run(example(), split(k_policy::preserve));
    b.controller.set_observer(nullptr);
    expect_pass(out);
    EXPECT_EQ(seen.acc, (std::vector<acc64>{1, 2, 3, 4}));
    const auto c = out.c_as<acc64>();
    EXPECT_EQ((std::vector<acc64>{c[0], c[1], c[4], c[5]}), (std::vector<acc64>{1, 3, 4, 5}));
}

}  // namespace
