// The R x C grid of a weight-stationary systolic array (R rows of C PEs) as plain C++ state, stepped
// edge by edge. Each PE holds a weight that stays put for a whole fold; the streamed operand moves
// east through the rows and the partial sums move south through the columns, leaving the array at
// the bottom row finished. Input-stationary is the same kernel on transposed views: every operand
// and the output are read and written through two general strides.
//
// A fold computes, for t = 0 .. T-1 and j = 0 .. n-1 (n <= C real stationary columns), over the L
// <= R terms i = 0 .. L-1:
//     psum(t, j) = sum over i in order 0 .. L-1 of s(t, i) x w(i, j),
// starting from zero, with the format's MAC rule at every step (floats: the product rounded, then
// added; integers: exact, wrapping or saturating by the overflow mode, each overflow counted). Then
// psum(t, j) is stored into acc(t, j) (the first fold of a tile), or added to it with the format's
// add (later folds; each add that overflows counts one partial overflow).
//
// The edges of a fold, and what each one does:
//  - preload, R edges (e = 0 .. R-1): every PE's weight register moves one PE south (row i takes
//    row i-1's), and row 0 takes the north input w(R-1-e, j), a zero where R-1-e >= L or j >= n
//    (padding weights are zeros). After exactly R edges PE(i, j) holds w(i, j); after R-1 it holds
//    w(i+1, j), one row off, and the last row still holds what it held before.
//  - stream, T + R + C - 2 edges (e = 0 .. T+R+C-3): row i's west input is s(e-i, i) while
//    0 <= e-i < T (a valid token, whose value is zero where i >= L: padding rows carry valid zeros),
//    a bubble (invalid, zero) otherwise. The A tokens move one PE east, the partial sums one PE
//    south (row 0 takes a zero); then every PE whose A token is valid does psum = mac(psum, a, w)
//    and counts one consumed term; a PE with a bubble keeps its sum. After that pass PE(R-1, j)
//    holds the finished psum(t, j) of t = e - (R-1) - j, which goes to acc(t, j) when 0 <= t < T
//    and j < n. So the sum of stream row t meets its token at PE(i, j) on edge t + i + j, and the
//    last result leaves on edge T + R + C - 3.
// Edges outside those ranges follow the same rules (their inputs are zero weights and bubbles, no
// output of theirs is in range), so a fault can add or drop edges. Preload edges leave the tokens
// and sums alone, stream edges the weights. Counters run from the last clear, across all the folds
// of a tile: after f folds of T rows each, every PE has consumed f x T terms.
//
// Hot state is structure-of-arrays in row-major order (row stride C), and nothing is copied to
// move it. The A tokens and the partial sums are each an R x C window into a buffer twice that
// size:
//  - A moves one PE east per edge: the window slides one slot towards the buffer's start, so
//    PE(i, j) takes what PE(i, j-1) held, and the token that leaves PE(i-1, C-1) lands in PE(i, 0),
//    where the west input of row i overwrites it;
//  - the sums move one PE south per edge: the window slides C slots (one row), onto a row of zeros.
//    A sum never moves in memory: its slot only changes rows, so the MAC pass reads and writes it
//    in place, and the bottom row's slots, once passed by the window, still hold the results;
//  - the weights slide C slots per preload edge in the same way, and stand still while streaming.
// When a window reaches its buffer's start it is copied back to the end (every R*C edges for A,
// every R for the others). So a stream edge is R west writes, C zeros and one branch-free MAC pass
// over R*C contiguous PEs, then at most C results written out.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "systolic/aligned_vector.h"
#include "systolic/bit_count.h"
#include "systolic/format_instances.h"
#include "systolic/number_format.h"
#include "systolic/stepped_grid.h"
#include "systolic/token.h"

namespace systolic {

template <class Format>
class stationary_core : public stepped_grid<Format> {
    using grid = stepped_grid<Format>;

public:
    using format = Format;
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    using token_type = token<operand_type>;

    // One fold's operands and output as strided views: s(t, i) = stream[t * stream_t + i * stream_i],
    // w(i, j) = weight[i * weight_i + j * weight_j], acc(t, j) = acc[t * acc_t + j * acc_j].
    struct fold {
        const operand_type* stream = nullptr;
        std::size_t stream_t = 0, stream_i = 0;
        const operand_type* weight = nullptr;
        std::size_t weight_i = 0, weight_j = 0;
        std::uint64_t t = 0;  // T: the streamed length
        std::uint64_t l = 0;  // L: the fold's terms, 1 .. R
        std::size_t n = 0;    // real stationary columns, 1 .. C
        accumulator_type* acc = nullptr;
        std::size_t acc_t = 0, acc_j = 0;
        bool combine = false;  // false: store the fold's sums; true: add them to acc
    };

    stationary_core(std::size_t rows, std::size_t cols)
        : grid(rows, cols, "stationary_core"),
          m_a(2 * rows * cols),
          m_a_valid(2 * rows * cols),
          m_w(2 * rows * cols),
          m_p(2 * rows * cols) {
        clear();
    }
    // The square N x N array.
    explicit stationary_core(std::size_t n) : stationary_core(n, n) {}

    // What one stationary_core of rows x cols allocates besides itself (each vector is one heap block).
    static std::uint64_t heap_bytes(std::size_t rows, std::size_t cols) {
        const std::uint64_t pes = std::uint64_t(rows) * cols;
        return grid::heap_bytes(rows, cols) + 2 * heap_block_bytes(2 * pes * sizeof(operand_type)) +
               heap_block_bytes(2 * pes) + heap_block_bytes(2 * pes * sizeof(accumulator_type));
    }

    // The edges of a fold's two phases.
    std::uint64_t preload_length() const { return m_rows; }
    std::uint64_t stream_length(const fold& f) const { return f.t + m_rows + m_cols - 2; }

    // Weights, tokens (all bubbles), partial sums and every counter zero.
    void clear() {
        std::fill(m_a.begin(), m_a.end(), operand_type{});
        std::fill(m_a_valid.begin(), m_a_valid.end(), 0);
        std::fill(m_w.begin(), m_w.end(), operand_type{});
        std::fill(m_p.begin(), m_p.end(), accumulator_type{});
        grid::clear_consumed();
        grid::clear_overflows();
        m_a_head = m_w_head = m_p_head = m_rows * m_cols;  // every window at its buffer's end
        m_edges = m_preload_edges = m_partial_overflows = 0;
        m_a_max = m_w_max = 0;
        m_safe = true;
    }

    // Preload edges first .. first + count - 1 of fold f; after->after_edge(e) follows each edge e
    // when `after` is given.
    void preload(const fold& f, std::uint64_t first, std::uint64_t count, edge_callback* after = nullptr);

    // Stream edges first .. first + count - 1 of fold f, each writing out the result it finishes.
    // Without `after` the run is cut only where a window must be copied back, so the kernel runs many
    // edges per call; with it, after->after_edge(e) follows each edge e (the kernel then runs one edge
    // per call, and the results of edge e are in acc when it is called).
    void stream(const fold& f, std::uint64_t first, std::uint64_t count, edge_callback* after = nullptr);

    // A whole fold: its R preload edges, then its T + R + C - 2 stream edges.
    void run(const fold& f) {
        preload(f, 0, preload_length());
        stream(f, 0, stream_length(f));
    }

    // Preload and stream edges since the last clear, and the preload edges among them.
    std::uint64_t preload_edges() const { return m_preload_edges; }

    // What PE(i, j) holds: its A token, its stationary weight, its partial sum.
    token_type a(std::size_t i, std::size_t j) const {
        const std::size_t k = m_a_head + i * m_cols + j;
        return {m_a[k], m_a_valid[k] != 0};
    }
    operand_type weight(std::size_t i, std::size_t j) const { return m_w[m_w_head + i * m_cols + j]; }
    accumulator_type psum(std::size_t i, std::size_t j) const { return m_p[m_p_head + i * m_cols + j]; }
    // Adds of a later fold's sums into acc that overflowed.
    std::uint64_t partial_overflows() const { return m_partial_overflows; }

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

    // A fold's west side, as the kernel reads it: s(e - i, i) is s[(e - i) * st + i * si].
    struct west_inputs {
        const operand_type* s;
        std::size_t st, si;
        std::uint64_t t, l;
    };

    void check(const fold& f) const {
        if (f.l > m_rows || f.n > m_cols)
            throw std::invalid_argument("stationary_core: a fold of " + std::to_string(f.l) + " terms x " +
                                        std::to_string(f.n) + " columns does not fit " +
                                        std::to_string(m_rows) + " x " + std::to_string(m_cols) + " PEs");
    }

    // Before a run of stream edges: a window that reached its buffer's start is copied back to the end.
    void make_room() {
        const std::size_t pes = m_rows * m_cols;
        if (m_a_head == 0) {
            std::memcpy(&m_a[pes], &m_a[0], pes * sizeof(operand_type));
            std::memcpy(&m_a_valid[pes], &m_a_valid[0], pes);
            m_a_head = pes;
        }
        if (m_p_head == 0) {
            std::memcpy(&m_p[pes], &m_p[0], pes * sizeof(accumulator_type));
            m_p_head = pes;
        }
    }

    // Integer formats: the bound that makes the MAC pass skip the overflow count. A partial sum
    // enters row 0 as zero and takes one product per row on its way south, so it never holds more
    // than R products, each at most m_a_max x m_w_max in magnitude (the largest operands since the
    // last clear). While R of them fit the accumulator no step can overflow, and then wrapping and
    // saturating agree too. The maxima only rise, so once the bound fails it stays failed until
    // the next clear (and the scans stop).
    void raise_bound(std::uint64_t a_max, std::uint64_t w_max) {
        if (a_max == m_a_max && w_max == m_w_max) return;
        m_a_max = a_max;
        m_w_max = w_max;
        const std::uint64_t product = a_max * w_max;  // at most 2^62
        m_safe =
            product == 0 || m_rows <= std::uint64_t(std::numeric_limits<accumulator_type>::max()) / product;
    }

    // The stream terms that enter during edges first .. first + count - 1, into the bound: row
    // i < L takes terms [first - i, first + count - i) of T.
    void note_stream(const fold& f, std::uint64_t first, std::uint64_t count) {
        std::uint64_t a_max = m_a_max;
        const std::uint64_t real = std::min<std::uint64_t>(f.l, m_rows);
        for (std::uint64_t i = 0; i < real && i < first + count; ++i) {
            const std::uint64_t lo = first > i ? first - i : 0, hi = std::min(f.t, first + count - i);
            if (lo < hi)
                a_max = std::max(a_max, max_magnitude(&f.stream[lo * f.stream_t + i * f.stream_i], 1, hi - lo,
                                                      f.stream_t));
        }
        raise_bound(a_max, m_w_max);
    }

    // `count` stream edges from edge e0, the windows at a_head and p_head with room for them all and
    // the new rows of zero sums already written above the sum window. One call (and so one clone
    // dispatch) per run; the loops inline into it.
    SYSTOLIC_VECTOR_CLONES static void run_kernel(count_mode mode, std::size_t rows, std::size_t cols,
                                                  const west_inputs& in, std::uint64_t e0,
                                                  std::uint64_t count, std::size_t a_head, std::size_t p_head,
                                                  operand_type* a, std::uint8_t* a_ok, const operand_type* w,
                                                  accumulator_type* p, std::uint32_t* consumed,
                                                  std::uint32_t* overflows) {
        switch (mode) {  // chosen once per run, not per edge
            case count_mode::none:
                run_edges<overflow_mode::wrap, false>(rows, cols, in, e0, count, a_head, p_head, a, a_ok, w,
                                                      p, consumed, overflows);
                break;
            case count_mode::wrap:
                run_edges<overflow_mode::wrap, true>(rows, cols, in, e0, count, a_head, p_head, a, a_ok, w, p,
                                                     consumed, overflows);
                break;
            case count_mode::saturate:
                run_edges<overflow_mode::saturate, true>(rows, cols, in, e0, count, a_head, p_head, a, a_ok,
                                                         w, p, consumed, overflows);
                break;
        }
    }

    // run_kernel for a job that counts its actions: the same edges, adding to `tally` (stepped_grid.h)
    // what they do, compiled for the machine's best counting path (bit_count.h).
    static void run_kernel_tally(count_mode mode, std::size_t rows, std::size_t cols, const west_inputs& in,
                                 std::uint64_t e0, std::uint64_t count, std::size_t a_head,
                                 std::size_t p_head, operand_type* a, std::uint8_t* a_ok,
                                 const operand_type* w, accumulator_type* p, std::uint32_t* consumed,
                                 std::uint32_t* overflows, edge_tally& tally) {
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            constexpr bool Native = decltype(native)::value;
            switch (mode) {
                case count_mode::none:
                    run_edges<overflow_mode::wrap, false, true, Native>(rows, cols, in, e0, count, a_head,
                                                                        p_head, a, a_ok, w, p, consumed,
                                                                        overflows, &tally);
                    break;
                case count_mode::wrap:
                    run_edges<overflow_mode::wrap, true, true, Native>(rows, cols, in, e0, count, a_head,
                                                                       p_head, a, a_ok, w, p, consumed,
                                                                       overflows, &tally);
                    break;
                case count_mode::saturate:
                    run_edges<overflow_mode::saturate, true, true, Native>(rows, cols, in, e0, count, a_head,
                                                                           p_head, a, a_ok, w, p, consumed,
                                                                           overflows, &tally);
                    break;
            }
        });
    }

    template <overflow_mode Mode, bool Count, bool Tally = false, bool Native = false>
    static inline __attribute__((always_inline)) void run_edges(
        std::size_t rows, std::size_t cols, const west_inputs& in, std::uint64_t e0, std::uint64_t count,
        std::size_t a_head, std::size_t p_head, operand_type* a, std::uint8_t* a_ok, const operand_type* w,
        accumulator_type* p, std::uint32_t* consumed, std::uint32_t* overflows, edge_tally* tally = nullptr) {
        // A local copy: the flag stores (uint8_t) could alias it, which would reload it every row.
        const west_inputs f = in;
        span_tally counted;
        west_slots<operand_type, (Tally ? block_pes : 1)> slots;
        // Edge t of the run for rows r0 .. r1 - 1 only: their west inputs, then their MACs. The rows
        // whose stream runs on edge e are one range, [e - T + 1, e] clipped to the array, and of
        // those the ones below L are real, the rest padding: four plain loops, no test per row.
        // Inlined, or it would be compiled for the baseline target, not the clone's.
        auto edge_rows = [&](std::uint64_t t, std::size_t r0, std::size_t r1) __attribute__((always_inline)) {
            const std::uint64_t e = e0 + t;
            const std::size_t ah = a_head - (t + 1), ph = p_head - (t + 1) * cols, p0 = r0 * cols;
            const std::uint64_t hi = std::min<std::uint64_t>(rows, e + 1);
            const std::uint64_t lo = std::min(hi, e >= f.t ? e - f.t + 1 : 0);
            auto clip = [&](std::uint64_t x) {
                return std::size_t(std::min<std::uint64_t>(std::max<std::uint64_t>(x, r0), r1));
            };
            const std::size_t live = clip(lo), pad = clip(std::max(lo, std::min(hi, f.l))), end = clip(hi);
            if constexpr (Tally) slots.save(a, ah, cols, r0, r1);
            std::size_t i = r0;
            for (; i < live; ++i) {
                a[ah + i * cols] = operand_type{};
                a_ok[ah + i * cols] = 0;
            }
            // s(e - i, i), stepping i: the index moves by si - st per row (modulo 2^64, which lands
            // on the true index, never negative).
            std::size_t src = std::size_t(e - i) * f.st + i * f.si;
            for (; i < pad; ++i, src += f.si - f.st) {
                a[ah + i * cols] = f.s[src];
                a_ok[ah + i * cols] = 1;
            }
            for (; i < end; ++i) {
                a[ah + i * cols] = operand_type{};
                a_ok[ah + i * cols] = 1;
            }
            for (; i < r1; ++i) {
                a[ah + i * cols] = operand_type{};
                a_ok[ah + i * cols] = 0;
            }
            if constexpr (Tally) slots.fix(a, ah, cols, r0, r1, counted);
            mac_span<Mode, Count, Tally, Native>((r1 - r0) * cols, cols, p + ph + p0, consumed + p0,
                                                 overflows + p0, a + ah + p0, a_ok + ah + p0, w + p0,
                                                 &counted);
            if constexpr (Tally) {
                // Valid MACs, and of them those of two nonzero operands (a bubble's value is zero); each
                // A token against the one it held an edge before, a slot up (the weights stand still).
                const std::size_t n = (r1 - r0) * cols;
                const token_counts c = count_tokens<Native, false>(a + ah + p0, 1, w + p0, 0, n);
                counted.valid += both_set<Native>(a_ok + ah + p0, a_ok + ah + p0, n);
                counted.random += c.nonzero_pairs;
                counted.a_toggles += c.x_toggles;
            }
        };
        const std::size_t block_rows = std::max<std::size_t>(1, block_pes / cols);
        if (block_rows >= rows) {  // the whole array fits in the L1 cache: one edge after the other
            for (std::uint64_t t = 0; t < count; ++t)
                edge_rows(t, 0, rows);
        } else {
            run_blocks(rows, count, block_rows, edge_rows);
        }
        if constexpr (Tally) counted.add_to(*tally, count);
    }

    // The edges of run_edges for an array bigger than a block.
    template <class EdgeRows>
    static inline __attribute__((always_inline)) void run_blocks(std::size_t rows, std::uint64_t count,
                                                                 std::size_t block_rows,
                                                                 EdgeRows& edge_rows) {
        // A bigger array would stream its sums, weights, counters and tokens from L2 every edge.
        // Instead a group of edges runs block of rows by block of rows, so that a block stays in L1
        // for the whole group. Every dependency points down and forward: row r on edge e reads the
        // sum that row r - 1 left in the same slot on edge e - 1, which an earlier block (or this
        // one) has computed, and its west input overwrites the token that row r - 1 held on edge
        // e - 1, which that row has used. No block writes a slot that a later block reads earlier.
        for (std::uint64_t g = 0; g < count; g += group_edges) {
            const std::uint64_t g_end = std::min<std::uint64_t>(count, g + group_edges);
            for (std::size_t r0 = 0; r0 < rows; r0 += block_rows) {
                const std::size_t r1 = std::min(rows, r0 + block_rows);
                for (std::uint64_t t = g; t < g_end; ++t)
                    edge_rows(t, r0, r1);
            }
        }
    }

    // The blocks of the bigger arrays: at most this many PEs (about 21 bytes of state each in L1),
    // for this many edges at a time (as array_core's).
    static constexpr std::size_t block_pes = 1024;
    static constexpr std::uint64_t group_edges = 8;

    // The multiply-accumulates of one edge, over PEs in row-major order. __restrict: the windows
    // never overlap (uint8_t flags could otherwise alias anything), so the loop vectorises without
    // alias checks. Bubbles carry a zero value, so for integers the product of a bubble is 0, and
    // adding it changes nothing and never overflows: the sum needs no select, only the term count
    // looks at the valid bits.
    // Counting (Tally): the sums' toggles (the caller counts the rest after the pass), each against
    // what it held one edge before, in the slot a row down, which this pass overwrites only later,
    // with the sum of the PE below (the last row of a block reads the next block's first, which
    // runs this edge later).
    template <overflow_mode Mode, bool Count, bool Tally = false, bool Native = false>
    static inline __attribute__((always_inline)) void mac_span(
        std::size_t n, std::size_t cols, accumulator_type* __restrict p, std::uint32_t* __restrict consumed,
        std::uint32_t* __restrict overflows, const operand_type* __restrict a,
        const std::uint8_t* __restrict a_ok, const operand_type* __restrict w,
        span_tally* counted = nullptr) {
        std::uint32_t sum_toggles = 0;  // n < 2^27
        for (std::size_t k = 0; k < n; ++k) {
            const std::uint8_t valid = a_ok[k];
            bool overflowed = false;
            const accumulator_type next = Format::template mac<Mode>(p[k], a[k], w[k], overflowed);
            accumulator_type before{};
            if constexpr (Tally) before = p[k + cols];
            if constexpr (Format::is_integer) {
                p[k] = next;
                if constexpr (Count) overflows[k] += overflowed;
            } else {
                // A bitwise select: GCC will not if-convert a conditional float add (it could trap), so
                // "valid ? next : p[k]" stays a branch and the loop scalar. Floats need the select:
                // 0 x inf is NaN, so a bubble's zero would change the sum where the weight is inf or NaN.
                static_assert(sizeof(accumulator_type) == sizeof(std::uint32_t));
                std::uint32_t keep, take;
                std::memcpy(&keep, &p[k], sizeof keep);
                std::memcpy(&take, &next, sizeof take);
                const std::uint32_t mask = 0u - std::uint32_t{valid};
                const std::uint32_t bits = (take & mask) | (keep & ~mask);
                std::memcpy(&p[k], &bits, sizeof bits);
            }
            consumed[k] += valid;
            if constexpr (Tally) {
                sum_toggles += toggles_between<Native>(before, p[k]);
            }
        }
        if constexpr (Tally) {
            counted->sum_toggles += sum_toggles;
        }
    }

    // The results of `count` stream edges from e0 that have just run, the sum window still where it
    // was before them: edge t of the run left its bottom row at row R - 1 of the window t + 1 rows up,
    // where no later edge of the run writes. Edge e's PE(R-1, j) finished the sum of t = e - (R-1) - j,
    // in range for the columns j in [d - T + 1, d] (d = e - (R-1)) below n.
    template <overflow_mode Mode>
    void write_out(const fold& f, std::uint64_t e0, std::uint64_t count) {
        const std::size_t cols = m_cols;
        for (std::uint64_t t = 0; t < count; ++t) {
            const std::uint64_t e = e0 + t;
            if (e + 1 < m_rows) continue;
            const std::uint64_t d = e - (m_rows - 1);
            const std::uint64_t j_hi = std::min<std::uint64_t>(f.n, d + 1);
            const accumulator_type* out = &m_p[m_p_head - (t + 1) * cols + (m_rows - 1) * cols];
            for (std::uint64_t j = d >= f.t ? d - f.t + 1 : 0; j < j_hi; ++j) {
                accumulator_type& dst = f.acc[(d - j) * f.acc_t + j * f.acc_j];
                if (f.combine) {
                    bool overflowed = false;
                    dst = Format::template add<Mode>(dst, out[j], overflowed);
                    m_partial_overflows += overflowed;
                } else {
                    dst = out[j];
                }
            }
        }
    }

    aligned_vector<operand_type> m_a;  // the A token each PE passes east: an R x C window of 2RC slots
    aligned_vector<std::uint8_t> m_a_valid;
    aligned_vector<operand_type> m_w;      // the stationary weights: the same, sliding only to preload
    aligned_vector<accumulator_type> m_p;  // the partial sum each PE passes south: the same
    std::size_t m_a_head = 0;              // slot of PE(0, 0) in the A buffers
    std::size_t m_w_head = 0;              // ... in the weights
    std::size_t m_p_head = 0;              // ... in the sums
    std::uint64_t m_preload_edges = 0;
    std::uint64_t m_partial_overflows = 0;
    // Integer formats: the largest operand magnitudes that entered since the last clear, and whether
    // R products of them fit the accumulator (raise_bound).
    std::uint64_t m_a_max = 0;
    std::uint64_t m_w_max = 0;
    bool m_safe = true;
};

// The entry points into the kernels, defined outside the class so that they are not inline: with the
// extern template below, a translation unit that uses stationary_core neither compiles them nor
// refers to the kernels' clones (as array_core's).
template <class Format>
void stationary_core<Format>::preload(const fold& f, std::uint64_t first, std::uint64_t count,
                                      edge_callback* after) {
    check(f);
    const std::size_t cols = m_cols, pes = m_rows * m_cols;
    for (std::uint64_t e = first; e < first + count; ++e) {
        if (m_w_head == 0) {
            std::memcpy(&m_w[pes], &m_w[0], pes * sizeof(operand_type));
            m_w_head = pes;
        }
        m_w_head -= cols;  // every weight one PE south, onto a new row 0
        operand_type* row = &m_w[m_w_head];
        // Row R-1-e of the weights (none past the array's last edge: e > R-1 wraps to a huge row).
        const std::uint64_t k = m_rows - 1 - e;
        const std::size_t real = k < f.l ? f.n : 0;
        for (std::size_t j = 0; j < real; ++j)
            row[j] = f.weight[k * f.weight_i + j * f.weight_j];
        std::fill(row + real, row + cols, operand_type{});
        if (m_tally) {  // every weight against the one it replaced, the slot a row down
            ++m_tally->preload_edges;
            m_tally->col_toggles += toggles_of_spans(row, row + cols, pes);
        }
        if constexpr (Format::is_integer) {
            if (m_safe && real > 0) raise_bound(m_a_max, std::max(m_w_max, max_magnitude(row, real, 1, 0)));
        }
        ++m_edges;
        ++m_preload_edges;
        if (after) after->after_edge(e);
    }
}

template <class Format>
void stationary_core<Format>::stream(const fold& f, std::uint64_t first, std::uint64_t count,
                                     edge_callback* after) {
    check(f);
    count_mode mode = count_mode::none;
    if constexpr (Format::is_integer) {
        if (m_safe) note_stream(f, first, count);
        if (!m_safe) mode = m_overflow == overflow_mode::wrap ? count_mode::wrap : count_mode::saturate;
    }
    const west_inputs in{f.stream, f.stream_t, f.stream_i, f.t, f.l};
    const std::size_t cols = m_cols;
    for (std::uint64_t done = 0; done < count;) {
        make_room();
        const std::uint64_t run =
            after ? 1 : std::min<std::uint64_t>({count - done, m_a_head, m_p_head / cols});
        // Row 0's new sums of every edge of the run at once, into the free rows above the window.
        std::fill_n(&m_p[m_p_head - run * cols], run * cols, accumulator_type{});
        if (m_tally)
            run_kernel_tally(mode, m_rows, cols, in, first + done, run, m_a_head, m_p_head, m_a.data(),
                             m_a_valid.data(), m_w.data() + m_w_head, m_p.data(), m_consumed.data(),
                             m_overflows.data(), *m_tally);
        else
            run_kernel(mode, m_rows, cols, in, first + done, run, m_a_head, m_p_head, m_a.data(),
                       m_a_valid.data(), m_w.data() + m_w_head, m_p.data(), m_consumed.data(),
                       m_overflows.data());
        if (m_overflow == overflow_mode::wrap)
            write_out<overflow_mode::wrap>(f, first + done, run);
        else
            write_out<overflow_mode::saturate>(f, first + done, run);
        m_a_head -= run;
        m_p_head -= run * cols;
        m_edges += run;
        done += run;
        if (after) after->after_edge(first + done - 1);
    }
}

SYSTOLIC_EXTERN_TEMPLATE(stationary_core)

}  // namespace systolic
