// Plain C++ tests of the testbench checkers: job validation, the scoreboard, the reference GEMM and
// C's encoding. No SystemC simulation runs here. Expected values come from seeds 000/001/003 or
// are derived by hand in the comments; none is taken from the code under test.
#include "core_support.h"

namespace {

using namespace core_support;

// ------------------------------------------------------------------------------------------------
// JobValidation
// ------------------------------------------------------------------------------------------------

constexpr u64 kOp = sizeof(i32);
constexpr u64 kAcc = sizeof(i64);

// 3x3x3: A is 36 bytes at 0x0, B 36 bytes at 0x100, C 72 bytes at 0x200.
systolic::matmul_job seed_job() {
    return systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200);
}

TEST(JobValidation, MakeJobLayouts) {
    const auto job = systolic::make_job(problem_shape{2, 3, 4}, kOp, kAcc, 0x10, 0x100, 0x200, 0, 32, 40);
    EXPECT_EQ(job.a.base, 0x10u);
    EXPECT_EQ(job.a.rows, 2u);
    EXPECT_EQ(job.a.cols, 3u);
    EXPECT_EQ(job.a.elem_size, 4u);
    EXPECT_EQ(job.a.row_stride, 12u);  // packed
    EXPECT_EQ(job.b.rows, 3u);
    EXPECT_EQ(job.b.cols, 4u);
    EXPECT_EQ(job.b.row_stride, 32u);
    EXPECT_EQ(job.c.rows, 2u);
    EXPECT_EQ(job.c.cols, 4u);
    EXPECT_EQ(job.c.elem_size, 8u);
    EXPECT_EQ(job.c.row_stride, 40u);
    EXPECT_EQ(job.run.order, tile_order::row_major);
}

TEST(JobValidation, WellFormedJobPasses) {
    EXPECT_EQ(systolic::validate_job(seed_job(), kOp, kAcc), "");
    // C right after A, touching but not overlapping (A is 0x0..0x23).
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x24),
                                     kOp, kAcc),
              "");
    // Padded strides are fine.
    EXPECT_EQ(
        systolic::validate_job(
            systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 16, 12, 32), kOp, kAcc),
        "");
}

TEST(JobValidation, ZeroDimensionsRejected) {
    for (const auto& s : {problem_shape{0, 3, 3}, problem_shape{3, 0, 3}, problem_shape{3, 3, 0}}) {
        const auto err =
            systolic::validate_job(systolic::make_job(s, kOp, kAcc, 0x0, 0x100, 0x200), kOp, kAcc);
        EXPECT_NE(err.find("dimensions must be positive"), std::string::npos) << err;
    }
}

TEST(JobValidation, WrongElementSizesRejected) {
    const auto job = seed_job();
    const auto op_err = systolic::validate_job(job, 2, kAcc);
    EXPECT_NE(op_err.find("A elements"), std::string::npos) << op_err;
    const auto acc_err = systolic::validate_job(job, kOp, 4);
    EXPECT_NE(acc_err.find("C elements"), std::string::npos) << acc_err;
}

TEST(JobValidation, LayoutShapeMismatchRejected) {
    auto job = seed_job();
    job.b.rows = 2;
    const auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("B layout"), std::string::npos) << err;
}

TEST(JobValidation, ShortStrideRejected) {
    const auto a = systolic::validate_job(
        systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 8, 0, 0), kOp, kAcc);
    EXPECT_NE(a.find("A row stride 8"), std::string::npos) << a;
    const auto b = systolic::validate_job(
        systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 0, 11, 0), kOp, kAcc);
    EXPECT_NE(b.find("B row stride 11"), std::string::npos) << b;
    const auto c = systolic::validate_job(
        systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x200, 0, 0, 16), kOp, kAcc);
    EXPECT_NE(c.find("C row stride 16"), std::string::npos) << c;
}

TEST(JobValidation, COverlappingOperandsRejected) {
    // C starts inside A (A is 0x0..0x23).
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x20),
                                     kOp, kAcc),
              "C overlaps A");
    // C ends inside B (C is 72 bytes, B starts at 0x100).
    EXPECT_EQ(systolic::validate_job(
                  systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x100 - 71), kOp, kAcc),
              "C overlaps B");
    // C covering B entirely.
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x110, 0x100),
                                     kOp, kAcc),
              "C overlaps B");
    // C exactly on A.
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x100, 0x0),
                                     kOp, kAcc),
              "C overlaps A");
}

TEST(JobValidation, AOverlappingBAllowed) {
    // Operands are only read, so sharing them is fine (A times itself, for example).
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x0, 0x200),
                                     kOp, kAcc),
              "");
    EXPECT_EQ(systolic::validate_job(systolic::make_job(problem_shape{3, 3, 3}, kOp, kAcc, 0x0, 0x10, 0x200),
                                     kOp, kAcc),
              "");
}

// The seed job split K = 2 + 1 with partial sums: it needs an M x P accumulator buffer (72 bytes),
// here at 0x300, clear of A (0x0..0x23), B (0x100..0x123) and C (0x200..0x247).
systolic::matmul_job split_seed_job() {
    auto job = seed_job();
    job.run.k_tile = 2;
    job.run.policy = k_policy::partials;
    job.partial = systolic::make_layout(0x300, 3, 3, kAcc);
    return job;
}

TEST(JobValidation, ChunksAndPartialBufferUse) {
    auto job = seed_job();
    EXPECT_EQ(job.run.k_tile, 0u);
    EXPECT_EQ(job.run.policy, k_policy::preserve);
    EXPECT_EQ(job.run.overflow, overflow_mode::wrap);
    EXPECT_FALSE(job.run.quant.enabled);
    EXPECT_EQ(job.chunks(), 1u);
    EXPECT_FALSE(job.uses_partial_buffer());
    job.run.k_tile = 2;
    EXPECT_EQ(job.chunks(), 2u);
    EXPECT_FALSE(job.uses_partial_buffer());  // preserve keeps the sums in the PEs
    job.run.policy = k_policy::partials;
    EXPECT_TRUE(job.uses_partial_buffer());
    job.run.k_tile = 3;  // one chunk: nothing to combine
    EXPECT_EQ(job.chunks(), 1u);
    EXPECT_FALSE(job.uses_partial_buffer());
}

TEST(JobValidation, SplitJobWithPartialBufferPasses) {
    EXPECT_EQ(systolic::validate_job(split_seed_job(), kOp, kAcc), "");
    // Preserve needs no buffer, with or without a split; partials with one chunk neither.
    auto job = seed_job();
    job.run.k_tile = 2;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.run.policy = k_policy::partials;
    job.run.k_tile = 3;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.run.k_tile = 0;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
}

TEST(JobValidation, PartialsWithoutBufferRejected) {
    auto job = split_seed_job();
    job.partial = matrix_layout{};
    const auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("needs a partial-sum buffer"), std::string::npos) << err;
}

TEST(JobValidation, BadPartialBufferRejected) {
    auto job = split_seed_job();
    job.partial = systolic::make_layout(0x300, 3, 3, kOp);  // operand-sized, not accumulators
    auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("partial-sum buffer elements are 4 bytes"), std::string::npos) << err;
    job.partial = systolic::make_layout(0x300, 2, 3, kAcc);
    err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("partial-sum buffer layout is 2x3"), std::string::npos) << err;
    job.partial = systolic::make_layout(0x300, 3, 3, kAcc, 16);  // stride shorter than a row
    EXPECT_NE(systolic::validate_job(job, kOp, kAcc), "");
}

TEST(JobValidation, PartialBufferOverlapsRejected) {
    auto job = split_seed_job();
    job.partial.base = 0x240;  // C ends at 0x248
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps C");
    job.partial.base = 0x200 - 71;  // its last byte is C's first
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps C");
    job.partial.base = 0x200 - 72;  // touching, not overlapping
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.partial.base = 0x10;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps A");
    job.partial.base = 0x120;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "the partial-sum buffer overlaps B");
}

// Quantized output: C holds one byte per element, whatever the accumulator.
systolic::matmul_job int8_out_seed_job() {
    auto job = systolic::make_job(problem_shape{3, 3, 3}, kOp, 1, 0x0, 0x100, 0x200);
    job.run.quant.enabled = true;
    job.run.quant.scale = 0.5;
    return job;
}

TEST(JobValidation, Int8OutputElementSize) {
    auto job = int8_out_seed_job();
    EXPECT_EQ(systolic::output_size(job.run.quant, kAcc), 1u);
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    job.run.quant.enabled = false;
    EXPECT_EQ(systolic::output_size(job.run.quant, kAcc), kAcc);
    auto err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("C elements are 1 bytes but the format needs 8"), std::string::npos) << err;
    // Accumulator-sized C with quantization on is wrong the other way.
    auto wide = seed_job();
    wide.run.quant.enabled = true;
    err = systolic::validate_job(wide, kOp, kAcc);
    EXPECT_NE(err.find("C elements are 8 bytes but the format needs 1"), std::string::npos) << err;
}

TEST(JobValidation, NonPositiveScaleRejected) {
    for (double scale : {0.0, -0.5, -1.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
        auto job = int8_out_seed_job();
        job.run.quant.scale = scale;
        const auto err = systolic::validate_job(job, kOp, kAcc);
        EXPECT_NE(err.find("scale must be a positive finite number"), std::string::npos)
            << scale << ": " << err;
    }
    // Without quantization the scale is unused.
    auto job = seed_job();
    job.run.quant.scale = 0;
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
    auto tiny = int8_out_seed_job();
    tiny.run.quant.scale = 1e-30;
    EXPECT_EQ(systolic::validate_job(tiny, kOp, kAcc), "");
}

TEST(JobValidation, QuantizingPartialsNeedsAPartialBuffer) {
    auto job = int8_out_seed_job();
    job.run.quant.per_partial = true;
    auto err = systolic::validate_job(job, kOp, kAcc);  // no split at all
    EXPECT_NE(err.find("quantizing partials needs"), std::string::npos) << err;
    job.run.k_tile = 2;  // split, but preserved in the PEs
    err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("quantizing partials needs"), std::string::npos) << err;
    job.run.policy = k_policy::partials;
    job.run.k_tile = 3;  // partial sums, but only one chunk
    err = systolic::validate_job(job, kOp, kAcc);
    EXPECT_NE(err.find("quantizing partials needs"), std::string::npos) << err;
    job.run.k_tile = 2;
    job.partial = systolic::make_layout(0x300, 3, 3, kAcc);
    EXPECT_EQ(systolic::validate_job(job, kOp, kAcc), "");
}

TEST(JobValidation, KPolicyNames) {
    EXPECT_EQ(systolic::to_string(k_policy::preserve), "preserve");
    EXPECT_EQ(systolic::to_string(k_policy::partials), "partials");
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        const auto parsed = systolic::parse_k_policy(systolic::to_string(policy));
        ASSERT_TRUE(parsed.has_value());
        EXPECT_EQ(*parsed, policy);
    }
    for (const char* bad : {"", "partial", "Preserve", "keep"})
        EXPECT_FALSE(systolic::parse_k_policy(bad).has_value()) << "'" << bad << "'";
}

TEST(JobValidation, StatusNames) {
    EXPECT_STREQ(systolic::to_string(systolic::job_status::completed), "completed");
    EXPECT_STREQ(systolic::to_string(systolic::job_status::watchdog), "watchdog");
    EXPECT_STREQ(systolic::to_string(systolic::job_status::bus_error), "bus_error");
    EXPECT_STREQ(systolic::to_string(systolic::job_status::rejected), "rejected");
}

// ------------------------------------------------------------------------------------------------
// Scoreboard
// ------------------------------------------------------------------------------------------------

using board = systolic::verify::scoreboard;

// A 2x2 C of int64 at 0x1000 with a 24-byte stride: C(0,*) at 0x1000/0x1008, padding 0x1010..0x1017,
// C(1,*) at 0x1018/0x1020, end 0x1028. The memory image spans 0x1000..0x103f.
constexpr u64 kMemBase = 0x1000;
constexpr u64 kMemSize = 0x40;
const matrix_layout kC{0x1000, 2, 2, 8, 24};
const std::vector<i64> kExpected = {7, 2, 16, 5};

// One write transaction with its own data buffer.
struct write_txn {
    std::vector<unsigned char> bytes;
    tlm::tlm_generic_payload gp;

    write_txn(u64 addr, const std::vector<i64>& values, tlm::tlm_response_status rs = tlm::TLM_OK_RESPONSE)
        : bytes(values.size() * sizeof(i64)) {
        std::memcpy(bytes.data(), values.data(), bytes.size());
        init(addr, rs);
    }
    write_txn(u64 addr, std::vector<unsigned char> raw) : bytes(std::move(raw)) {
        init(addr, tlm::TLM_OK_RESPONSE);
    }

    void init(u64 addr, tlm::tlm_response_status rs) {
        gp.set_command(tlm::TLM_WRITE_COMMAND);
        gp.set_address(addr);
        gp.set_data_ptr(bytes.data());
        gp.set_data_length(static_cast<unsigned int>(bytes.size()));
        gp.set_streaming_width(static_cast<unsigned int>(bytes.size()));
        gp.set_byte_enable_ptr(nullptr);
        gp.set_response_status(rs);
    }
};

void observe(board& sb, u64 addr, const std::vector<i64>& values) {
    write_txn t(addr, values);
    sb.observe_write(t.gp);
}

// A completed one-tile job with the counts the rule gives for 2x2 with K=3 on a 2x2 array.
struct job_fixture {
    systolic::expected_counts counts = count_job(problem_shape{2, 3, 2}, 2);
    systolic::job_result result;
    std::vector<std::uint8_t> before;
    std::vector<std::uint8_t> memory;

    explicit job_fixture(u64 memory_size = kMemSize) : before(memory_size, 0xee), memory(before) {
        result.status = systolic::job_status::completed;
        result.advance_edges = counts.advance_edges;
        result.macs_padded = counts.macs_padded;
        result.macs_real = counts.macs_real;
        systolic::tile_report t;
        t.where = plan_tiles(2, 2, 2, tile_order::row_major).at(0);
        t.advance_edges = counts.advance_edges_per_tile;
        result.tiles.push_back(t);
    }
    // Mirrors a write into the memory image, as the real memory would see it.
    void store(u64 addr, i64 v) { std::memcpy(memory.data() + (addr - kMemBase), &v, sizeof v); }
    const systolic::verify::scoreboard_summary& finish(board& sb) {
        return sb.finish(result, counts, memory.data(), kMemBase, before);
    }
};

// C's expected values in the memory image, as the DUT's writes leave them.
void write_all_of_c_in_memory(job_fixture& fx) {
    for (u64 r = 0; r < 2; ++r)
        for (u64 c = 0; c < 2; ++c)
            fx.store(kC.address(r, c), kExpected[r * 2 + c]);
}

void write_all_of_c(board& sb, job_fixture& fx) {
    for (u64 r = 0; r < 2; ++r)
        for (u64 c = 0; c < 2; ++c)
            observe(sb, kC.address(r, c), {kExpected[r * 2 + c]});
    write_all_of_c_in_memory(fx);
}

TEST(Scoreboard, FixtureMatchesCountingRule) {
    const job_fixture fx;
    EXPECT_EQ(fx.counts.tiles, 1u);
    EXPECT_EQ(fx.counts.advance_edges, 5u);  // K + 2(N-1) = 3 + 2
}

TEST(Scoreboard, CorrectWritesPass) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);  // M x P
    EXPECT_EQ(s.writes, 4u);
    EXPECT_EQ(s.mismatches, 0u);
    EXPECT_EQ(s.out_of_range_writes, 0u);
    EXPECT_EQ(s.missing, 0u);
    EXPECT_EQ(s.duplicates, 0u);
    EXPECT_TRUE(s.untouched_ok);
    EXPECT_TRUE(s.edges_ok);
    EXPECT_TRUE(s.completed);
    EXPECT_TRUE(s.errors.empty()) << joined(s.errors);
}

// Keyed by global coordinates: a row-wide burst and any order give the same verdict.
TEST(Scoreboard, OrderAndBurstsDoNotMatter) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(1, 1), {5});
    observe(sb, kC.address(0, 0), {7, 2});  // one 16-byte write covering row 0
    observe(sb, kC.address(1, 0), {16});
    write_all_of_c_in_memory(fx);
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);
}

// C written by the DUT, but overwritten in memory before the job ended by something the monitor
// does not see: the element no longer holds what was written.
TEST(Scoreboard, ElementOverwrittenAfterItsWrite) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.store(kC.address(1, 0), 99);
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.overwritten, 1u);
    EXPECT_EQ(s.mismatches, 0u);
    EXPECT_TRUE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "C(1,0) holds 99 in memory, but 16 was written")) << joined(s.errors);
}

TEST(Scoreboard, WrongValue) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(0, 0), {6});
    observe(sb, kC.address(0, 1), {2});
    observe(sb, kC.address(1, 0), {16});
    observe(sb, kC.address(1, 1), {5});
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.mismatches, 1u);
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "C(0,0) expected 7, got 6")) << joined(s.errors);
}

TEST(Scoreboard, WriteToStridePadding) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, 0x1010, {0});
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1010")) << joined(s.errors);
}

TEST(Scoreboard, WritePastC) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, 0x1028, {0});  // one element past C(1,1)
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1028")) << joined(s.errors);
}

// A burst that runs off the end of row 0 into the padding: the first element counts, the second is out of
// range.
TEST(Scoreboard, BurstIntoPadding) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(0, 1), {2, 99});
    const auto& s = sb.summary();
    EXPECT_EQ(s.writes, 2u);
    EXPECT_EQ(s.checked, 1u);
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1010")) << joined(s.errors);
}

// A write covering only half an element is out of range, not a partial value check.
TEST(Scoreboard, PartialElementWrite) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_txn t(kC.address(0, 0), std::vector<unsigned char>{7, 0, 0, 0});
    sb.observe_write(t.gp);
    const auto& s = sb.summary();
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_EQ(s.checked, 0u);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1000")) << joined(s.errors);
}

TEST(Scoreboard, DuplicateWrite) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, kC.address(1, 0), {16});  // right value, but twice
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.duplicates, 1u);
    EXPECT_EQ(s.mismatches, 0u);
    EXPECT_TRUE(contains_text(s.errors, "C(1,0) written 2 times")) << joined(s.errors);
}

TEST(Scoreboard, MissingElement) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(0, 0), {7});
    observe(sb, kC.address(0, 1), {2});
    observe(sb, kC.address(1, 0), {16});
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.missing, 1u);
    EXPECT_EQ(s.checked, 3u);
    EXPECT_TRUE(contains_text(s.errors, "C(1,1) never written")) << joined(s.errors);
}

TEST(Scoreboard, FailedWriteResponse) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    write_txn t(kC.address(0, 0), {7}, tlm::TLM_ADDRESS_ERROR_RESPONSE);
    sb.observe_write(t.gp);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write to C(0,0) failed")) << joined(sb.summary().errors);
}

TEST(Scoreboard, MemoryOutsideCChanged) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.memory[0x12] = 0x42;  // 0x1012: stride padding
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "memory outside C changed at 0x1012")) << joined(s.errors);
}

TEST(Scoreboard, MemoryPastCChanged) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.memory[0x3f] = 0;  // last byte of the image, well past C
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "at 0x103f")) << joined(s.errors);
}

TEST(Scoreboard, WrongEdgeCount) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.result.advance_edges = 4;
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.edges_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "advance edges: expected 5")) << joined(s.errors);
}

// The MAC counters a DUT reports (MACS and MACS_REAL on the accelerator) against the counting rule.
TEST(Scoreboard, WrongMacCounts) {
    for (const bool padded : {true, false}) {
        board sb;
        job_fixture fx;
        sb.expect(kC, bytes_of(kExpected), print_i64);
        write_all_of_c(sb, fx);
        (padded ? fx.result.macs_padded : fx.result.macs_real) += 1;
        const auto& s = fx.finish(sb);
        EXPECT_FALSE(s.macs_ok);
        EXPECT_TRUE(s.edges_ok);
        EXPECT_FALSE(s.pass());
        const std::string want = padded
                                     ? "MACs with padding: expected " + std::to_string(fx.counts.macs_padded)
                                     : "real MACs: expected " + std::to_string(fx.counts.macs_real);
        EXPECT_TRUE(contains_text(s.errors, want)) << joined(s.errors);
    }
}

TEST(Scoreboard, WrongPerTileEdgeCount) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.result.tiles[0].advance_edges = 6;
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.edges_ok);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "tile 0: 6 advance edges, expected 5")) << joined(s.errors);
}

TEST(Scoreboard, JobNotCompleted) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    fx.result.status = systolic::job_status::watchdog;
    fx.result.error = "no progress";
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.completed);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.checked, 4u);
    EXPECT_TRUE(contains_text(s.errors, "job did not complete (watchdog): no progress")) << joined(s.errors);
}

TEST(Scoreboard, ComparesWithAReferenceThatArrivesLate) {
    board sb;
    job_fixture fx;
    std::promise<std::vector<std::uint8_t>> late;
    sb.expect(kC, late.get_future().share(), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, kC.address(0, 0), {6});   // a second, wrong write of C(0,0)
    late.set_value(bytes_of(kExpected));  // the reference finishes after the writes
    const auto& s = fx.finish(sb);
    EXPECT_EQ(s.mismatches, 1u);
    EXPECT_EQ(s.duplicates, 1u);
    EXPECT_TRUE(contains_text(s.errors, "C(0,0) expected")) << joined(s.errors);
}

TEST(Scoreboard, NothingCheckedFails) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    const auto& s = fx.finish(sb);
    EXPECT_EQ(s.checked, 0u);
    EXPECT_FALSE(s.pass());
    EXPECT_TRUE(contains_text(s.errors, "nothing was checked")) << joined(s.errors);
}

TEST(Scoreboard, ExpectResetsTheSummary) {
    board sb;
    job_fixture fx;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    observe(sb, kC.address(0, 0), {6});
    EXPECT_EQ(fx.finish(sb).mismatches, 1u);  // values are compared when the job finishes
    sb.expect(kC, bytes_of(kExpected), print_i64);
    EXPECT_EQ(sb.summary().mismatches, 0u);
    EXPECT_EQ(sb.summary().checked, 0u);
    EXPECT_TRUE(sb.summary().errors.empty());
    write_all_of_c(sb, fx);
    EXPECT_TRUE(fx.finish(sb).pass()) << joined(sb.summary().errors);
}

TEST(Scoreboard, ErrorListIsBounded) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64);
    for (int i = 0; i < 100; ++i)
        observe(sb, 0x1010, {0});
    EXPECT_EQ(sb.summary().out_of_range_writes, 100u);
    EXPECT_EQ(sb.summary().errors.size(), board::max_errors);
}

// The partial-sum buffer of a K-split job: 2x2 int64 at 0x1040 with a 24-byte stride, after C:
// P(0,*) at 0x1040/0x1048, padding 0x1050..0x1057, P(1,*) at 0x1058/0x1060, end 0x1068. The
// memory image for these cases spans 0x1000..0x107f.
constexpr u64 kMemWithPartialSize = 0x80;
const matrix_layout kPartial{0x1040, 2, 2, 8, 24};

// Writes to the partial-sum buffer are the job's own scratch traffic: counted as partial writes,
// never as writes to C, never out of range, and the bytes they change are not "outside C".
TEST(Scoreboard, PartialBufferWritesAreAllowed) {
    board sb;
    job_fixture fx(kMemWithPartialSize);
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    // Chunk 0's partials, the first row as one burst, then chunk 1 rewrites P(0,0).
    observe(sb, kPartial.address(0, 0), {1, 2});
    observe(sb, kPartial.address(1, 0), {3});
    observe(sb, kPartial.address(1, 1), {4});
    observe(sb, kPartial.address(0, 0), {-5});
    for (auto [addr, v] : {std::pair<u64, i64>{0x1040, -5}, {0x1048, 2}, {0x1058, 3}, {0x1060, 4}})
        fx.store(addr, v);
    write_all_of_c(sb, fx);
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.partial_writes, 5u);
    EXPECT_EQ(s.writes, 4u);
    EXPECT_EQ(s.checked, 4u);
    EXPECT_EQ(s.out_of_range_writes, 0u);
    EXPECT_EQ(s.duplicates, 0u);
    EXPECT_TRUE(s.untouched_ok);
    EXPECT_TRUE(s.errors.empty()) << joined(s.errors);
}

// The partial buffer's stride padding is not the buffer: a write there is out of range, and a
// changed byte there is memory outside C.
TEST(Scoreboard, PartialBufferPaddingIsOutOfRange) {
    board sb;
    job_fixture fx(kMemWithPartialSize);
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    write_all_of_c(sb, fx);
    observe(sb, 0x1050, {0});
    fx.store(0x1050, 0);
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_EQ(s.partial_writes, 0u);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1050")) << joined(s.errors);
    EXPECT_TRUE(contains_text(s.errors, "memory outside C changed at 0x1050")) << joined(s.errors);
}

// Past the partial buffer's end (0x1068) and halfway into one of its elements: out of range too.
TEST(Scoreboard, PartialBufferEdgesAreOutOfRange) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    observe(sb, 0x1068, {0});
    write_txn half(kPartial.address(1, 1), std::vector<unsigned char>{1, 2, 3, 4});
    sb.observe_write(half.gp);
    write_txn misaligned(kPartial.address(0, 0) + 4, std::vector<unsigned char>(8, 0));
    sb.observe_write(misaligned.gp);
    EXPECT_EQ(sb.summary().partial_writes, 0u);
    EXPECT_EQ(sb.summary().out_of_range_writes, 3u);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write outside C at 0x1068"))
        << joined(sb.summary().errors);
}

// A burst from the last element of a partial-buffer row on through the padding into the next row
// writes stride padding, so it must be out of range like any other padding write.
// DISABLED: the scoreboard only checks that the first and last bytes are on the buffer, so the
// 8 padding bytes in the middle of this write pass as three partial writes (see the report).
TEST(Scoreboard, PartialBufferBurstAcrossPaddingIsOutOfRange) {
    board sb;
    sb.expect(kC, bytes_of(kExpected), print_i64, kPartial);
    observe(sb, kPartial.address(0, 1), {2, 99, 3});  // 0x1048..0x105f: P(0,1), padding, P(1,0)
    EXPECT_GE(sb.summary().out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write outside C at 0x1050"))
        << joined(sb.summary().errors);
}

// Without a partial layout, the same addresses are simply outside C.
TEST(Scoreboard, PartialWritesWithoutAPartialBufferAreOutOfRange) {
    board sb;
    job_fixture fx(kMemWithPartialSize);
    sb.expect(kC, bytes_of(kExpected), print_i64);
    write_all_of_c(sb, fx);
    observe(sb, kPartial.address(0, 0), {1});
    fx.store(kPartial.address(0, 0), 1);
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.partial_writes, 0u);
    EXPECT_EQ(s.out_of_range_writes, 1u);
    EXPECT_FALSE(s.untouched_ok);
    EXPECT_TRUE(contains_text(s.errors, "write outside C at 0x1040")) << joined(s.errors);
}

// int8 output: one byte per element, 2x2 packed at 0x1000 (C(1,0) at 0x1002). The seeds' case at
// C(0,0): quantized once it is 4, with rounded partials 3; -128 vs 127 shows signed values.
TEST(Scoreboard, Int8OutputMismatchShowsSignedValues) {
    const matrix_layout c8{0x1000, 2, 2, 1, 2};
    const std::vector<i8> expected = {4, -128, 8, 2};
    board sb;
    job_fixture fx;
    sb.expect(c8, bytes_of(expected), print_i8);
    write_txn w00(0x1000, std::vector<unsigned char>{3});
    write_txn w01(0x1001, std::vector<unsigned char>{127});
    write_txn row1(0x1002, std::vector<unsigned char>{8, 2});
    for (auto* t : {&w00, &w01, &row1}) {
        sb.observe_write(t->gp);
        std::memcpy(fx.memory.data() + (t->gp.get_address() - kMemBase), t->bytes.data(), t->bytes.size());
    }
    const auto& s = fx.finish(sb);
    EXPECT_FALSE(s.pass());
    EXPECT_EQ(s.checked, 4u);
    EXPECT_EQ(s.writes, 4u);
    EXPECT_EQ(s.mismatches, 2u);
    EXPECT_EQ(s.out_of_range_writes, 0u);
    EXPECT_EQ(s.missing, 0u);
    EXPECT_TRUE(s.untouched_ok) << joined(s.errors);
    EXPECT_TRUE(contains_text(s.errors, "C(0,0) expected 4, got 3")) << joined(s.errors);
    EXPECT_TRUE(contains_text(s.errors, "C(0,1) expected -128, got 127")) << joined(s.errors);
}

TEST(Scoreboard, Int8OutputCorrectWritesPass) {
    const matrix_layout c8{0x1000, 2, 2, 1, 4};  // 2 bytes of padding after each row
    const std::vector<i8> expected = {-1, 0, 127, -128};
    board sb;
    job_fixture fx;
    sb.expect(c8, bytes_of(expected), print_i8);
    write_txn row0(0x1000, std::vector<unsigned char>{0xff, 0x00});
    write_txn row1(0x1004, std::vector<unsigned char>{0x7f, 0x80});
    for (auto* t : {&row0, &row1}) {
        sb.observe_write(t->gp);
        std::memcpy(fx.memory.data() + (t->gp.get_address() - kMemBase), t->bytes.data(), t->bytes.size());
    }
    const auto& s = fx.finish(sb);
    EXPECT_TRUE(s.pass()) << joined(s.errors);
    EXPECT_EQ(s.checked, 4u);
    // In a new job, one byte into row 0's padding is out of range.
    sb.expect(c8, bytes_of(expected), print_i8);
    write_txn pad(0x1002, std::vector<unsigned char>{0});
    sb.observe_write(pad.gp);
    EXPECT_EQ(sb.summary().out_of_range_writes, 1u);
    EXPECT_TRUE(contains_text(sb.summary().errors, "write outside C at 0x1002"))
        << joined(sb.summary().errors);
}

// ------------------------------------------------------------------------------------------------
// ReferenceGemm
// ------------------------------------------------------------------------------------------------

TEST(ReferenceGemm, SeedProduct) {
    const auto pr = systolic::verify::seed_example<int32_format>();
    EXPECT_EQ(pr.shape.m, 3u);
    EXPECT_EQ(pr.shape.k, 3u);
    EXPECT_EQ(pr.shape.p, 3u);
    const auto c = systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b);
    const std::vector<i64> want = {7, 2, 5, 16, 5, 14, 25, 8, 23};
    EXPECT_EQ(c, want);
}

// Seed 000: C00 = A00 B00 + A01 B10 = [[1,2],[3,4]] I + [[0,1],[1,0]] [[1,1],[0,1]] = [[1,3],[4,5]].
TEST(ReferenceGemm, BlockedExampleTopLeft) {
    // clang-format off
    const std::vector<i32> a = {
        1, 2,   0, 1,
        3, 4,   1, 0,
        -5, 9,  2, 7,
        8, -3,  6, 4,
    };
    const std::vector<i32> b = {
        1, 0,   3, -2,
        0, 1,   5, 6,
        1, 1,   -4, 8,
        0, 1,   7, 2,
    };
    // clang-format on
    const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{4, 4, 4}, a, b);
    ASSERT_EQ(c.size(), 16u);
    EXPECT_EQ(c[0 * 4 + 0], 1);
    EXPECT_EQ(c[0 * 4 + 1], 3);
    EXPECT_EQ(c[1 * 4 + 0], 4);
    EXPECT_EQ(c[1 * 4 + 1], 5);
}

// Non-square shapes and signs: [[1,-2,3],[0,4,-1]] (2x3) times [[2],[1],[-3]] (3x1).
TEST(ReferenceGemm, NonSquareShape) {
    const std::vector<i32> a = {1, -2, 3, 0, 4, -1};
    const std::vector<i32> b = {2, 1, -3};
    const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{2, 3, 1}, a, b);
    const std::vector<i64> want = {2 - 2 - 9, 0 + 4 + 3};
    EXPECT_EQ(c, want);
}

// The reference accumulates in 64 bits: 2 x INT32_MAX^2 is about 2^63 - 2^33, far beyond 32 bits.
TEST(ReferenceGemm, AccumulatesWide) {
    const std::vector<i32> a = {kMax32, kMax32};
    const std::vector<i32> b = {kMax32, kMax32};
    const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{1, 2, 1}, a, b);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0], 2 * i64{kMax32} * i64{kMax32});
}

TEST(ReferenceGemm, RandomProblemIsDeterministicAndInRange) {
    const problem_shape s{4, 5, 6};
    const auto p1 = systolic::verify::random_problem<int32_format>(s, 77, 10);
    const auto p2 = systolic::verify::random_problem<int32_format>(s, 77, 10);
    const auto p3 = systolic::verify::random_problem<int32_format>(s, 78, 10);
    EXPECT_EQ(p1.a, p2.a);
    EXPECT_EQ(p1.b, p2.b);
    EXPECT_TRUE(p1.a != p3.a || p1.b != p3.b);
    ASSERT_EQ(p1.a.size(), 20u);
    ASSERT_EQ(p1.b.size(), 30u);
    for (auto v : p1.a)
        EXPECT_TRUE(v >= -10 && v <= 10) << v;
    for (auto v : p1.b)
        EXPECT_TRUE(v >= -10 && v <= 10) << v;
}

// ------------------------------------------------------------------------------------------------
// ReferenceGemm with K-splitting, overflow modes and number formats
// ------------------------------------------------------------------------------------------------

systolic::verify::reference_options split_options(u64 k_tile, k_policy policy,
                                                  overflow_mode overflow = overflow_mode::wrap,
                                                  quantization quant = {}) {
    systolic::verify::reference_options opt;
    opt.k_tile = k_tile;
    opt.policy = policy;
    opt.overflow = overflow;
    opt.quant = quant;
    return opt;
}

// Seeds: K = 3 split 2 + 1. C(0,0) = 1*1 + 2*0 + 3*2: chunk partials 1 and 6, combined 7. Integer
// sums in range do not depend on the split, so both policies give the seed's C.
TEST(ReferenceGemm, KSplitSeedProduct) {
    const std::vector<i64> want = {7, 2, 5, 16, 5, 14, 25, 8, 23};
    const auto pr = systolic::verify::seed_example<int32_format>();
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        for (u64 kt : {0ull, 1ull, 2ull, 3ull, 4ull}) {
            const auto c = systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b,
                                                                          split_options(kt, policy));
            EXPECT_EQ(c, want) << to_string(policy) << " KT=" << kt;
        }
    }
    const auto p8 = systolic::verify::seed_example<int8_format>();
    const auto c8 = systolic::verify::reference_gemm<int8_format>(p8.shape, p8.a, p8.b,
                                                                  split_options(2, k_policy::partials));
    EXPECT_EQ(c8, (std::vector<i32>{7, 2, 5, 16, 5, 14, 25, 8, 23}));
}

// Rounding each chunk's partial (scale 0.5, nearest-even) before combining. Chunk partials of the
// seed (terms 0-1, then term 2), A = [[1,2,3],[4,5,6],[7,8,9]], B = [[1,0,2],[0,1,0],[2,0,1]]:
//   C(0,*): (1,6) (2,0) (2,3)   -> 0+3=3, 1+0=1, 1+round(1.5)=1+2=3
//   C(1,*): (4,12) (5,0) (8,6)  -> 2+6=8, round(2.5)=2+0=2, 4+3=7
//   C(2,*): (7,18) (8,0) (14,9) -> round(3.5)=4+9=13, 4+0=4, 7+round(4.5)=7+4=11
TEST(ReferenceGemm, PerPartialQuantizationRoundsEachChunk) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.per_partial = true;
    const auto pr = systolic::verify::seed_example<int32_format>();
    const auto wide = systolic::verify::reference_gemm<int32_format>(
        pr.shape, pr.a, pr.b, split_options(2, k_policy::partials, {}, q));
    EXPECT_EQ(wide, (std::vector<i64>{3, 1, 3, 8, 2, 7, 13, 4, 11}));
    EXPECT_EQ(wide[0], 3);  // the seeds' case: round(0.5) + round(3.0) = 0 + 3
    // Encoded, only the zero point and the clip remain.
    const auto c = systolic::verify::encode_c<int32_format>(wide, q);
    EXPECT_EQ(c, bytes_of(std::vector<i8>{3, 1, 3, 8, 2, 7, 13, 4, 11}));
    // Quantizing once instead: round(C / 2) = 3.5->4, 1, 2.5->2, 8, 2.5->2, 7, 12.5->12, 4, 11.5->12.
    auto once = q;
    once.per_partial = false;
    const auto full = systolic::verify::reference_gemm<int32_format>(
        pr.shape, pr.a, pr.b, split_options(2, k_policy::partials, {}, once));
    EXPECT_EQ(full, (std::vector<i64>{7, 2, 5, 16, 5, 14, 25, 8, 23}));
    EXPECT_EQ(systolic::verify::encode_c<int32_format>(full, once),
              bytes_of(std::vector<i8>{4, 1, 2, 8, 2, 7, 12, 4, 12}));
}

// per_partial only means something with partial sums over more than one chunk.
TEST(ReferenceGemm, PerPartialIgnoredWithoutPartialSums) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.per_partial = true;
    const auto pr = systolic::verify::seed_example<int32_format>();
    for (auto opt : {split_options(2, k_policy::preserve, {}, q), split_options(3, k_policy::partials, {}, q),
                     split_options(0, k_policy::partials, {}, q)}) {
        const auto c = systolic::verify::reference_gemm<int32_format>(pr.shape, pr.a, pr.b, opt);
        EXPECT_EQ(c[0], 7) << to_string(opt.policy) << " KT=" << opt.k_tile;
    }
}

// Seed 000 with KT = 2 = N: C00 = A00 B00 + A01 B10 = [[1,3],[4,5]], chunk by chunk or preserved.
TEST(ReferenceGemm, BlockedExampleTopLeftWithKSplit) {
    // clang-format off
    const std::vector<i32> a = {
        1, 2,   0, 1,
        3, 4,   1, 0,
        -5, 9,  2, 7,
        8, -3,  6, 4,
    };
    const std::vector<i32> b = {
        1, 0,   3, -2,
        0, 1,   5, 6,
        1, 1,   -4, 8,
        0, 1,   7, 2,
    };
    // clang-format on
    for (auto policy : {k_policy::preserve, k_policy::partials}) {
        const auto c = systolic::verify::reference_gemm<int32_format>(problem_shape{4, 4, 4}, a, b,
                                                                      split_options(2, policy));
        ASSERT_EQ(c.size(), 16u);
        EXPECT_EQ(c[0 * 4 + 0], 1) << to_string(policy);
        EXPECT_EQ(c[0 * 4 + 1], 3) << to_string(policy);
        EXPECT_EQ(c[1 * 4 + 0], 4) << to_string(policy);
        EXPECT_EQ(c[1 * 4 + 1], 5) << to_string(policy);
    }
}

// The overflow mode reaches the reference, and under saturation the order of combination matters.
// Terms p, p, p, -p (p = INT32_MAX^2): preserved with saturation, 2p, then 3p clamps to INT64_MAX,
// then INT64_MAX - p. Wrapping is modular, so the final sum is the exact 2p. Partial sums with
// KT = 2 give 2p and p - p = 0, combined 2p without touching the limit.
TEST(ReferenceGemm, OverflowModeAndCombinationOrder) {
    const std::vector<i32> a = {kMax32, kMax32, kMax32, kMax32};
    const std::vector<i32> b = {kMax32, kMax32, kMax32, -kMax32};
    const problem_shape s{1, 4, 1};
    using systolic::verify::reference_gemm;
    const auto sat = overflow_mode::saturate;
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(0, k_policy::preserve, sat))[0],
              kMax64 - kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(2, k_policy::preserve, sat))[0],
              kMax64 - kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(0, k_policy::preserve))[0],
              2 * kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(2, k_policy::partials, sat))[0],
              2 * kMaxProduct);
    EXPECT_EQ(reference_gemm<int32_format>(s, a, b, split_options(2, k_policy::partials))[0],
              2 * kMaxProduct);
    // Three p's alone: wrapped 3p - 2^64 = -4611686031312289789, saturated INT64_MAX.
    const std::vector<i32> a3 = {kMax32, kMax32, kMax32}, b3 = {kMax32, kMax32, kMax32};
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3)[0], -4611686031312289789);
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3, split_options(0, k_policy::preserve, sat))[0],
              kMax64);
    // Combining partials saturates too: 2p + p with KT = 2.
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3, split_options(2, k_policy::partials, sat))[0],
              kMax64);
    EXPECT_EQ(reference_gemm<int32_format>({1, 3, 1}, a3, b3, split_options(2, k_policy::partials))[0],
              -4611686031312289789);
}

// fp32 partial sums are chunk-wise: each chunk summed from zero in k order, then the chunks added in
// order. Written out here for one element with K = 7, KT = 3: ((p0 + p1) + p2) with p0 = terms
// 0..2, p1 = 3..5, p2 = term 6; preserved, one running sum over 0..6.
TEST(ReferenceGemm, Fp32PartialsFollowChunkOrder) {
    const problem_shape s{3, 7, 2};
    const auto pr = systolic::verify::random_problem<fp32_format>(s, 21);
    const std::size_t r = 2, col = 1;
    auto term = [&](std::size_t k) { return pr.a[r * s.k + k] * pr.b[k * s.p + col]; };
    float p0 = 0, p1 = 0, p2 = 0, run = 0;
    for (std::size_t k = 0; k < 3; ++k)
        p0 = p0 + term(k);
    for (std::size_t k = 3; k < 6; ++k)
        p1 = p1 + term(k);
    p2 = p2 + term(6);
    const float chunked = (p0 + p1) + p2;
    for (std::size_t k = 0; k < 7; ++k)
        run = run + term(k);
    const auto partials =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(3, k_policy::partials));
    const auto preserved =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(3, k_policy::preserve));
    EXPECT_EQ(bits_of(partials[r * s.p + col]), bits_of(chunked));
    EXPECT_EQ(bits_of(preserved[r * s.p + col]), bits_of(run));
    EXPECT_EQ(preserved, systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b));  // preserve = unsplit
}

// Rounding order is visible: over enough random fp32 data, partial sums and one running sum
// disagree in the last bits somewhere (same values, different association).
TEST(ReferenceGemm, Fp32PartialsCanDifferFromPreserved) {
    const problem_shape s{8, 64, 8};
    const auto pr = systolic::verify::random_problem<fp32_format>(s, 5);
    const auto partials =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(5, k_policy::partials));
    const auto preserved =
        systolic::verify::reference_gemm<fp32_format>(s, pr.a, pr.b, split_options(5, k_policy::preserve));
    std::size_t differ = 0;
    for (std::size_t i = 0; i < partials.size(); ++i) {
        differ += bits_of(partials[i]) != bits_of(preserved[i]);
        EXPECT_NEAR(partials[i], preserved[i], 1e-4f) << i;
    }
    EXPECT_GT(differ, 0u);
}

// bf16 operands are rounded when the problem is made: 1 + 2^-8 -> 1, 1 + 3 x 2^-8 -> 1 + 2^-6. So
// [1 + 2^-8, 1 + 3 x 2^-8] . [1, 1] = 1 + 1 + 2^-6 = 2.015625, accumulated in fp32.
TEST(ReferenceGemm, Bf16OperandsAreRoundedOnLoad) {
    const auto pr =
        systolic::verify::make_problem<bf16_format>({1, 2, 1}, {1.0 + 0x1p-8, 1.0 + 3 * 0x1p-8}, {1.0, 1.0});
    ASSERT_EQ(pr.a.size(), 2u);
    EXPECT_EQ(pr.a[0].bits, 0x3f80);
    EXPECT_EQ(pr.a[1].bits, 0x3f82);
    const auto c = systolic::verify::reference_gemm<bf16_format>(pr.shape, pr.a, pr.b);
    ASSERT_EQ(c.size(), 1u);
    EXPECT_EQ(c[0], 2.015625f);
    // The bf16 reference also keeps products in float: -1 + (1 + 2^-7)^2 = 2^-6 + 2^-14.
    const auto sq =
        systolic::verify::make_problem<bf16_format>({1, 2, 1}, {-1.0, 1.0 + 0x1p-7}, {1.0, 1.0 + 0x1p-7});
    EXPECT_EQ(systolic::verify::reference_gemm<bf16_format>(sq.shape, sq.a, sq.b)[0], 0x1p-6f + 0x1p-14f);
}

// No fused multiply-add in the reference either (see NumberFormat.Fp32MacRoundsTheProductThenAdds).
TEST(ReferenceGemm, Fp32ReferenceDoesNotFuse) {
    const double x = 1.0 + 0x1p-12;
    const auto pr = systolic::verify::make_problem<fp32_format>({1, 2, 1}, {-1.0, x}, {1.0, x});
    EXPECT_EQ(systolic::verify::reference_gemm<fp32_format>(pr.shape, pr.a, pr.b)[0], 0x1p-11f);
}

TEST(ReferenceGemm, MakeProblemConvertsValues) {
    const auto p8 = systolic::verify::make_problem<int8_format>({1, 2, 2}, {-128, 127}, {1, -1, 0, 5});
    EXPECT_EQ(p8.a, (std::vector<i8>{-128, 127}));
    EXPECT_EQ(p8.b, (std::vector<i8>{1, -1, 0, 5}));
    EXPECT_EQ(p8.shape.m, 1u);
    EXPECT_EQ(p8.shape.k, 2u);
    EXPECT_EQ(p8.shape.p, 2u);
    const auto pf = systolic::verify::make_problem<fp32_format>({1, 1, 1}, {0.1}, {-2.5});
    EXPECT_EQ(pf.a[0], 0.1f);
    EXPECT_EQ(pf.b[0], -2.5f);
}

TEST(ReferenceGemm, DefaultRanges) {
    EXPECT_EQ(systolic::verify::default_range<int8_format>(), 127.0);
    EXPECT_EQ(systolic::verify::default_range<int32_format>(), 1000.0);
    EXPECT_EQ(systolic::verify::default_range<fp32_format>(), 1.0);
    EXPECT_EQ(systolic::verify::default_range<bf16_format>(), 1.0);
}

// Random operands: integers within [-range, range], reals within [-range, range) (bf16 values may
// round up to exactly the range's end), the same for the same seed, every bf16 a rounded value.
TEST(ReferenceGemm, RandomProblemsOfEveryFormat) {
    const problem_shape s{5, 6, 7};
    const auto i8p = systolic::verify::random_problem<int8_format>(s, 3);
    bool saw_negative = false, saw_large = false;
    for (auto v : i8p.a) {
        EXPECT_TRUE(v >= -127 && v <= 127) << int{v};
        saw_negative = saw_negative || v < 0;
        saw_large = saw_large || v > 64 || v < -64;
    }
    EXPECT_TRUE(saw_negative);
    EXPECT_TRUE(saw_large);  // 30 draws from 255 values: the default range is the whole int8 range
    const auto i32p = systolic::verify::random_problem<int32_format>(s, 3);
    for (auto v : i32p.b)
        EXPECT_TRUE(v >= -1000 && v <= 1000) << v;

    const auto f1 = systolic::verify::random_problem<fp32_format>(s, 9);
    const auto f2 = systolic::verify::random_problem<fp32_format>(s, 9);
    EXPECT_EQ(f1.a, f2.a);
    EXPECT_EQ(f1.b, f2.b);
    bool fractional = false;
    for (auto v : f1.a) {
        EXPECT_TRUE(v >= -1.0f && v < 1.0f) << v;
        fractional = fractional || v != std::trunc(v);
    }
    EXPECT_TRUE(fractional);
    const auto big = systolic::verify::random_problem<fp32_format>(s, 9, 8.0);
    for (auto v : big.b)
        EXPECT_TRUE(v >= -8.0f && v < 8.0f) << v;

    const auto h = systolic::verify::random_problem<bf16_format>(s, 9);
    for (auto v : h.a) {
        const float f = v.to_float();
        EXPECT_TRUE(f >= -1.0f && f <= 1.0f) << f;
        EXPECT_EQ(bf16::from_float(f).bits, v.bits);
    }
}

// ------------------------------------------------------------------------------------------------
// EncodeC: C's bytes from the wide result
// ------------------------------------------------------------------------------------------------

// Without quantization C holds the accumulators themselves, little-endian bytes as memory has them.
TEST(EncodeC, AccumulatorsPassThroughAsBytes) {
    const std::vector<i64> wide = {7, -1, kMin64};
    const auto bytes = systolic::verify::encode_c<int32_format>(wide, quantization{});
    ASSERT_EQ(bytes.size(), 24u);
    EXPECT_EQ(bytes, bytes_of(wide));
    EXPECT_EQ(bytes[0], 7);
    for (int i = 1; i < 8; ++i)
        EXPECT_EQ(bytes[i], 0) << i;
    for (int i = 8; i < 16; ++i)
        EXPECT_EQ(bytes[i], 0xff) << i;
    EXPECT_EQ(bytes[23], 0x80);  // INT64_MIN's top byte

    const std::vector<float> f = {1.5f, -0.0f};
    const auto fb = systolic::verify::encode_c<fp32_format>(f, quantization{});
    EXPECT_EQ(fb,
              (std::vector<u8>{0x00, 0x00, 0xc0, 0x3f, 0x00, 0x00, 0x00, 0x80}));  // 0x3fc00000, 0x80000000
    const auto i32b = systolic::verify::encode_c<int8_format>(std::vector<i32>{-2}, quantization{});
    EXPECT_EQ(i32b, (std::vector<u8>{0xfe, 0xff, 0xff, 0xff}));
}

// With quantization: one byte each, q = saturate(round(acc x scale) + zero_point).
TEST(EncodeC, Int8Requantization) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    // 7 -> 3.5 -> 4; 300 -> 150 -> 127; -300 -> -128; 5 -> 2.5 -> 2; -1 -> -0.5 -> 0; 254 -> 127.
    const std::vector<i32> wide = {7, 300, -300, 5, -1, 254};
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{4, 127, -128, 2, 0, 127}));
    q.zero_point = 3;  // after rounding, before the clip: 4+3, 150+3, -150+3 = -147, 2+3, 0+3, 127+3
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{7, 127, -128, 5, 3, 127}));
    q.zero_point = -3;  // -127 - 3 = -130 clips; -0.5 -> 0, - 3 = -3
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(std::vector<i32>{-254, -1, 254}, q),
              bytes_of(std::vector<i8>{-128, -3, 124}));
    q.zero_point = 0;
    q.rounding = rounding_mode::toward_zero;  // 3.5 -> 3, 2.5 -> 2, -0.5 -> 0
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{3, 127, -128, 2, 0, 127}));
    q.rounding = rounding_mode::nearest_away;  // 3.5 -> 4, 2.5 -> 3, -0.5 -> -1
    EXPECT_EQ(systolic::verify::encode_c<int8_format>(wide, q),
              bytes_of(std::vector<i8>{4, 127, -128, 3, -1, 127}));
    // Floating-point accumulators quantize the same way; NaN becomes the zero point.
    quantization fq;
    fq.enabled = true;
    fq.zero_point = -2;
    const std::vector<float> f = {2.6f, -0.4f, std::nanf(""), 1e9f};
    EXPECT_EQ(systolic::verify::encode_c<fp32_format>(f, fq), bytes_of(std::vector<i8>{1, -2, -2, 127}));
}

// Per-partial: the wide values were already scaled and rounded chunk by chunk, so only the zero
// point and the clip remain. 5 stays 5 (requantizing would give round(2.5) = 2).
TEST(EncodeC, PerPartialOnlySaturatesAndAddsZeroPoint) {
    quantization q;
    q.enabled = true;
    q.scale = 0.5;
    q.per_partial = true;
    q.zero_point = 1;
    const std::vector<i64> wide = {3, 5, 126, 127, -129, -130, 200};
    EXPECT_EQ(systolic::verify::encode_c<int32_format>(wide, q),
              bytes_of(std::vector<i8>{4, 6, 127, 127, -128, -128, 127}));
}

}  // namespace
