// What one systolic-tb job will allocate, estimated from its shape before anything large is allocated,
// so that a job too large for the machine is refused with one line instead of growing until the
// kernel kills it. It follows the testbench's allocations (see testbench.h and the tile controller):
// the operands on the host, the simulated memory image and its shadow copy, the scoreboard's
// expected C and write counts, the controller's operand buffers, the PEs, one record per tile, and
// the process itself. tests/hardening_cli_test.cpp checks it against the measured peak resident set
// size (within 1.5x); when the testbench's allocations change, the constants here follow.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "systolic/fabric_engine.h"

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
    // The array or fabric, from the model's own structure sizes (describe_engine).
    std::uint64_t engine_bytes = 0;  // the cycle engine's state: array_core, or the fabric engine
    std::uint64_t modules = 0;       // sc_modules of the PEs, their rows and a fabric's arrays
    std::uint64_t links = 0;         // a fabric's links: a record each in the outcome
    bool json_report = false;        // the report is built: on a fabric, an object per link
};

// The engine's part of a job: what the model's structures allocate for this array or fabric.
template <class Format>
void describe_engine(memory_job& j, std::uint64_t link_latency) {
    const fabric_shape shape{std::size_t(j.fabric_rows), std::size_t(j.fabric_cols),
                             std::size_t(j.fabric_depth)};
    if (shape.single()) {
        j.engine_bytes = array_core<Format>::heap_bytes(std::size_t(j.rows), std::size_t(j.cols));
        j.modules = j.rows * j.cols + j.rows + 1;
        return;
    }
    const fabric_geometry g{shape, std::size_t(j.rows), link_latency};
    j.engine_bytes = fabric_engine<Format>::heap_bytes(g);
    j.modules = shape.arrays() * (j.rows * j.rows + j.rows + 1);
    j.links = shape.rows * (shape.cols - 1) * shape.depth + (shape.rows - 1) * shape.cols * shape.depth +
              (shape.depth > 1 ? shape.arrays() : 0);
}

struct memory_estimate {
    std::uint64_t total = 0;  // process + bench + job
    // For a process that keeps several testbenches: the process itself, what stays with the
    // testbench from job to job (PEs, engine, memory image, operand buffers), and what one job
    // holds only while it runs.
    std::uint64_t process = 0, bench = 0, job = 0;
    std::vector<std::pair<std::string, std::uint64_t>> parts;  // the largest items, by name
};

memory_estimate estimate_memory(const memory_job& job);

// The default limit: half of the physical memory, or of the cgroup's limit when that is lower.
std::uint64_t default_memory_limit();

// The promise a process checked its estimate against, kept for the message of an allocation that
// fails anyway (set_memory_budget, out_of_memory).
struct memory_budget {
    std::uint64_t estimate = 0;
    std::uint64_t limit = 0;
    bool limit_given = false;  // --max-memory, rather than the default share of physical memory
};

// Empty when the estimate is within the limit; else the refusal, "<subject> needs about 2.04 GiB
// of memory<detail>, over the limit of 1.95 GiB set by --max-memory", with enough digits to tell
// the two figures apart.
std::string memory_refusal(const std::string& subject, const std::string& detail, const memory_budget& b);

// Records the budget that this process's estimate passed (one per process).
void set_memory_budget(const memory_budget& b);

// "out of memory while <what>", and what the budget said, if one was set: the allocation failed
// although the estimate was within the limit, so the machine had less to give than the limit.
struct out_of_memory : std::runtime_error {
    explicit out_of_memory(const std::string& what);
};

// Two sizes in the same unit, with as many digits as it takes to show that they differ.
std::pair<std::string, std::string> format_bytes_apart(std::uint64_t a, std::uint64_t b);

}  // namespace systolic::tb
