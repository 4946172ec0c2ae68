// The one memory planner: where a job's A, B, C (and partial-sum buffer, when the job splits K with
// partial sums, and per-column requantization vectors, when it has them) go, and what fills the
// memory before the job. In that order, each preceded and followed by guard bytes and with row
// strides padded past the row length, all filled with a seeded pseudo-random pattern: a write that
// misses C therefore changes bytes the scoreboard compares, even when the value is zero. Plain C++
// apart from the memory it fills.
#pragma once

#include <cstdint>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/verify/fault.h"
#include "systolic/verify/memory_access.h"

namespace systolic::verify {

// How one job is run and checked: how the model runs it (run_options, as the job will carry it),
// the memory's layout and fill, a planted fault, the wait.
struct job_options {
    // With run.quant.columns: the per-column vectors go after C (and the partial-sum buffer), their
    // base chosen by plan_memory, their values taken from the problem (problem::column_scales).
    run_options run;
    bool packed = false;  // rows back to back and no guard bands (the layout a user's buffer has)
    std::uint64_t fill_seed = 0x5eed;
    fault inject = fault::none;  // a known defect to plant, to see the scoreboard or watchdog catch it
    // How long to wait for the job before calling it hung; zero: the DUT's own limit (dut::time_limit).
    sc_core::sc_time time_limit = sc_core::SC_ZERO_TIME;
    // The bytes from the memory's base that must be as they were after the job, outside C and the
    // partial sums: a platform guards its whole RAM so. Zero, or less than the job's extent: the extent.
    std::uint64_t guard = 0;
};

// Where a job of this shape goes from `base` (running as opt.run says), with operands of `operand_bytes` and
// accumulators of `accumulator_bytes`: guard bands and padded strides unless packed. The same for the same
// input.
matmul_job plan_memory(const problem_shape& s, const job_options& opt, std::uint64_t base,
                       std::uint64_t operand_bytes, std::uint64_t accumulator_bytes);

// The bytes from `base` that the job's matrices take, and the guard band after the last unless packed.
std::uint64_t memory_extent(const matmul_job& job, std::uint64_t base, bool packed);

// Fills [base, base + extent) with the seeded pattern, then writes A and B (row-major M x K and
// K x P elements of `operand_bytes`) where the job says.
void fill_memory(memory_access& mem, std::uint64_t extent, const matmul_job& job, const void* a,
                 const void* b, std::uint64_t operand_bytes, std::uint64_t fill_seed);

// Empty when the problem's per-column vectors fit the job (P entries each, when the job has them).
std::string column_values_error(const matmul_job& job, const std::vector<double>& scales,
                                const std::vector<std::int32_t>& zero_points);

// Writes the per-column vectors where the job says (run.quant.columns): P scales, then P zero points if
// the job has them. Throws std::invalid_argument when their lengths do not match the job's P.
void write_columns(memory_access& mem, const matmul_job& job, const std::vector<double>& scales,
                   const std::vector<std::int32_t>& zero_points);

}  // namespace systolic::verify
