// The accelerator's memory system: scratchpads for A, B and C in front of one DRAM channel (the
// TLM target), and what a job's memory traffic and waiting cost. Plain C++: the configuration,
// the per-job report and the check of a configuration against a job; the rules are in
// docs/memory.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "systolic/names.h"

namespace systolic {

struct matmul_job;

// Whether the accelerator has scratchpads. none: each tile reads its operands and drains its
// outputs in sequence, as a job always did.
enum class buffer_mode { none, double_buffered };
inline constexpr enum_name<buffer_mode> buffer_mode_names[] = {
    {buffer_mode::none, "none", "no scratchpads: each tile reads its operands, phases in sequence"},
    {buffer_mode::double_buffered, "double",
     "scratchpads with reuse; the next tile's operands are prefetched while this one advances"},
};
static_assert(names_in_order(buffer_mode_names));
constexpr const char* to_string(buffer_mode mode) {
    return name_of(buffer_mode_names, mode);
}
constexpr std::optional<buffer_mode> parse_buffer_mode(std::string_view name) {
    return parse_name(buffer_mode_names, name);
}

struct memory_config {
    buffer_mode buffers = buffer_mode::none;
    std::uint64_t a_sram = 0, b_sram = 0, c_sram = 0;  // bytes; 0: large enough for any job (printed "inf")
    double dram_bandwidth = 0;  // bytes per clock cycle, shared by the streams; 0: unlimited ("inf")
};

struct stream_bytes {
    std::uint64_t dram = 0;   // between DRAM (the TLM target) and the scratchpad
    std::uint64_t array = 0;  // between the scratchpad and the array's edges
};

struct memory_report {
    std::uint64_t stall_cycles = 0;     // cycles the array waited for operands or for room in the C buffer
    std::uint64_t prefetch_cycles = 0;  // the first load, before the array's first edge (SCALE-Sim v3's prefetch)
    std::uint64_t total_cycles = 0;     // the whole job, first transfer to last drain
    stream_bytes a, b, c;               // c: outputs (and partial sums) written
    double average_bandwidth = 0;       // DRAM bytes / total_cycles
    double peak_bandwidth = 0;          // the busiest tile's DRAM bytes over its advance window (docs/memory.md)
    double zero_stall_bandwidth = 0;    // the least dram_bandwidth with 0 stall cycles (same buffers)
    std::uint64_t streamed_tiles = 0;   // tiles whose operands did not fit: streamed in K chunks
    std::uint64_t stream_k_chunk = 0;   // the chunk length used for them (0: none streamed)
};

// The parts of check_memory that need no array: a negative or not-a-number bandwidth, SRAM sizes
// given with buffers none, buffers double with k_policy partials. Empty when it holds. validate_job
// calls it.
std::string check_memory_config(const memory_config& memory, const matmul_job& job);

// Empty when the config suits the job on an R x C array, else one line: check_memory_config's
// rules, and a C buffer smaller than one tile's outputs, or an A or B buffer that cannot hold one
// K term of a tile's block twice. The controller calls it when a job starts.
std::string check_memory(const memory_config& memory, const matmul_job& job, std::size_t rows,
                         std::size_t cols, std::uint64_t operand_size, std::uint64_t accumulator_size);

}  // namespace systolic
