// From the accelerator's configuration registers to a matmul_job, or to the error code that
// refuses it. Plain C++: the accelerator calls it on START, a unit test can call it directly.
// Every check happens here, before any memory is touched (the order is in accelerator_map.h).
#pragma once

#include <cstdint>
#include <string>

#include "systolic/accelerator_map.h"
#include "systolic/job.h"
#include "systolic/memory_system.h"
#include "systolic/number_format.h"
#include "systolic/register_block.h"

namespace systolic {

// The configuration registers' values.
struct job_request {
    std::uint32_t m = 0, k = 0, p = 0;
    std::uint64_t a = 0, b = 0, c = 0, partial = 0;
    std::uint32_t a_stride = 0, b_stride = 0, c_stride = 0, partial_stride = 0;
    std::uint32_t dtype = 0, out_dtype = 0, order = 0, k_tile = 0, k_policy = 0, overflow = 0, rounding = 0;
    std::uint32_t dataflow = 0;
    std::uint32_t scale_bits = 0x3f800000u;
    std::uint32_t zero_point = 0;
    std::uint64_t scale_vec = 0;  // 0: per-tensor
    std::uint32_t zero_point_vec = 0;
};

job_request read_request(const register_block& regs);

struct job_limits {
    std::size_t array_size = 2;
    // Bytes the model may allocate for one job: its tile plan and its operand buffers.
    std::uint64_t max_job_bytes = std::uint64_t{256} << 20;
    // The scratchpads and DRAM bandwidth every job gets.
    memory_config memory = {};
};

struct decoded_job {
    regmap::error_code error = regmap::error_code::none;
    std::string message;  // one line when refused
    systolic::dtype dtype = systolic::dtype::int8;
    matmul_job job;

    bool ok() const { return error == regmap::error_code::none; }
};

decoded_job decode_job(const job_request& req, const job_limits& limits);

// Operand and accumulator sizes of a format in bytes.
std::uint64_t operand_size(dtype d);
std::uint64_t accumulator_size(dtype d);

}  // namespace systolic
