// The R x C grid of processing elements (R rows of C PEs) as plain C++ state, stepped one advance
// edge at a time. Hot state is structure-of-arrays in row-major order, and tokens move without
// being copied:
//  - each of the R rows of A tokens is a window of C slots into a 2C-slot buffer; the window
//    slides one slot west per edge and the west input is written at its head (the live tokens are
//    copied back once every C edges);
//  - the R rows of B tokens (C each) form a ring whose logical row 0 moves down one physical row
//    per edge, and the north inputs overwrite the row whose tokens leave the array.
// So one edge is R + C token writes and one branch-free multiply-accumulate pass over contiguous
// rows. The SystemC shell (systolic_array, pe) only names and exposes this state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "systolic/number_format.h"
#include "systolic/token.h"

// Baseline x86-64 has no vector multiply for the wider formats, so GCC leaves the MAC loop
// scalar. Where ifuncs exist, build an AVX2 clone too and pick one when the program loads.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define SYSTOLIC_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SYSTOLIC_VECTOR_CLONES
#endif

namespace systolic {

// A PE that has not consumed exactly the expected number of terms when it should have.
struct stuck_pe {
    std::size_t row = 0;
    std::size_t col = 0;
    std::uint64_t consumed = 0;
    std::size_t array = 0;  // which array, where an engine steps several (a fabric's index)
};

template <class Format>
class array_core {
public:
    using format = Format;
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    using token_type = token<operand_type>;

    array_core(std::size_t rows, std::size_t cols)
        : m_rows(rows),
          m_cols(cols),
          m_a(2 * rows * cols),
          m_a_valid(2 * rows * cols),
          m_b(rows * cols),
          m_b_valid(rows * cols),
          m_acc(rows * cols),
          m_consumed(rows * cols),
          m_overflows(rows * cols) {
        if (rows == 0 || cols == 0)
            throw std::invalid_argument("array_core: the array needs at least one PE");
        clear();
    }
    // The square N x N array.
    explicit array_core(std::size_t n) : array_core(n, n) {}

    std::size_t rows() const { return m_rows; }
    std::size_t cols() const { return m_cols; }

    overflow_mode overflow() const { return m_overflow; }
    void set_overflow(overflow_mode mode) { m_overflow = mode; }

    // Clear phase: every token becomes a bubble, every accumulator and counter zero.
    void clear() {
        std::fill(m_a.begin(), m_a.end(), operand_type{});
        std::fill(m_a_valid.begin(), m_a_valid.end(), 0);
        std::fill(m_b.begin(), m_b.end(), operand_type{});
        std::fill(m_b_valid.begin(), m_b_valid.end(), 0);
        std::fill(m_consumed.begin(), m_consumed.end(), 0);
        clear_accumulators();
        m_a_head = m_cols;
        m_b_top = 0;
        m_edges = 0;
        m_a_max = m_b_max = 0;
        m_safe_edges = ~std::uint64_t{0};
    }

    // Zeroes the accumulators (and overflow counts) only: tokens and term counters stay.
    void clear_accumulators() {
        std::fill(m_acc.begin(), m_acc.end(), accumulator_type{});
        std::fill(m_overflows.begin(), m_overflows.end(), 0);
        m_partials_in = false;
    }

    // PE(i, j) takes a partial sum handed on by another array (a fabric's C link): its sum goes on
    // from v. The overflow bound below assumes sums that started from zero at the last clear, so from
    // here on every edge counts overflows.
    void load_accumulator(std::size_t i, std::size_t j, accumulator_type v) {
        m_acc[i * m_cols + j] = v;
        m_partials_in = true;
    }

    // One advance edge. west[i] (R of them) enters PE(i, 0) and north[j] (C of them) enters
    // PE(0, j); every other token
    // moves one PE east (A) or south (B); then every PE whose two new tokens are both valid
    // multiplies, accumulates and counts one consumed term (and one overflow, if the sum left
    // the accumulator's range).
    void advance(const token_type* west, const token_type* north) {
        m_in.resize(m_rows + m_cols);
        m_in_ok.resize(m_rows + m_cols);
        for (std::size_t i = 0; i < m_rows; ++i) {
            m_in[i] = west[i].value;
            m_in_ok[i] = west[i].valid;
        }
        for (std::size_t j = 0; j < m_cols; ++j) {
            m_in[m_rows + j] = north[j].value;
            m_in_ok[m_rows + j] = north[j].valid;
        }
        advance(&m_in[0], &m_in_ok[0], &m_in[m_rows], &m_in_ok[m_rows]);
    }

    // The same edge with the inputs as values and valid bits (the engines' form: no token objects).
    void advance(const operand_type* west, const std::uint8_t* west_ok, const operand_type* north,
                 const std::uint8_t* north_ok) {
        const std::size_t rows = m_rows, cols = m_cols;
        const std::size_t w = 2 * cols;
        if (m_a_head == 0) {  // the windows reached the buffers' start: copy the live tokens back
            for (std::size_t i = 0; i < rows; ++i) {
                std::memcpy(&m_a[i * w + cols + 1], &m_a[i * w], (cols - 1) * sizeof(operand_type));
                std::memcpy(&m_a_valid[i * w + cols + 1], &m_a_valid[i * w], cols - 1);
            }
            m_a_head = cols + 1;
        }
        --m_a_head;
        // The physical row that held the old bottom row, whose tokens leave the array, takes the
        // north inputs and becomes logical row 0.
        m_b_top = m_b_top == 0 ? rows - 1 : m_b_top - 1;
        // Each edge adds at most one product of at most m_a_max * m_b_max to an accumulator, so
        // for the first max / (m_a_max * m_b_max) edges after a clear none can leave its range and
        // the count (always zero then) is skipped. The bound only changes when a larger operand
        // enters, so the division runs once per new maximum, not once per edge.
        count_mode mode = count_mode::none;
        if constexpr (Format::is_integer) {
            const std::uint64_t a_max = std::max(m_a_max, max_magnitude(west, west_ok, rows));
            const std::uint64_t b_max = std::max(m_b_max, max_magnitude(north, north_ok, cols));
            if (a_max != m_a_max || b_max != m_b_max) {
                m_a_max = a_max;
                m_b_max = b_max;
                const std::uint64_t product = a_max * b_max;  // at most 2^62
                m_safe_edges = product == 0
                                   ? ~std::uint64_t{0}
                                   : std::uint64_t(std::numeric_limits<accumulator_type>::max()) / product;
            }
            if (m_partials_in || m_edges + 1 > m_safe_edges)
                mode = m_overflow == overflow_mode::wrap ? count_mode::wrap : count_mode::saturate;
        }
        edge_kernel(mode, rows, cols, m_a_head, m_b_top, west, west_ok, north, north_ok, m_a.data(),
                    m_a_valid.data(), m_b.data(), m_b_valid.data(), m_acc.data(), m_consumed.data(),
                    m_overflows.data());
        ++m_edges;
    }

    // Advance edges since the last clear.
    std::uint64_t edges() const { return m_edges; }

    token_type a(std::size_t i, std::size_t j) const {
        const std::size_t k = i * 2 * m_cols + m_a_head + j;
        return {m_a[k], m_a_valid[k] != 0};
    }
    token_type b(std::size_t i, std::size_t j) const {
        const std::size_t k = (m_b_top + i) % m_rows * m_cols + j;
        return {m_b[k], m_b_valid[k] != 0};
    }
    // The tokens that leave the array on the next edge: the A tokens of the last column (one per row,
    // copied out) and the B tokens of the last row (contiguous, in place).
    void east_column(operand_type* value, std::uint8_t* valid) const {
        const std::size_t w = 2 * m_cols, k = m_a_head + m_cols - 1;
        for (std::size_t i = 0; i < m_rows; ++i) {
            value[i] = m_a[i * w + k];
            valid[i] = m_a_valid[i * w + k];
        }
    }
    const operand_type* south_row() const { return &m_b[last_b_row() * m_cols]; }
    const std::uint8_t* south_row_valid() const { return &m_b_valid[last_b_row() * m_cols]; }
    accumulator_type accumulator(std::size_t i, std::size_t j) const { return m_acc[i * m_cols + j]; }
    // Row i's C accumulators (the rows are contiguous: row i + 1 follows row i).
    const accumulator_type* accumulator_row(std::size_t i) const { return &m_acc[i * m_cols]; }
    std::uint64_t consumed(std::size_t i, std::size_t j) const { return m_consumed[i * m_cols + j]; }

    // True when every PE has consumed exactly k terms: the tile (or chunk) may drain.
    bool complete(std::uint64_t k) const {
        return std::all_of(m_consumed.begin(), m_consumed.end(), [k](std::uint32_t c) { return c == k; });
    }

    // The PEs that have not consumed exactly k terms, in row-major order.
    std::vector<stuck_pe> stuck(std::uint64_t k) const {
        std::vector<stuck_pe> out;
        for (std::size_t idx = 0; idx < m_consumed.size(); ++idx) {
            if (m_consumed[idx] != k) out.push_back({idx / m_cols, idx % m_cols, m_consumed[idx]});
        }
        return out;
    }

    // Terms consumed by all PEs since the last clear (the MACs executed, padding included), and by
    // the top-left rows x cols block of PEs only (the MACs that belong to real outputs).
    std::uint64_t macs() const { return macs_in(m_rows, m_cols); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const { return sum_in(m_consumed, rows, cols); }
    // Accumulations that overflowed (wrapped or saturated) since the last clear, in the block.
    std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const {
        return sum_in(m_overflows, rows, cols);
    }

private:
    std::size_t last_b_row() const { return m_b_top == 0 ? m_rows - 1 : m_b_top - 1; }

    // no overflow possible (nothing to count; both modes agree), or count under wrap or saturate.
    enum class count_mode { none, wrap, saturate };

    // The whole edge: the inputs enter, then every row multiplies and accumulates. One function
    // (and so one clone dispatch) per edge; the row loop inlines into it.
    SYSTOLIC_VECTOR_CLONES static void edge_kernel(count_mode mode, std::size_t rows, std::size_t cols,
                                                   std::size_t a_head, std::size_t b_top,
                                                   const operand_type* west, const std::uint8_t* west_ok,
                                                   const operand_type* north, const std::uint8_t* north_ok,
                                                   operand_type* a, std::uint8_t* a_ok, operand_type* b,
                                                   std::uint8_t* b_ok, accumulator_type* acc,
                                                   std::uint32_t* consumed, std::uint32_t* overflows) {
        const std::size_t w = 2 * cols;
        for (std::size_t i = 0; i < rows; ++i) {  // bubbles carry a zero value
            a[i * w + a_head] = west_ok[i] ? west[i] : operand_type{};
            a_ok[i * w + a_head] = west_ok[i];
        }
        for (std::size_t j = 0; j < cols; ++j) {
            b[b_top * cols + j] = north_ok[j] ? north[j] : operand_type{};
            b_ok[b_top * cols + j] = north_ok[j];
        }
        switch (mode) {  // chosen once per edge, not per row
            case count_mode::none:
                mac_rows<overflow_mode::wrap, false>(rows, cols, a_head, b_top, a, a_ok, b, b_ok, acc,
                                                     consumed, overflows);
                break;
            case count_mode::wrap:
                mac_rows<overflow_mode::wrap, true>(rows, cols, a_head, b_top, a, a_ok, b, b_ok, acc,
                                                    consumed, overflows);
                break;
            case count_mode::saturate:
                mac_rows<overflow_mode::saturate, true>(rows, cols, a_head, b_top, a, a_ok, b, b_ok, acc,
                                                        consumed, overflows);
                break;
        }
    }

    template <overflow_mode Mode, bool Count>
    static inline __attribute__((always_inline)) void mac_rows(
        std::size_t rows, std::size_t cols, std::size_t a_head, std::size_t b_top, const operand_type* a,
        const std::uint8_t* a_ok, const operand_type* b, const std::uint8_t* b_ok, accumulator_type* acc,
        std::uint32_t* consumed, std::uint32_t* overflows) {
        const std::size_t w = 2 * cols;
        for (std::size_t i = 0; i < rows; ++i) {
            const std::size_t a0 = i * w + a_head, b_row = b_top + i,
                              b0 = (b_row < rows ? b_row : b_row - rows) * cols, p0 = i * cols;
            mac_row<Mode, Count>(cols, &acc[p0], &consumed[p0], &overflows[p0], &a[a0], &a_ok[a0], &b[b0],
                                 &b_ok[b0]);
        }
    }

    // One row of multiply-accumulates. __restrict: the rows never overlap (uint8_t flags could
    // otherwise alias anything), so the loop vectorises without alias checks. Bubbles carry a zero
    // value, so for integers the product of a bubble is 0 and adding it changes nothing: the sum
    // needs no select, only the term count looks at the valid bits.
    template <overflow_mode Mode, bool Count>
    static inline __attribute__((always_inline)) void mac_row(std::size_t n, accumulator_type* __restrict acc,
                                                              std::uint32_t* __restrict consumed,
                                                              std::uint32_t* __restrict overflows,
                                                              const operand_type* __restrict a,
                                                              const std::uint8_t* __restrict a_ok,
                                                              const operand_type* __restrict b,
                                                              const std::uint8_t* __restrict b_ok) {
        mac_span<Mode, Count>(n, acc, consumed, overflows, a, a_ok, b, b_ok);
    }

    template <overflow_mode Mode, bool Count>
    static inline __attribute__((always_inline)) void mac_span(
        std::size_t n, accumulator_type* __restrict acc, std::uint32_t* __restrict consumed,
        std::uint32_t* __restrict overflows, const operand_type* __restrict a,
        const std::uint8_t* __restrict a_ok, const operand_type* __restrict b,
        const std::uint8_t* __restrict b_ok) {
        for (std::size_t j = 0; j < n; ++j) {
            const std::uint8_t both = a_ok[j] & b_ok[j];
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
        }
    }

    // The largest |value| among the valid inputs (integer formats).
    static std::uint64_t max_magnitude(const operand_type* v, const std::uint8_t* ok, std::size_t n) {
        std::uint64_t m = 0;
        for (std::size_t i = 0; i < n; ++i) {
            const auto x = static_cast<std::int64_t>(v[i]);
            const std::uint64_t mag = ok[i] ? (x < 0 ? 0 - std::uint64_t(x) : std::uint64_t(x)) : 0;
            m = std::max(m, mag);
        }
        return m;
    }

    std::uint64_t sum_in(const std::vector<std::uint32_t>& v, std::size_t rows, std::size_t cols) const {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j)
                sum += v[i * m_cols + j];
        return sum;
    }

    std::size_t m_rows;
    std::size_t m_cols;
    std::vector<operand_type> m_a;  // the A token each PE passes east: R rows of 2C slots
    std::vector<std::uint8_t> m_a_valid;
    std::vector<operand_type> m_b;  // the B token each PE passes south: a ring of R rows of C
    std::vector<std::uint8_t> m_b_valid;
    std::vector<accumulator_type> m_acc;
    std::vector<std::uint32_t> m_consumed;   // terms consumed since the last clear
    std::vector<std::uint32_t> m_overflows;  // accumulations that overflowed since the last clear
    std::size_t m_a_head = 0;                // slot of column 0 in every A row's 2C-slot buffer
    std::size_t m_b_top = 0;                 // physical row of logical B row 0
    std::uint64_t m_edges = 0;
    overflow_mode m_overflow = overflow_mode::wrap;
    // Integer formats: the largest operand magnitudes that entered since the last clear.
    std::uint64_t m_a_max = 0;
    std::uint64_t m_b_max = 0;
    std::uint64_t m_safe_edges = ~std::uint64_t{0};  // edges after a clear during which none can overflow
    bool m_partials_in = false;                      // an accumulator was loaded since the last clear
    std::vector<operand_type> m_in;                  // advance(token*, token*) as values and valid bits
    std::vector<std::uint8_t> m_in_ok;
};

}  // namespace systolic
