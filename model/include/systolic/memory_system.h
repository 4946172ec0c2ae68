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
#include <vector>

#include "systolic/names.h"

namespace systolic {

struct matmul_job;
class tile_plan;

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

// The DRAM bandwidth's range, the same in every executable (check_memory_config holds it; the
// command lines refuse a value below it as they parse it). 0 is unlimited; otherwise at least
// min_dram_bandwidth bytes per cycle: a byte per thousand cycles, 1 MB/s at the 1 GHz clock, a
// thousandth of a slow DRAM channel. Below it a job models nothing but its wait, and the wait
// breaks things: the cycle engine steps the channel once per cycle (1e-9 took hours), a
// transfer's cycle count leaves 64 bits (1e-19 wrapped to 0), and the simulated time passes
// SystemC's 2^64 ps, 213 days at 1 ns a cycle (1e-15 ended in its E544).
inline constexpr double min_dram_bandwidth = 1e-3;
// What a job's DRAM traffic may take at its bandwidth, at most: 2^48 cycles, 3.3 days at 1 ns.
// check_memory bounds the traffic from above (every tile reading its whole blocks and writing its
// outputs and partial sums in every chunk), so that the job's simulated time, and the watchdog the
// verification harness sets at ten times a bound of it, stay inside SystemC's 2^64 ps at the 1 ns
// clock.
inline constexpr std::uint64_t max_dram_cycles = std::uint64_t{1} << 48;

// ceil(bytes / bandwidth): the cycles a transfer of `bytes` takes on the channel; 0 for bandwidth
// 0 (unlimited). Saturates at 2^64 - 1 instead of wrapping; the memory timeline and the
// DMA port both count with it.
std::uint64_t transfer_cycles(std::uint64_t bytes, double bandwidth);

struct stream_bytes {
    std::uint64_t dram = 0;   // between DRAM (the TLM target) and the scratchpad
    std::uint64_t array = 0;  // between the scratchpad and the array's edges
};

struct memory_report {
    std::uint64_t stall_cycles = 0;  // cycles the array waited for operands or for room in the C buffer
    std::uint64_t prefetch_cycles =
        0;  // the first load, before the array's first edge (SCALE-Sim v3's prefetch)
    std::uint64_t total_cycles = 0;  // the whole job, first transfer to last drain
    stream_bytes a, b, c;            // c: outputs (and partial sums) written
    double average_bandwidth = 0;    // DRAM bytes / total_cycles
    double peak_bandwidth = 0;       // the busiest tile's DRAM bytes over its advance window (docs/memory.md)
    double zero_stall_bandwidth = 0;   // the least dram_bandwidth with 0 stall cycles (same buffers)
    std::uint64_t streamed_tiles = 0;  // tiles whose operands did not fit: streamed in K chunks
    std::uint64_t stream_k_chunk = 0;  // the chunk length used for them (0: none streamed)
};

// The parts of check_memory that need no array: a negative or not-a-number bandwidth, or one
// below min_dram_bandwidth, SRAM sizes given with buffers none, buffers double with k_policy
// partials. Empty when it holds. validate_job calls it.
std::string check_memory_config(const memory_config& memory, const matmul_job& job);

// Empty when the config suits the job on an R x C array, else one line: check_memory_config's
// rules, a job whose DRAM traffic at its bandwidth could take more than max_dram_cycles, and a C
// buffer smaller than one tile's outputs, or an A or B buffer that cannot hold one K term of a
// tile's block twice. The controller calls it when a job starts.
std::string check_memory(const memory_config& memory, const matmul_job& job, std::size_t rows,
                         std::size_t cols, std::uint64_t operand_size, std::uint64_t accumulator_size);

// Buffers double: the array's work as the scratchpads see it, decided before the job runs. A unit
// is one K chunk of a tile (the plan's advance step), or one K segment of it when the tile's
// blocks do not fit its scratchpads twice (a streamed tile). Which blocks each unit reads from
// DRAM depends only on the units' order: the A and B scratchpads keep whole blocks, the least
// recently used leaving first, never the previous unit's (it is still being fed while this one
// is fetched).
struct buffer_unit {
    std::size_t step = 0;  // the plan's advance step (its index in the plan)
    std::uint64_t k0 = 0;  // the terms k0 .. k0 + kc - 1 of the tile's rows and columns
    std::uint64_t kc = 0;
    std::uint64_t edge0 = 0;  // the advance edge (within the step) where this unit's terms begin
    bool first_of_step = false;
    std::uint64_t a_bytes = 0, b_bytes = 0;  // the unit's blocks
    bool a_read = false, b_read = false;     // not in the scratchpad: read from DRAM
};

struct buffer_plan {
    std::vector<buffer_unit> units;  // in the order the array consumes them
    std::uint64_t streamed_tiles = 0;
    std::uint64_t stream_k_chunk = 0;  // the segment length of streamed tiles; 0: none streamed
};

// The units of a plan under a memory config (buffers double); operand_size: bytes per A or B element.
buffer_plan plan_buffers(const memory_config& memory, const tile_plan& plan, std::uint64_t operand_size);

// The DRAM channel and the array's clock under buffers double, in cycles. The controller calls it
// as the job runs (in the same order for both engines); the calls are recorded, so that the same
// job can be replayed at another bandwidth (replay) to find the least bandwidth without stalls.
// Requests are served one at a time in the order issued; each takes its latency +
// ceil(bytes / bandwidth) cycles. Two ways to keep that time, which must agree (docs/memory.md):
//  - events: the per-tile event rules, a request's start and end worked out when it is issued and
//    a wait jumping to the time it ends (the functional engine: no per-cycle work);
//  - stepped: the channel is stepped one cycle at a time, the request at its head counting down,
//    and a wait steps it until the blocks are in (the cycle engine).
enum class channel_timing { events, stepped };

class memory_timeline {
public:
    enum class stream { a, b, c };
    struct request {
        stream what = stream::a;
        std::uint64_t bytes = 0;
        std::uint64_t issue = 0, begin = 0, end = 0;  // cycles from the job's start
    };

    // bandwidth: bytes per cycle, 0 unlimited; c_capacity: the C scratchpad's bytes, 0 unlimited.
    memory_timeline(double bandwidth = 0, std::uint64_t c_capacity = 0,
                    channel_timing timing = channel_timing::events);

    std::uint64_t now() const { return m_now; }
    // The array works: a clear (1 cycle) or advance edges. While it advances, the bytes issued
    // since its last advance are counted for the peak bandwidth.
    void clear(std::uint64_t cycles);
    void advance(std::uint64_t edges);
    // A block for the unit after the one that starts next (or, before the first unit, the first
    // unit's), issued now; returns the request as the channel serves it.
    request fetch(stream what, std::uint64_t bytes, std::uint64_t latency);
    // The array waits for the blocks fetched so far; returns the cycles it waited (before the first
    // advance: the prefetch, else a stall).
    std::uint64_t wait_operands();
    // A tile's outputs enter the C scratchpad once there is room: the array waits for the oldest
    // writes to finish; returns the cycles it waited (a stall).
    std::uint64_t wait_room(std::uint64_t bytes);
    // ... and leave for DRAM: the write request, issued now.
    request write(std::uint64_t bytes, std::uint64_t latency);
    // The job ends when the last write is done; returns the cycles after the array's last work.
    std::uint64_t finish();

    std::uint64_t stall_cycles() const { return m_stall; }
    std::uint64_t prefetch_cycles() const { return m_prefetch; }
    double peak_bandwidth() const { return m_peak; }
    // The same calls at another bandwidth: the stall cycles they give (by the event rules).
    std::uint64_t replay_stalls(double bandwidth) const;
    // The least bandwidth (bytes per cycle) with no stall cycles, to 0.1 %: 0 when nothing stalls
    // at any bandwidth, infinity when even unlimited bandwidth stalls (the latencies alone do).
    double zero_stall_bandwidth() const;

private:
    struct call {
        enum kind_t { clear, advance, fetch, wait, room, write, finish } kind;
        std::uint64_t n = 0, bytes = 0, latency = 0;
        stream what = stream::a;
    };
    void play(const call& c);
    std::uint64_t service(std::uint64_t bytes, std::uint64_t latency) const;
    request issued(stream what, std::uint64_t bytes, std::uint64_t begin, std::uint64_t latency) const;
    // The event rules.
    void play_events(const call& c);
    request serve(stream what, std::uint64_t bytes, std::uint64_t latency);
    std::uint64_t room_wait(std::uint64_t bytes);
    // Stepping.
    void play_stepped(const call& c);
    request enqueue(stream what, std::uint64_t bytes, std::uint64_t latency);
    void step();
    void settle();
    std::uint64_t operands_pending() const { return m_queued_operands; }

    double m_bandwidth;
    std::uint64_t m_c_capacity;
    channel_timing m_timing;
    // Stepped: the requests not yet done, oldest (being served) first, with the cycles each still
    // needs; their sum; the A and B requests among them.
    struct pending {
        stream what;
        std::uint64_t bytes, left;
    };
    std::vector<pending> m_queue;
    std::size_t m_head = 0;
    std::uint64_t m_backlog = 0, m_queued_operands = 0;
    std::uint64_t m_now = 0, m_channel_free = 0, m_ready = 0, m_stall = 0, m_prefetch = 0;
    std::uint64_t m_c_held = 0;
    std::vector<request> m_writes;  // C writes not yet known done, oldest first
    std::size_t m_writes_done = 0;
    std::uint64_t m_window_bytes = 0;
    bool m_started = false;   // the array has advanced: a wait is a stall, not the prefetch
    bool m_counting = false;  // the first operands are in: bytes issued count for the peak
    double m_peak = 0;
    request m_last;  // what the last fetch or drain issued
    std::vector<call> m_calls;
    bool m_recording = true;
};

}  // namespace systolic
