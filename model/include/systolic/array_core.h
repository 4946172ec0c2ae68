// The R x C grid of processing elements (R rows of C PEs) as plain C++ state, stepped in runs of
// advance edges. Hot state is structure-of-arrays in row-major order (row stride C), and tokens
// move without being copied. Each of A and B is an R x C window into a buffer twice that size:
//  - A moves one PE east per edge. In row-major order that is the whole window sliding one slot
//    towards the buffer's start: PE(i, j) takes what PE(i, j - 1) held, and the token that leaves
//    PE(i - 1, C - 1) lands in PE(i, 0), where the west input of row i overwrites it;
//  - B moves one PE south per edge: the window slides C slots (one row), and the north inputs
//    fill the new row 0.
// When a window reaches its buffer's start, it is copied back to the end (every R*C edges for A,
// every R for B). So an edge is R + C token writes and one branch-free multiply-accumulate pass
// over R*C contiguous PEs - no per-row loop, which at 16 x 16 costs as much as the MACs. The
// SystemC shell (systolic_array, pe) only names and exposes this state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "systolic/aligned_vector.h"
#include "systolic/bit_count.h"
#include "systolic/feeder.h"
#include "systolic/format_instances.h"
#include "systolic/number_format.h"
#include "systolic/stepped_grid.h"
#include "systolic/token.h"

namespace systolic {

template <class Format>
class array_core : public stepped_grid<Format> {
    using grid = stepped_grid<Format>;

public:
    using format = Format;
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    using token_type = token<operand_type>;

    // The inputs of a run of edges as skewed streams (the feeder's form). Row i of A enters at
    // PE(i, 0) from edge row_delay[i] on: on edge e it carries term k = e - row_delay[i], which is
    // a[i * a_stride + k], while k < kc. Column j of B enters at PE(0, j) from edge col_delay[j] on,
    // term k being b[k * b_stride + j]. Outside its stream an input is a bubble; a stream whose
    // valid flag is 0 carries invalid tokens.
    struct streams {
        const operand_type* a;
        std::size_t a_stride;
        const operand_type* b;
        std::size_t b_stride;
        std::uint64_t kc;
        const std::uint64_t* row_delay;
        const std::uint64_t* col_delay;
        const std::uint8_t* row_valid;
        const std::uint8_t* col_valid;
    };

    array_core(std::size_t rows, std::size_t cols)
        : grid(rows, cols, "array_core"),
          m_a(2 * rows * cols),
          m_a_valid(2 * rows * cols),
          m_b(2 * rows * cols),
          m_b_valid(2 * rows * cols),
          m_acc(rows * cols) {
        clear();
    }
    // The square N x N array.
    explicit array_core(std::size_t n) : array_core(n, n) {}

    // What one array_core of rows x cols allocates besides itself, from its buffers' element sizes
    // (the memory estimate counts with it; each vector is one heap block).
    static std::uint64_t heap_bytes(std::size_t rows, std::size_t cols) {
        const std::uint64_t pes = std::uint64_t(rows) * cols, lanes = rows + cols;
        return grid::heap_bytes(rows, cols) + 2 * heap_block_bytes(2 * pes * sizeof(operand_type)) +
               2 * heap_block_bytes(2 * pes) + heap_block_bytes(pes * sizeof(accumulator_type)) +
               heap_block_bytes(lanes * sizeof(lane)) + heap_block_bytes(lanes * sizeof(std::size_t)) +
               heap_block_bytes(lanes * sizeof(operand_type)) + heap_block_bytes(lanes);
    }

    // Clear phase: every token becomes a bubble, every accumulator and counter zero.
    void clear() {
        std::fill(m_a.begin(), m_a.end(), operand_type{});
        std::fill(m_a_valid.begin(), m_a_valid.end(), 0);
        std::fill(m_b.begin(), m_b.end(), operand_type{});
        std::fill(m_b_valid.begin(), m_b_valid.end(), 0);
        grid::clear_consumed();
        clear_accumulators();
        m_a_head = m_b_head = m_rows * m_cols;  // both windows at their buffers' end
        m_edges = 0;
        m_a_max = m_b_max = 0;
        m_safe_edges = ~std::uint64_t{0};
    }

    // Zeroes the accumulators (and overflow counts) only: tokens and term counters stay.
    void clear_accumulators() {
        std::fill(m_acc.begin(), m_acc.end(), accumulator_type{});
        grid::clear_overflows();
        m_partials_in = false;
    }

    // PE(i, j) takes a partial sum handed on by another array (a fabric's C link): its sum goes on
    // from v. The overflow bound below assumes sums that started from zero at the last clear, so from
    // here on every edge counts overflows.
    void load_accumulator(std::size_t i, std::size_t j, accumulator_type v) {
        m_acc[i * m_cols + j] = v;
        m_partials_in = true;
    }

    // One advance edge: west[i] (R of them) enters PE(i, 0) and north[j] (C of them) enters
    // PE(0, j), each as a value and a valid bit; every other token moves one PE east (A) or south
    // (B); then every PE whose two new tokens are both valid multiplies, accumulates and counts one
    // consumed term (and one overflow, if the sum left the accumulator's range). This is the form of
    // a fabric, whose inputs come from a neighbour's link as often as from a feeder. Not a one-edge
    // run of streams: planning the lanes and scanning R + C one-term streams costs as much as the
    // MACs of a small array. Here the magnitudes are two flat scans (of the values, valid or not: an
    // upper bound) and the inputs are written with a select, as the edge's own kernel does.
    void advance(const operand_type* west, const std::uint8_t* west_ok, const operand_type* north,
                 const std::uint8_t* north_ok);

    // Edges first .. first + count - 1 of the streams, each as the single edge above. Without
    // `after`, the run is cut only where a stream starts or ends, a window must be copied back or
    // the overflow count must start, so the kernel runs many edges per call. With it (an observer's
    // hook), after->after_edge(e) follows each edge e: the kernel then runs one edge per call, but
    // the inputs are still planned once per phase and their magnitudes once for all the edges.
    void advance(const streams& in, std::uint64_t first, std::uint64_t count, edge_callback* after = nullptr);

    // Advance edges since the last clear.

    token_type a(std::size_t i, std::size_t j) const {
        const std::size_t k = m_a_head + i * m_cols + j;
        return {m_a[k], m_a_valid[k] != 0};
    }
    token_type b(std::size_t i, std::size_t j) const {
        const std::size_t k = m_b_head + i * m_cols + j;
        return {m_b[k], m_b_valid[k] != 0};
    }
    // The tokens that leave the array on the next edge: the A tokens of the last column (one per row,
    // copied out) and the B tokens of the last row (contiguous, in place).
    void east_column(operand_type* value, std::uint8_t* valid) const {
        const std::size_t k = m_a_head + m_cols - 1;
        for (std::size_t i = 0; i < m_rows; ++i) {
            value[i] = m_a[k + i * m_cols];
            valid[i] = m_a_valid[k + i * m_cols];
        }
    }
    const operand_type* south_row() const { return &m_b[m_b_head + (m_rows - 1) * m_cols]; }
    const std::uint8_t* south_row_valid() const { return &m_b_valid[m_b_head + (m_rows - 1) * m_cols]; }
    accumulator_type accumulator(std::size_t i, std::size_t j) const { return m_acc[i * m_cols + j]; }
    // Row i's C accumulators (the rows are contiguous: row i + 1 follows row i).
    const accumulator_type* accumulator_row(std::size_t i) const { return &m_acc[i * m_cols]; }

private:
    using grid::m_cols;
    using grid::m_consumed;
    using grid::m_edges;
    using grid::m_overflow;
    using grid::m_overflows;
    using grid::m_rows;
    using grid::m_tally;
    using grid::max_magnitude;

    // no overflow possible (nothing to count; both modes agree), or count under wrap or saturate.
    enum class count_mode { none, wrap, saturate };

    // Before an edge: a window that reached its buffer's start is copied back to the end.
    void make_room() {
        const std::size_t pes = m_rows * m_cols;
        if (m_a_head == 0) {
            std::memcpy(&m_a[pes], &m_a[0], pes * sizeof(operand_type));
            std::memcpy(&m_a_valid[pes], &m_a_valid[0], pes);
            m_a_head = pes;
        }
        if (m_b_head == 0) {
            std::memcpy(&m_b[pes], &m_b[0], pes * sizeof(operand_type));
            std::memcpy(&m_b_valid[pes], &m_b_valid[0], pes);
            m_b_head = pes;
        }
    }

    // Where one edge's inputs go, for a phase of a run during which no stream starts or ends (so
    // the kernel tests nothing per input). Slots are offsets from the window's PE(0, 0) slot. A
    // live stream (in range and valid) writes its term and a set valid flag each edge: the term of
    // edge e is a[src + e] for A and b[src + e * b_stride] for B (src wraps below zero). Every
    // other slot takes a bubble: zero value (invalid tokens too, so that their product is zero),
    // flag clear.
    struct lane {
        std::size_t slot;
        std::uint64_t src;
    };
    struct feed {
        const operand_type* a;
        const operand_type* b;
        std::size_t b_stride;
        const lane* a_live;
        const lane* b_live;
        const std::size_t* a_idle;
        const std::size_t* b_idle;
        std::size_t a_live_n, b_live_n, a_idle_n, b_idle_n;
    };

    // Fills m_feed for edge e of the streams; returns the edge (at most end) at which some stream
    // starts or ends, where it must be planned again.
    std::uint64_t plan_feed(const streams& in, std::uint64_t e, std::uint64_t end) {
        // (stream_live lowers end as it goes)
        const std::size_t rows = m_rows, cols = m_cols;
        m_lanes.resize(rows + cols);
        m_idle.resize(rows + cols);
        lane* a_live = &m_lanes[0];
        lane* b_live = &m_lanes[rows];
        std::size_t* a_idle = &m_idle[0];
        std::size_t* b_idle = &m_idle[rows];
        std::size_t a_live_n = 0, b_live_n = 0, a_idle_n = 0, b_idle_n = 0;
        for (std::size_t i = 0; i < rows; ++i) {
            if (stream_live(in.row_delay[i], in.kc, e, end) && in.row_valid[i])
                a_live[a_live_n++] = {i * cols, i * in.a_stride - in.row_delay[i]};
            else
                a_idle[a_idle_n++] = i * cols;
        }
        for (std::size_t j = 0; j < cols; ++j) {
            if (stream_live(in.col_delay[j], in.kc, e, end) && in.col_valid[j])
                b_live[b_live_n++] = {j, j - in.col_delay[j] * in.b_stride};
            else
                b_idle[b_idle_n++] = j;
        }
        m_feed = {in.a,   in.b,     in.b_stride, a_live,   b_live,  a_idle,
                  b_idle, a_live_n, b_live_n,    a_idle_n, b_idle_n};
        return end;
    }

    // Whether a stream of kc terms that starts on edge `delay` is in range on edge e; lowers end
    // to the next edge at which that changes.
    static bool stream_live(std::uint64_t delay, std::uint64_t kc, std::uint64_t e, std::uint64_t& end) {
        const std::uint64_t k = skewed_term(e, delay);  // huge before the stream starts
        if (k < kc) {
            end = std::min(end, e + (kc - k));
            return true;
        }
        if (e < delay) end = std::min(end, delay);
        return false;
    }

    // Integer formats: raises the largest operand magnitudes since the last clear to cover the
    // run's inputs, and with them the edges after the clear during which no accumulator can leave
    // its range. Each edge adds at most one product of at most m_a_max * m_b_max to an
    // accumulator, so for the first max / (m_a_max * m_b_max) edges none can, and the overflow
    // count (always zero then) is skipped. The B side is the whole block of terms that any valid
    // column takes in the run: a bound from above only starts the count sooner, and counting when
    // nothing overflows changes nothing. The division runs once per new maximum.
    void note_magnitudes(const streams& in, std::uint64_t first, std::uint64_t count);

    // Raises the magnitudes to a_max and b_max (at least the old ones) and with them the bound;
    // the division runs once per new maximum.
    void raise_bound(std::uint64_t a_max, std::uint64_t b_max) {
        if (a_max != m_a_max || b_max != m_b_max) {
            m_a_max = a_max;
            m_b_max = b_max;
            const std::uint64_t product = a_max * b_max;  // at most 2^62
            m_safe_edges = product == 0
                               ? ~std::uint64_t{0}
                               : std::uint64_t(std::numeric_limits<accumulator_type>::max()) / product;
        }
    }

    // The terms [lo, hi) of a stream of kc terms that starts on edge `delay` which enter during
    // edges first .. first + count - 1 (lo >= hi when none do).
    static std::pair<std::uint64_t, std::uint64_t> terms_in(std::uint64_t delay, std::uint64_t kc,
                                                            std::uint64_t first, std::uint64_t count) {
        const std::uint64_t end = first + count;
        if (delay >= end) return {0, 0};
        return {first > delay ? first - delay : 0, std::min(kc, end - delay)};
    }

    // `count` edges from edge `first` of one phase of the inputs, the windows at a_head and b_head
    // with room for them all: each edge slides the windows, writes the inputs and runs the MACs.
    // One call (and so one clone dispatch) per run; the loops inline into it.
    SYSTOLIC_VECTOR_CLONES static void run_kernel(count_mode mode, std::size_t rows, std::size_t cols,
                                                  const feed& in, std::uint64_t first, std::uint64_t count,
                                                  std::size_t a_head, std::size_t b_head, operand_type* a,
                                                  std::uint8_t* a_ok, operand_type* b, std::uint8_t* b_ok,
                                                  accumulator_type* acc, std::uint32_t* consumed,
                                                  std::uint32_t* overflows) {
        switch (mode) {  // chosen once per run, not per edge
            case count_mode::none:
                run_edges<overflow_mode::wrap, false>(rows, cols, in, first, count, a_head, b_head, a, a_ok,
                                                      b, b_ok, acc, consumed, overflows);
                break;
            case count_mode::wrap:
                run_edges<overflow_mode::wrap, true>(rows, cols, in, first, count, a_head, b_head, a, a_ok, b,
                                                     b_ok, acc, consumed, overflows);
                break;
            case count_mode::saturate:
                run_edges<overflow_mode::saturate, true>(rows, cols, in, first, count, a_head, b_head, a,
                                                         a_ok, b, b_ok, acc, consumed, overflows);
                break;
        }
    }

    // run_kernel for a job that counts its actions: the same edges, adding to `tally` (stepped_grid.h)
    // what they do, compiled for the machine's best counting path (bit_count.h).
    static void run_kernel_tally(count_mode mode, std::size_t rows, std::size_t cols, const feed& in,
                                 std::uint64_t first, std::uint64_t count, std::size_t a_head,
                                 std::size_t b_head, operand_type* a, std::uint8_t* a_ok, operand_type* b,
                                 std::uint8_t* b_ok, accumulator_type* acc, std::uint32_t* consumed,
                                 std::uint32_t* overflows, edge_tally& tally) {
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            constexpr bool Native = decltype(native)::value;
            switch (mode) {
                case count_mode::none:
                    run_edges<overflow_mode::wrap, false, true, Native>(rows, cols, in, first, count, a_head,
                                                                        b_head, a, a_ok, b, b_ok, acc,
                                                                        consumed, overflows, &tally);
                    break;
                case count_mode::wrap:
                    run_edges<overflow_mode::wrap, true, true, Native>(rows, cols, in, first, count, a_head,
                                                                       b_head, a, a_ok, b, b_ok, acc,
                                                                       consumed, overflows, &tally);
                    break;
                case count_mode::saturate:
                    run_edges<overflow_mode::saturate, true, true, Native>(rows, cols, in, first, count,
                                                                           a_head, b_head, a, a_ok, b, b_ok,
                                                                           acc, consumed, overflows, &tally);
                    break;
            }
        });
    }

    template <overflow_mode Mode, bool Count, bool Tally = false, bool Native = false>
    static inline __attribute__((always_inline)) void run_edges(
        std::size_t rows, std::size_t cols, const feed& in, std::uint64_t first, std::uint64_t count,
        std::size_t a_head, std::size_t b_head, operand_type* a, std::uint8_t* a_ok, operand_type* b,
        std::uint8_t* b_ok, accumulator_type* acc, std::uint32_t* consumed, std::uint32_t* overflows,
        edge_tally* tally = nullptr) {
        // A local copy: the flag stores (uint8_t) could alias the plan, which would reload it.
        const feed f = in;
        span_tally counted;
        west_slots<operand_type, (Tally ? block_pes : 1)> slots;
        // B's inputs for the whole run first, into the free rows above the window: then no MAC
        // loads a slot that was just stored with a narrower store, whose forward would be blocked
        // until every store before it had reached the cache. (A's inputs cannot go early: each
        // overwrites a token that the edge before still uses.)
        for (std::uint64_t t = 0; t < count; ++t) {
            const std::size_t row = b_head - (t + 1) * cols;
            const std::uint64_t b_row = (first + t) * f.b_stride;
            for (std::size_t l = 0; l < f.b_live_n; ++l) {
                b[row + f.b_live[l].slot] = f.b[f.b_live[l].src + b_row];
                b_ok[row + f.b_live[l].slot] = 1;
            }
            for (std::size_t l = 0; l < f.b_idle_n; ++l) {
                b[row + f.b_idle[l]] = operand_type{};
                b_ok[row + f.b_idle[l]] = 0;
            }
        }
        // Edge t of the run (t = 0 .. count - 1) for rows r0 .. r1 - 1 only: their west inputs
        // (the A lanes [la, la_end) and idle slots [li, li_end)), then their MACs. Inlined, or it
        // would be compiled for the baseline target, not the clone's (2.5x slower at 16 x 16).
        auto edge_rows = [&](std::uint64_t t, std::size_t r0, std::size_t r1, std::size_t la,
                             std::size_t la_end, std::size_t li, std::size_t li_end)
            __attribute__((always_inline)) {
            const std::size_t ah = a_head - (t + 1), bh = b_head - (t + 1) * cols, p0 = r0 * cols;
            if constexpr (Tally) slots.save(a, ah, cols, r0, r1);
            for (std::size_t l = la; l < la_end; ++l) {
                a[ah + f.a_live[l].slot] = f.a[f.a_live[l].src + first + t];
                a_ok[ah + f.a_live[l].slot] = 1;
            }
            for (std::size_t l = li; l < li_end; ++l) {
                a[ah + f.a_idle[l]] = operand_type{};
                a_ok[ah + f.a_idle[l]] = 0;
            }
            if constexpr (Tally) slots.fix(a, ah, cols, r0, r1, counted);
            mac_span<Mode, Count, Tally, Native>((r1 - r0) * cols, acc + p0, consumed + p0, overflows + p0,
                                                 a + ah + p0, a_ok + ah + p0, b + bh + p0, b_ok + bh + p0,
                                                 &counted);
            if constexpr (Tally) {
                // Valid MACs, and of them those of two nonzero operands (a bubble's value is zero); each
                // token against the one it held an edge before: a slot up for A, a row up for B.
                const std::size_t n = (r1 - r0) * cols;
                const token_counts c = count_tokens<Native>(a + ah + p0, 1, b + bh + p0, cols, n);
                counted.valid += both_set<Native>(a_ok + ah + p0, b_ok + bh + p0, n);
                counted.random += c.nonzero_pairs;
                counted.a_toggles += c.x_toggles;
                counted.b_toggles += c.y_toggles;
            }
        };

        const std::size_t block_rows = std::max<std::size_t>(1, block_pes / cols);
        if (block_rows >= rows) {  // the whole array fits in the L1 cache: one edge after the other
            for (std::uint64_t t = 0; t < count; ++t)
                edge_rows(t, 0, rows, 0, f.a_live_n, 0, f.a_idle_n);
        } else {
            run_blocks(rows, cols, count, block_rows, f, edge_rows);
        }
        if constexpr (Tally) counted.add_to(*tally, count);
    }

    // The edges of run_edges for an array bigger than a block.
    template <class EdgeRows>
    static inline __attribute__((always_inline)) void run_blocks(std::size_t rows, std::size_t cols,
                                                                 std::uint64_t count, std::size_t block_rows,
                                                                 const feed& f, EdgeRows& edge_rows) {
        // A bigger array would stream its accumulators, counters and tokens from L2 every edge.
        // Instead, a group of edges runs block of rows by block of rows, so that a block stays in
        // L1 for the whole group (at 64 x 64 and 128 x 128 this is a third faster). Rows only ever
        // read their own row's tokens, and a west input overwrites the token that the row above
        // held on the edge before, which that row, being in this block or an earlier one, has
        // already used: so every PE still sees exactly its own tokens, edge by edge.
        for (std::uint64_t g = 0; g < count; g += group_edges) {
            const std::uint64_t g_end = std::min<std::uint64_t>(count, g + group_edges);
            std::size_t la = 0, li = 0;  // the lists are in row order: each block takes the next lanes
            for (std::size_t r0 = 0; r0 < rows; r0 += block_rows) {
                const std::size_t r1 = std::min(rows, r0 + block_rows);
                std::size_t la_end = la, li_end = li;
                while (la_end < f.a_live_n && f.a_live[la_end].slot < r1 * cols)
                    ++la_end;
                while (li_end < f.a_idle_n && f.a_idle[li_end] < r1 * cols)
                    ++li_end;
                for (std::uint64_t t = g; t < g_end; ++t)
                    edge_rows(t, r0, r1, la, la_end, li, li_end);
                la = la_end;
                li = li_end;
            }
        }
    }

    // One edge from inputs given as values and valid bits (advance's per-edge form), the windows
    // at a_head and b_head with room for it: the inputs go into the slots the windows slide onto
    // (bubbles carry a zero value), then one MAC pass over every PE.
    SYSTOLIC_VECTOR_CLONES static void edge_kernel(count_mode mode, std::size_t rows, std::size_t cols,
                                                   std::size_t a_head, std::size_t b_head,
                                                   const operand_type* west, const std::uint8_t* west_ok,
                                                   const operand_type* north, const std::uint8_t* north_ok,
                                                   operand_type* a, std::uint8_t* a_ok, operand_type* b,
                                                   std::uint8_t* b_ok, accumulator_type* acc,
                                                   std::uint32_t* consumed, std::uint32_t* overflows) {
        one_edge<false, false>(mode, rows, cols, a_head, b_head, west, west_ok, north, north_ok, a, a_ok, b,
                               b_ok, acc, consumed, overflows);
    }

    // edge_kernel for a job that counts its actions: the same edge, adding to `tally` what it does,
    // on the machine's best counting path (bit_count.h).
    static void edge_kernel_tally(count_mode mode, std::size_t rows, std::size_t cols, std::size_t a_head,
                                  std::size_t b_head, const operand_type* west, const std::uint8_t* west_ok,
                                  const operand_type* north, const std::uint8_t* north_ok, operand_type* a,
                                  std::uint8_t* a_ok, operand_type* b, std::uint8_t* b_ok,
                                  accumulator_type* acc, std::uint32_t* consumed, std::uint32_t* overflows,
                                  edge_tally& tally) {
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            constexpr bool Native = decltype(native)::value;
            one_edge<true, Native>(mode, rows, cols, a_head, b_head, west, west_ok, north, north_ok, a, a_ok,
                                   b, b_ok, acc, consumed, overflows, &tally);
        });
    }

    template <bool Tally, bool Native>
    static inline __attribute__((always_inline)) void one_edge(
        count_mode mode, std::size_t rows, std::size_t cols, std::size_t a_head, std::size_t b_head,
        const operand_type* west, const std::uint8_t* west_ok, const operand_type* north,
        const std::uint8_t* north_ok, operand_type* a, std::uint8_t* a_ok, operand_type* b,
        std::uint8_t* b_ok, accumulator_type* acc, std::uint32_t* consumed, std::uint32_t* overflows,
        edge_tally* tally = nullptr) {
        const std::size_t ah = a_head - 1, bh = b_head - cols, pes = rows * cols;
        span_tally counted;
        if constexpr (Tally) {
            // Row i's west input lands in the slot that held PE(i - 1, C - 1)'s token one edge before,
            // against which the token pass below counts that PE's toggles: count them against the
            // old token instead (as west_slots does for runs of edges). With one column that PE is
            // PE(i - 1, 0), whose token is row i - 1's input.
            for (std::size_t i = 1; i < rows; ++i) {
                const operand_type east = cols == 1 ? edge_input(west, west_ok, i - 1) : a[ah + i * cols - 1];
                counted.fix += std::int64_t(toggles_between<Native>(east, a[ah + i * cols])) -
                               toggles_between<Native>(east, edge_input(west, west_ok, i));
            }
        }
        for (std::size_t i = 0; i < rows; ++i) {
            a[ah + i * cols] = edge_input(west, west_ok, i);
            a_ok[ah + i * cols] = west_ok[i];
        }
        for (std::size_t j = 0; j < cols; ++j) {
            b[bh + j] = edge_input(north, north_ok, j);
            b_ok[bh + j] = north_ok[j];
        }
        switch (mode) {  // chosen once per edge
            case count_mode::none:
                mac_span<overflow_mode::wrap, false, Tally, Native>(pes, acc, consumed, overflows, a + ah,
                                                                    a_ok + ah, b + bh, b_ok + bh, &counted);
                break;
            case count_mode::wrap:
                mac_span<overflow_mode::wrap, true, Tally, Native>(pes, acc, consumed, overflows, a + ah,
                                                                   a_ok + ah, b + bh, b_ok + bh, &counted);
                break;
            case count_mode::saturate:
                mac_span<overflow_mode::saturate, true, Tally, Native>(
                    pes, acc, consumed, overflows, a + ah, a_ok + ah, b + bh, b_ok + bh, &counted);
                break;
        }
        if constexpr (Tally) {  // as run_edges counts an edge's tokens
            const token_counts c = count_tokens<Native>(a + ah, 1, b + bh, cols, pes);
            counted.valid += both_set<Native>(a_ok + ah, b_ok + bh, pes);
            counted.random += c.nonzero_pairs;
            counted.a_toggles += c.x_toggles;
            counted.b_toggles += c.y_toggles;
            counted.add_to(*tally, 1);
        }
    }

    static operand_type edge_input(const operand_type* value, const std::uint8_t* ok, std::size_t i) {
        return ok[i] ? value[i] : operand_type{};
    }

    // The blocks of the bigger arrays: at most this many PEs (about 22 bytes of state each in L1),
    // for this many edges at a time.
    static constexpr std::size_t block_pes = 1024;
    static constexpr std::uint64_t group_edges = 8;

    // The multiply-accumulates of one edge, over every PE in row-major order. __restrict: the
    // windows never overlap (uint8_t flags could otherwise alias anything), so the loop vectorises
    // without alias checks. Bubbles carry a zero value, so for integers the product of a bubble is
    // 0 and adding it changes nothing: the sum needs no select, only the term count looks at the
    // valid bits. Counting (Tally): the sums' toggles (the caller counts the rest after the pass).
    template <overflow_mode Mode, bool Count, bool Tally = false, bool Native = false>
    static inline __attribute__((always_inline)) void mac_span(
        std::size_t n, accumulator_type* __restrict acc, std::uint32_t* __restrict consumed,
        std::uint32_t* __restrict overflows, const operand_type* __restrict a,
        const std::uint8_t* __restrict a_ok, const operand_type* __restrict b,
        const std::uint8_t* __restrict b_ok, span_tally* counted = nullptr) {
        std::uint32_t sum_toggles = 0;  // n < 2^27
        for (std::size_t j = 0; j < n; ++j) {
            const std::uint8_t both = a_ok[j] & b_ok[j];
            const accumulator_type before = acc[j];
            bool overflowed = false;
            const accumulator_type next = Format::template mac<Mode>(acc[j], a[j], b[j], overflowed);
            if constexpr (Format::is_integer && !Count) {
                acc[j] = next;
            } else if constexpr (Format::is_integer) {
                acc[j] = both ? next : acc[j];
            } else {
                // A bitwise select: GCC will not if-convert a conditional float add (it could trap), so
                // "both ? next : acc[j]" stays a branch and the loop scalar. Floats need the select:
                // 0 x inf is NaN and -0 + 0 is +0, so a bubble's zero would change the sum.
                std::uint32_t keep, take;
                std::memcpy(&keep, &acc[j], sizeof keep);
                std::memcpy(&take, &next, sizeof take);
                const std::uint32_t mask = 0u - std::uint32_t{both};
                const std::uint32_t bits = (take & mask) | (keep & ~mask);
                std::memcpy(&acc[j], &bits, sizeof bits);
            }
            consumed[j] += both;
            if constexpr (Format::is_integer && Count) overflows[j] += both & overflowed;
            if constexpr (Tally) {
                sum_toggles += toggles_between<Native>(before, acc[j]);
            }
        }
        if constexpr (Tally) {
            counted->sum_toggles += sum_toggles;
        }
    }

    aligned_vector<operand_type> m_a;  // the A token each PE passes east: an R x C window of 2RC slots
    aligned_vector<std::uint8_t> m_a_valid;
    aligned_vector<operand_type> m_b;  // the B token each PE passes south: the same
    aligned_vector<std::uint8_t> m_b_valid;
    aligned_vector<accumulator_type> m_acc;
    std::size_t m_a_head = 0;  // slot of PE(0, 0) in the A buffers
    std::size_t m_b_head = 0;  // ... in the B buffers
    // Integer formats: the largest operand magnitudes that entered since the last clear.
    std::uint64_t m_a_max = 0;
    std::uint64_t m_b_max = 0;
    std::uint64_t m_safe_edges = ~std::uint64_t{0};  // edges after a clear during which none can overflow
    bool m_partials_in = false;                      // an accumulator was loaded since the last clear
    feed m_feed{};                                   // the inputs' phase being run, in:
    std::vector<lane> m_lanes;
    std::vector<std::size_t> m_idle;
};

// The entry points into the kernels, defined outside the class so that they are not inline: with
// the extern template below, a translation unit that uses array_core then neither compiles them
// nor refers to the kernels' clones. (GCC emits the dispatcher of a clone in every unit that refers
// to it, but the clones themselves only where the template is instantiated, and as local symbols.)
template <class Format>
void array_core<Format>::advance(const operand_type* west, const std::uint8_t* west_ok,
                                 const operand_type* north, const std::uint8_t* north_ok) {
    make_room();
    count_mode mode = count_mode::none;
    if constexpr (Format::is_integer) {
        raise_bound(std::max(m_a_max, max_magnitude(west, m_rows, 1, 0)),
                    std::max(m_b_max, max_magnitude(north, m_cols, 1, 0)));
        if (m_partials_in || m_edges >= m_safe_edges)
            mode = m_overflow == overflow_mode::wrap ? count_mode::wrap : count_mode::saturate;
    }
    if (m_tally)
        edge_kernel_tally(mode, m_rows, m_cols, m_a_head, m_b_head, west, west_ok, north, north_ok,
                          m_a.data(), m_a_valid.data(), m_b.data(), m_b_valid.data(), m_acc.data(),
                          m_consumed.data(), m_overflows.data(), *m_tally);
    else
        edge_kernel(mode, m_rows, m_cols, m_a_head, m_b_head, west, west_ok, north, north_ok, m_a.data(),
                    m_a_valid.data(), m_b.data(), m_b_valid.data(), m_acc.data(), m_consumed.data(),
                    m_overflows.data());
    m_a_head -= 1;
    m_b_head -= m_cols;
    ++m_edges;
}

template <class Format>
void array_core<Format>::advance(const streams& in, std::uint64_t first, std::uint64_t count,
                                 edge_callback* after) {
    const std::size_t cols = m_cols;
    // The leading edges of the run during which no accumulator can overflow (see
    // note_magnitudes), and how the rest count overflows.
    std::uint64_t quiet = count;
    count_mode counting = count_mode::none;
    if constexpr (Format::is_integer) {
        note_magnitudes(in, first, count);
        quiet = !m_partials_in && m_edges < m_safe_edges ? std::min(count, m_safe_edges - m_edges) : 0;
        counting = m_overflow == overflow_mode::wrap ? count_mode::wrap : count_mode::saturate;
    }
    std::uint64_t phase_end = first;  // the edge from which m_feed no longer holds
    for (std::uint64_t done = 0; done < count;) {
        if (first + done == phase_end) phase_end = plan_feed(in, first + done, first + count);
        make_room();
        std::uint64_t run =
            after ? 1 : std::min<std::uint64_t>({phase_end - (first + done), m_a_head, m_b_head / cols});
        count_mode mode = counting;
        if (done < quiet) {
            run = std::min(run, quiet - done);
            mode = count_mode::none;
        }
        if (m_tally)
            run_kernel_tally(mode, m_rows, cols, m_feed, first + done, run, m_a_head, m_b_head, m_a.data(),
                             m_a_valid.data(), m_b.data(), m_b_valid.data(), m_acc.data(), m_consumed.data(),
                             m_overflows.data(), *m_tally);
        else
            run_kernel(mode, m_rows, cols, m_feed, first + done, run, m_a_head, m_b_head, m_a.data(),
                       m_a_valid.data(), m_b.data(), m_b_valid.data(), m_acc.data(), m_consumed.data(),
                       m_overflows.data());
        m_a_head -= run;
        m_b_head -= run * cols;
        m_edges += run;
        done += run;
        if (after) after->after_edge(first + done - 1);
    }
}

template <class Format>
void array_core<Format>::note_magnitudes(const streams& in, std::uint64_t first, std::uint64_t count) {
    std::uint64_t a_max = m_a_max, b_max = m_b_max;
    std::uint64_t b_lo = ~std::uint64_t{0}, b_hi = 0;
    for (std::size_t i = 0; i < m_rows; ++i) {
        const auto [lo, hi] = terms_in(in.row_delay[i], in.kc, first, count);
        if (in.row_valid[i] && lo < hi)
            a_max = std::max(a_max, max_magnitude(&in.a[i * in.a_stride + lo], hi - lo, 1, 0));
    }
    for (std::size_t j = 0; j < m_cols; ++j) {
        const auto [col_lo, col_hi] = terms_in(in.col_delay[j], in.kc, first, count);
        if (in.col_valid[j] && col_lo < col_hi) {
            b_lo = std::min(b_lo, col_lo);
            b_hi = std::max(b_hi, col_hi);
        }
    }
    if (b_lo < b_hi) {
        const std::uint64_t rows = b_hi - b_lo;  // one span when the rows are back to back
        const std::size_t cols = m_cols;
        b_max = std::max(b_max, in.b_stride == cols
                                    ? max_magnitude(&in.b[b_lo * in.b_stride], rows * cols, 1, 0)
                                    : max_magnitude(&in.b[b_lo * in.b_stride], cols, rows, in.b_stride));
    }
    raise_bound(a_max, b_max);
}

SYSTOLIC_EXTERN_TEMPLATE(array_core)

}  // namespace systolic
