#include "systolic/memory_system.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "systolic/job.h"

namespace systolic {

std::string check_memory_config(const memory_config& memory, const matmul_job& job) {
    if (!(memory.dram_bandwidth >= 0) || std::isinf(memory.dram_bandwidth))
        return "the DRAM bandwidth must be a finite number of bytes per cycle, 0 or more (0: unlimited)";
    if (memory.buffers == buffer_mode::none) {
        if (memory.a_sram || memory.b_sram || memory.c_sram)
            return "scratchpad sizes need buffers double (with buffers none there are no scratchpads)";
        return {};
    }
    if (job.uses_partial_buffer())
        return "buffers double keeps the accumulators between K chunks: use k_policy preserve, not partials";
    return {};
}

std::string check_memory(const memory_config& memory, const matmul_job& job, std::size_t rows,
                         std::size_t cols, std::uint64_t operand_size, std::uint64_t accumulator_size) {
    if (auto err = check_memory_config(memory, job); !err.empty()) return err;
    if (memory.buffers == buffer_mode::none) return {};
    // The largest tile: its blocks bound what a scratchpad must hold.
    const std::uint64_t tr = std::min<std::uint64_t>(rows, job.shape.m);
    const std::uint64_t tc = std::min<std::uint64_t>(cols, job.shape.p);
    const std::uint64_t c_block = tr * tc * output_size(job.quant, accumulator_size);
    if (memory.c_sram && memory.c_sram < c_block)
        return "the C scratchpad (" + std::to_string(memory.c_sram) + " bytes) is smaller than one tile's outputs (" +
               std::to_string(c_block) + " bytes)";
    if (memory.a_sram && memory.a_sram < 2 * tr * operand_size)
        return "the A scratchpad (" + std::to_string(memory.a_sram) +
               " bytes) cannot hold one K term of a tile's A rows twice (" + std::to_string(2 * tr * operand_size) +
               " bytes)";
    if (memory.b_sram && memory.b_sram < 2 * tc * operand_size)
        return "the B scratchpad (" + std::to_string(memory.b_sram) +
               " bytes) cannot hold one K term of a tile's B columns twice (" +
               std::to_string(2 * tc * operand_size) + " bytes)";
    return {};
}

}  // namespace systolic
