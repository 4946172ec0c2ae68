// The N x N grid of processing elements as plain C++ state, stepped one advance edge at a time.
// Hot state is structure-of-arrays in row-major order (index i * N + j), so one edge is a handful
// of row copies and one branch-free multiply-accumulate loop over contiguous memory. The SystemC
// shell (systolic_array, pe) only names and exposes this state.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "systolic/token.h"

namespace systolic {

// A PE that has not consumed exactly the expected number of terms when the tile should be complete.
struct stuck_pe {
    std::size_t row = 0;
    std::size_t col = 0;
    std::uint64_t consumed = 0;
};

template <class Format>
class array_core {
public:
    using format = Format;
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    using token_type = token<operand_type>;

    explicit array_core(std::size_t n)
        : m_n(n),
          m_a(n * n),
          m_a_valid(n * n),
          m_b(n * n),
          m_b_valid(n * n),
          m_acc(n * n),
          m_consumed(n * n) {
        if (n == 0) throw std::invalid_argument("array_core: the array needs at least one PE");
    }

    std::size_t size() const { return m_n; }

    // Clear phase: every token becomes a bubble, every accumulator and term counter zero.
    void clear() {
        std::fill(m_a.begin(), m_a.end(), operand_type{});
        std::fill(m_a_valid.begin(), m_a_valid.end(), 0);
        std::fill(m_b.begin(), m_b.end(), operand_type{});
        std::fill(m_b_valid.begin(), m_b_valid.end(), 0);
        std::fill(m_acc.begin(), m_acc.end(), accumulator_type{});
        std::fill(m_consumed.begin(), m_consumed.end(), 0);
        m_edges = 0;
    }

    // One advance edge. west[i] enters PE(i, 0) and north[j] enters PE(0, j); every other token
    // moves one PE east (A) or south (B); then every PE whose two new tokens are both valid
    // multiplies, accumulates and counts one consumed term. Rows are walked bottom-up so that
    // row i - 1 still holds the previous edge's B tokens when row i takes them over.
    void advance(const token_type* west, const token_type* north) {
        const std::size_t n = m_n;
        for (std::size_t i = n; i-- > 0;) {
            operand_type* a = &m_a[i * n];
            std::uint8_t* a_ok = &m_a_valid[i * n];
            operand_type* b = &m_b[i * n];
            std::uint8_t* b_ok = &m_b_valid[i * n];

            std::memmove(a + 1, a, (n - 1) * sizeof(operand_type));
            std::memmove(a_ok + 1, a_ok, n - 1);
            a[0] = west[i].valid ? west[i].value : operand_type{};
            a_ok[0] = west[i].valid;

            if (i > 0) {
                std::memcpy(b, b - n, n * sizeof(operand_type));
                std::memcpy(b_ok, b_ok - n, n);
            } else {
                for (std::size_t j = 0; j < n; ++j) {
                    b[j] = north[j].valid ? north[j].value : operand_type{};
                    b_ok[j] = north[j].valid;
                }
            }

            accumulator_type* acc = &m_acc[i * n];
            std::uint32_t* consumed = &m_consumed[i * n];
            for (std::size_t j = 0; j < n; ++j) {
                const bool both = (a_ok[j] & b_ok[j]) != 0;
                const accumulator_type next = Format::mac(acc[j], a[j], b[j]);
                acc[j] = both ? next : acc[j];
                consumed[j] += both;
            }
        }
        ++m_edges;
    }

    // Advance edges since the last clear.
    std::uint64_t edges() const { return m_edges; }

    token_type a(std::size_t i, std::size_t j) const {
        return {m_a[i * m_n + j], m_a_valid[i * m_n + j] != 0};
    }
    token_type b(std::size_t i, std::size_t j) const {
        return {m_b[i * m_n + j], m_b_valid[i * m_n + j] != 0};
    }
    accumulator_type accumulator(std::size_t i, std::size_t j) const { return m_acc[i * m_n + j]; }
    std::uint64_t consumed(std::size_t i, std::size_t j) const { return m_consumed[i * m_n + j]; }

    // True when every PE has consumed exactly k terms: the tile may drain.
    bool complete(std::uint64_t k) const {
        return std::all_of(m_consumed.begin(), m_consumed.end(), [k](std::uint32_t c) { return c == k; });
    }

    // The PEs that have not consumed exactly k terms, in row-major order.
    std::vector<stuck_pe> stuck(std::uint64_t k) const {
        std::vector<stuck_pe> out;
        for (std::size_t idx = 0; idx < m_consumed.size(); ++idx) {
            if (m_consumed[idx] != k) out.push_back({idx / m_n, idx % m_n, m_consumed[idx]});
        }
        return out;
    }

    // Terms consumed by all PEs since the last clear (the MACs executed, padding included), and by
    // the top-left rows x cols block of PEs only (the MACs that belong to real outputs).
    std::uint64_t macs() const { return macs_in(m_n, m_n); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j)
                sum += m_consumed[i * m_n + j];
        return sum;
    }

private:
    std::size_t m_n;
    std::vector<operand_type> m_a;  // the A token each PE passes east
    std::vector<std::uint8_t> m_a_valid;
    std::vector<operand_type> m_b;  // the B token each PE passes south
    std::vector<std::uint8_t> m_b_valid;
    std::vector<accumulator_type> m_acc;
    std::vector<std::uint32_t> m_consumed;  // terms consumed since the last clear
    std::uint64_t m_edges = 0;
};

}  // namespace systolic
