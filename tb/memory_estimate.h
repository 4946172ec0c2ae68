// What one systolic-tb job will allocate, estimated from its shape before anything large is allocated,
// so that a job too large for the machine is refused with one line instead of growing until the
// kernel kills it. It follows the testbench's allocations (see testbench.h and the tile controller):
// the operands on the host, the simulated memory image and its shadow copy, the scoreboard's
// expected C and write counts, the controller's operand buffers, the PEs, one record per tile, and
// the process itself. tests/hardening_cli_test.cpp checks it against the measured peak resident set
// size (within 1.5x); when the testbench's allocations change, the constants here follow.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace systolic::tb {

struct memory_job {
    std::uint64_t m = 0, k = 0, p = 0;
    std::uint64_t rows = 1, cols = 1;                                  // the array: rows of PEs, PEs per row
    std::uint64_t fabric_rows = 1, fabric_cols = 1, fabric_depth = 1;  // arrays in a fabric
    std::uint64_t operand_bytes = 4;                                   // per element of A and B in the model
    std::uint64_t file_bytes = 0;         // per element of A and B in the input files (0: random data)
    std::uint64_t accumulator_bytes = 8;  // per wide result
    std::uint64_t output_bytes = 8;       // per element of C (1 for int8 output)
    std::uint64_t k_tile = 0;             // 0: the whole K in one chunk
    bool partial_buffer = false;          // K split with partial sums in memory
    bool per_partial = false;             // a second reference for --quantize-partials
    bool packed = false;
    std::uint64_t vcd_signals = 0;  // variables in the --vcd dump (6 per traced PE)
};

struct memory_estimate {
    std::uint64_t total = 0;
    std::vector<std::pair<std::string, std::uint64_t>> parts;  // the largest items, by name
};

memory_estimate estimate_memory(const memory_job& job);

// The default limit: half of the physical memory, or of the cgroup's limit when that is lower.
std::uint64_t default_memory_limit();

}  // namespace systolic::tb
