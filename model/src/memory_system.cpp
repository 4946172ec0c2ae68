#include "systolic/memory_system.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <limits>
#include <list>
#include <map>
#include <string>
#include <tuple>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/tile_plan.h"

namespace systolic {

std::uint64_t transfer_cycles(std::uint64_t bytes, double bandwidth) {
    if (!(bandwidth > 0)) return 0;
    // A double holds any count below 2^64 to within its rounding; at or past 2^64 the conversion
    // would be undefined (it gave 0 on x86), so the count saturates.
    const double cycles = std::ceil(double(bytes) / bandwidth);
    return cycles < 0x1p64 ? std::uint64_t(cycles) : ~std::uint64_t{0};
}

namespace {

std::uint64_t saturating_add(std::uint64_t a, std::uint64_t b) {
    return a > ~std::uint64_t{0} - b ? ~std::uint64_t{0} : a + b;
}

std::string bandwidth_text(double bytes_per_cycle) {
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", bytes_per_cycle);
    return text;
}

// An upper bound on the bytes a job moves over the DRAM channel, whatever the buffers: each tile
// reads its whole A and B blocks (rows x K and K x cols) and, in each chunk, writes its outputs and
// reads and writes its partial sums, with its per-column vectors. Scratchpads only take bytes away.
double dram_bytes_bound(const matmul_job& job, std::uint64_t rows, std::uint64_t cols, std::uint64_t osz,
                        std::uint64_t asz) {
    const array_shape a{rows, cols};
    const expected_counts c = count_job(job.shape, a, job.run.k_tile, job.run.dataflow);
    std::uint64_t tr = std::min<std::uint64_t>(rows, job.shape.m),
                  tc = std::min<std::uint64_t>(cols, job.shape.p);
    if (is_stationary(job.run.dataflow)) {
        const stationary_geometry g = stationary_of(job.shape, a, job.run.k_tile, job.run.dataflow);
        tr = g.stream;
        tc = std::min<std::uint64_t>(cols, g.extent);
    }
    const double per_tile =
        double(tr + tc) * double(job.shape.k) * double(osz) +
        double(c.k_chunks) * (3.0 * double(tr) * double(tc) * double(asz) + 16.0 * double(tc));
    return double(c.tiles) * per_tile;
}

}  // namespace

std::string check_memory_config(const memory_config& memory, const matmul_job& job) {
    if (!(memory.dram_bandwidth >= 0) || std::isinf(memory.dram_bandwidth))
        return "the DRAM bandwidth must be a finite number of bytes per cycle, 0 or more (0: unlimited)";
    if (memory.dram_bandwidth > 0 && memory.dram_bandwidth < min_dram_bandwidth)
        return "the DRAM bandwidth (" + bandwidth_text(memory.dram_bandwidth) +
               " bytes per cycle) must be at least " + bandwidth_text(min_dram_bandwidth) +
               " bytes per cycle, the least the model simulates (or 0: unlimited)";
    if (memory.buffers == buffer_mode::none) {
        if (memory.a_sram || memory.b_sram || memory.c_sram)
            return "scratchpad sizes need buffers double (with buffers none there are no scratchpads)";
        return {};
    }
    if (job.uses_partial_buffer())
        return "buffers double keeps the accumulators between K chunks: use k_policy preserve, not partials";
    return {};
}

namespace {

// Weight and input stationary: a fold is never cut (its preload needs all its weights and every
// stream row all its terms), so the largest tile's fold blocks must fit their scratchpads twice,
// and its T x C outputs the C scratchpad.
std::string check_stationary_memory(const memory_config& memory, const matmul_job& job, std::size_t rows,
                                    std::size_t cols, std::uint64_t operand_size,
                                    std::uint64_t accumulator_size) {
    const array_shape a{rows, cols};
    const stationary_geometry g = stationary_of(job.shape, a, job.run.k_tile, job.run.dataflow);
    const bool ws = job.run.dataflow == dataflow_kind::ws;
    const std::uint64_t tr = ws ? job.shape.m : std::min<std::uint64_t>(cols, job.shape.m);
    const std::uint64_t tc = ws ? std::min<std::uint64_t>(cols, job.shape.p) : job.shape.p;
    const std::uint64_t c_block = tr * tc * output_size(job.run.quant, accumulator_size);
    const std::string df = to_string(job.run.dataflow);
    if (memory.c_sram && memory.c_sram < c_block)
        return "the C scratchpad (" + std::to_string(memory.c_sram) + " bytes) is smaller than one " + df +
               " tile's outputs (" + std::to_string(c_block) + " bytes)";
    const std::uint64_t a_block = tr * g.fold_terms * operand_size,
                        b_block = g.fold_terms * tc * operand_size;
    if (memory.a_sram && memory.a_sram < 2 * a_block)
        return "the A scratchpad (" + std::to_string(memory.a_sram) + " bytes) cannot hold one " + df +
               " fold's A block twice (" + std::to_string(2 * a_block) + " bytes)";
    if (memory.b_sram && memory.b_sram < 2 * b_block)
        return "the B scratchpad (" + std::to_string(memory.b_sram) + " bytes) cannot hold one " + df +
               " fold's B block twice (" + std::to_string(2 * b_block) + " bytes)";
    return {};
}

}  // namespace

std::string check_memory(const memory_config& memory, const matmul_job& job, std::size_t rows,
                         std::size_t cols, std::uint64_t operand_size, std::uint64_t accumulator_size) {
    if (auto err = check_memory_config(memory, job); !err.empty()) return err;
    if (memory.dram_bandwidth > 0) {
        const double bytes = dram_bytes_bound(job, rows, cols, operand_size, accumulator_size);
        // Each access may also round its own bytes up by a cycle: at most one per byte.
        const double cycles = bytes / memory.dram_bandwidth + bytes;
        if (!(cycles <= double(max_dram_cycles))) {
            char text[160];
            std::snprintf(text, sizeof text, "%.3g cycles on the DRAM channel at %s bytes per cycle", cycles,
                          bandwidth_text(memory.dram_bandwidth).c_str());
            return "the job's DRAM traffic (up to " + bandwidth_text(bytes) + " bytes) could take up to " +
                   text +
                   ", more than the 2^48 the simulated time holds; raise the bandwidth or split the job";
        }
    }
    if (memory.buffers == buffer_mode::none) return {};
    if (is_stationary(job.run.dataflow))
        return check_stationary_memory(memory, job, rows, cols, operand_size, accumulator_size);
    // The largest tile: its blocks bound what a scratchpad must hold.
    const std::uint64_t tr = std::min<std::uint64_t>(rows, job.shape.m);
    const std::uint64_t tc = std::min<std::uint64_t>(cols, job.shape.p);
    const std::uint64_t c_block = tr * tc * output_size(job.run.quant, accumulator_size);
    if (memory.c_sram && memory.c_sram < c_block)
        return "the C scratchpad (" + std::to_string(memory.c_sram) +
               " bytes) is smaller than one tile's outputs (" + std::to_string(c_block) + " bytes)";
    if (memory.a_sram && memory.a_sram < 2 * tr * operand_size)
        return "the A scratchpad (" + std::to_string(memory.a_sram) +
               " bytes) cannot hold one K term of a tile's A rows twice (" +
               std::to_string(2 * tr * operand_size) + " bytes)";
    if (memory.b_sram && memory.b_sram < 2 * tc * operand_size)
        return "the B scratchpad (" + std::to_string(memory.b_sram) +
               " bytes) cannot hold one K term of a tile's B columns twice (" +
               std::to_string(2 * tc * operand_size) + " bytes)";
    return {};
}

namespace {

// A scratchpad that keeps whole blocks, least recently used first out. A block is named by where
// it starts and its K range; the previous unit's block stays (it is still being fed).
class block_cache {
public:
    using key = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;  // row or column, k0, kc

    explicit block_cache(std::uint64_t capacity) : m_capacity(capacity) {}

    // True when the block must be read from DRAM.
    bool use(const key& k, std::uint64_t bytes) {
        const bool held = touch(k);
        if (!held) {
            while (m_capacity && m_held + bytes > m_capacity && evict_one()) {
            }
            m_lru.push_back({k, bytes});
            m_where[k] = std::prev(m_lru.end());
            m_held += bytes;
        }
        m_pinned = k;
        m_any_pinned = true;
        return !held;
    }

private:
    struct entry {
        key k;
        std::uint64_t bytes;
    };
    bool touch(const key& k) {
        const auto it = m_where.find(k);
        if (it == m_where.end()) return false;
        m_lru.splice(m_lru.end(), m_lru, it->second);
        return true;
    }
    bool evict_one() {
        for (auto it = m_lru.begin(); it != m_lru.end(); ++it) {
            if (m_any_pinned && it->k == m_pinned) continue;
            m_held -= it->bytes;
            m_where.erase(it->k);
            m_lru.erase(it);
            return true;
        }
        return false;
    }

    std::uint64_t m_capacity;
    std::uint64_t m_held = 0;
    std::list<entry> m_lru;  // least recently used first
    std::map<key, std::list<entry>::iterator> m_where;
    key m_pinned{};
    bool m_any_pinned = false;
};

// The longest K segment whose A and B blocks fit their scratchpads twice for a tile of rows x cols
// (0: no limit).
std::uint64_t segment_limit(const memory_config& m, std::uint64_t rows, std::uint64_t cols,
                            std::uint64_t osz) {
    std::uint64_t limit = 0;
    auto bound = [&limit](std::uint64_t capacity, std::uint64_t per_term) {
        if (capacity == 0) return;
        const std::uint64_t fit = std::max<std::uint64_t>(1, capacity / (2 * per_term));
        limit = limit == 0 ? fit : std::min(limit, fit);
    };
    bound(m.a_sram, rows * osz);
    bound(m.b_sram, cols * osz);
    return limit;
}

}  // namespace

buffer_plan plan_buffers(const memory_config& memory, const tile_plan& plan, std::uint64_t operand_size) {
    buffer_plan out;
    std::uint64_t max_rows = 0, max_cols = 0;
    for (const tile& t : plan.tiles()) {
        max_rows = std::max(max_rows, t.rows);
        max_cols = std::max(max_cols, t.cols);
    }
    const std::uint64_t segment = segment_limit(memory, max_rows, max_cols, operand_size);
    block_cache a(memory.a_sram), b(memory.b_sram);
    const tile* streamed_last = nullptr;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        const plan_step s = plan[i];
        if (s.kind != step_kind::advance) continue;
        const tile& t = *s.where;
        const std::uint64_t own = segment_limit(memory, t.rows, t.cols, operand_size);
        const bool streamed = own != 0 && s.kc > own;
        const std::uint64_t len = streamed ? segment : s.kc;
        if (streamed && streamed_last != s.where) {
            ++out.streamed_tiles;
            out.stream_k_chunk = segment;
            streamed_last = s.where;
        }
        for (std::uint64_t off = 0; off < s.kc; off += len) {
            buffer_unit u;
            u.step = i;
            u.k0 = s.k0 + off;
            u.kc = std::min(len, s.kc - off);
            u.edge0 = off;
            u.first_of_step = off == 0;
            u.a_bytes = t.rows * u.kc * operand_size;
            u.b_bytes = u.kc * t.cols * operand_size;
            u.a_read = a.use({t.r0, u.k0, u.kc}, u.a_bytes);
            u.b_read = b.use({t.c0, u.k0, u.kc}, u.b_bytes);
            out.units.push_back(u);
        }
    }
    return out;
}

memory_timeline::memory_timeline(double bandwidth, std::uint64_t c_capacity, channel_timing timing)
    : m_bandwidth(bandwidth), m_c_capacity(c_capacity), m_timing(timing) {}

void memory_timeline::clear(std::uint64_t cycles) {
    play({call::clear, cycles});
}
void memory_timeline::advance(std::uint64_t edges) {
    play({call::advance, edges});
}
memory_timeline::request memory_timeline::fetch(stream what, std::uint64_t bytes, std::uint64_t latency) {
    play({call::fetch, 0, bytes, latency, what});
    return m_last;
}
std::uint64_t memory_timeline::wait_operands() {
    const std::uint64_t before = m_now;
    play({call::wait});
    return m_now - before;
}
std::uint64_t memory_timeline::wait_room(std::uint64_t bytes) {
    const std::uint64_t before = m_now;
    play({call::room, 0, bytes});
    return m_now - before;
}
memory_timeline::request memory_timeline::write(std::uint64_t bytes, std::uint64_t latency) {
    play({call::write, 0, bytes, latency, stream::c});
    return m_last;
}
std::uint64_t memory_timeline::finish() {
    const std::uint64_t before = m_now;
    play({call::finish});
    return m_now - before;
}

// What both timings share: the record, and the bytes issued while the array advances (the peak).
void memory_timeline::play(const call& c) {
    if (m_recording) m_calls.push_back(c);
    if (c.kind == call::advance) {
        if (c.n) m_peak = std::max(m_peak, double(m_window_bytes) / double(c.n));
        m_window_bytes = 0;
    }
    if ((c.kind == call::fetch || c.kind == call::write) && m_counting) m_window_bytes += c.bytes;
    if (m_timing == channel_timing::events)
        play_events(c);
    else
        play_stepped(c);
    if (c.kind == call::advance) m_started = true;
    if (c.kind == call::wait) m_counting = true;
}

// A request's own time on the channel once it has it: its latency, then its bytes.
std::uint64_t memory_timeline::service(std::uint64_t bytes, std::uint64_t latency) const {
    return saturating_add(latency, transfer_cycles(bytes, m_bandwidth));
}

void memory_timeline::play_events(const call& c) {
    switch (c.kind) {
        case call::clear:
        case call::advance:
            m_now += c.n;
            break;
        case call::fetch:
            m_last = serve(c.what, c.bytes, c.latency);
            break;
        case call::wait: {
            const std::uint64_t w = m_ready > m_now ? m_ready - m_now : 0;
            (m_started ? m_stall : m_prefetch) += w;
            m_now += w;
            break;
        }
        case call::room:
            m_stall += room_wait(c.bytes);
            break;
        case call::write:
            m_c_held += c.bytes;
            m_last = serve(stream::c, c.bytes, c.latency);
            m_writes.push_back(m_last);
            break;
        case call::finish:
            for (const request& r : m_writes)
                m_now = std::max(m_now, r.end);
            m_now = std::max(m_now, m_ready);
            break;
    }
}

// A request issued now that gets the channel at `begin`.
memory_timeline::request memory_timeline::issued(stream what, std::uint64_t bytes, std::uint64_t begin,
                                                 std::uint64_t latency) const {
    return {what, bytes, m_now, begin, saturating_add(begin, service(bytes, latency))};
}

memory_timeline::request memory_timeline::serve(stream what, std::uint64_t bytes, std::uint64_t latency) {
    const request r = issued(what, bytes, std::max(m_now, m_channel_free), latency);
    m_channel_free = r.end;
    if (what != stream::c) m_ready = std::max(m_ready, r.end);
    return r;
}

void memory_timeline::play_stepped(const call& c) {
    switch (c.kind) {
        case call::clear:
        case call::advance:
            for (std::uint64_t i = 0; i < c.n; ++i)
                step();
            break;
        case call::fetch:
        case call::write:
            m_last = enqueue(c.what, c.bytes, c.latency);
            break;
        case call::wait: {
            std::uint64_t w = 0;
            for (; operands_pending(); ++w)
                step();
            (m_started ? m_stall : m_prefetch) += w;
            break;
        }
        case call::room:
            while (m_c_capacity && m_c_held + c.bytes > m_c_capacity && m_c_held > 0) {
                step();
                ++m_stall;
            }
            break;
        case call::finish:
            while (m_head < m_queue.size())
                step();
            break;
    }
}

// Joins the queue. Its start is when the requests ahead of it have had the cycles they still
// need; a request that needs none, with none ahead, is done at once.
memory_timeline::request memory_timeline::enqueue(stream what, std::uint64_t bytes, std::uint64_t latency) {
    const request r = issued(what, bytes, m_now + m_backlog, latency);
    const std::uint64_t left = r.end - r.begin;
    if (what == stream::c)
        m_c_held += bytes;
    else
        ++m_queued_operands;
    m_queue.push_back({what, bytes, left});
    m_backlog += left;
    settle();
    return r;
}

// One cycle: the request at the head gets it.
void memory_timeline::step() {
    ++m_now;
    if (m_head == m_queue.size()) return;
    --m_queue[m_head].left;
    --m_backlog;
    settle();
}

// Requests at the head with nothing left are done: their operands are in, or their outputs have
// left the C scratchpad.
void memory_timeline::settle() {
    while (m_head < m_queue.size() && m_queue[m_head].left == 0) {
        const pending& p = m_queue[m_head++];
        if (p.what == stream::c)
            m_c_held -= p.bytes;
        else
            --m_queued_operands;
    }
    if (m_head == m_queue.size()) {
        m_queue.clear();
        m_head = 0;
    }
}

// Outputs already written leave the C scratchpad; while the new ones do not fit, the array waits
// for the oldest write still going.
std::uint64_t memory_timeline::room_wait(std::uint64_t bytes) {
    const std::uint64_t before = m_now;
    auto retire = [this] {
        while (m_writes_done < m_writes.size() && m_writes[m_writes_done].end <= m_now)
            m_c_held -= m_writes[m_writes_done++].bytes;
    };
    retire();
    while (m_c_capacity && m_c_held + bytes > m_c_capacity && m_writes_done < m_writes.size()) {
        m_now = std::max(m_now, m_writes[m_writes_done].end);
        retire();
    }
    return m_now - before;
}

// Replays use the event rules whichever timing ran the job: the search below tries bandwidths of a
// billionth of a byte per cycle, which stepping would take billions of cycles to play.
std::uint64_t memory_timeline::replay_stalls(double bandwidth) const {
    memory_timeline t(bandwidth, m_c_capacity, channel_timing::events);
    t.m_recording = false;
    for (const call& c : m_calls)
        t.play(c);
    return t.m_stall;
}

double memory_timeline::zero_stall_bandwidth() const {
    if (replay_stalls(0) > 0) return std::numeric_limits<double>::infinity();
    std::uint64_t largest = 0;
    for (const call& c : m_calls)
        largest = std::max(largest, c.bytes);
    if (largest == 0) return 0;
    // At `largest` bytes per cycle every transfer takes one cycle more than its latency; beyond
    // that, more bandwidth changes nothing.
    double hi = double(largest);
    if (replay_stalls(hi) > 0) return std::numeric_limits<double>::infinity();
    double lo = hi * 1e-9;  // below a byte per 10^9 cycles per largest transfer: call it none needed
    if (replay_stalls(lo) == 0) return 0;
    while (hi - lo > hi * 1e-3) {
        const double mid = (lo + hi) / 2;
        (replay_stalls(mid) > 0 ? lo : hi) = mid;
    }
    return hi;
}

}  // namespace systolic
