// The feeder: the skewed west (A) and north (B) token streams of one chunk. The load step fills
// its buffers - the tile's A rows (R x kc) and B columns (kc x C), zero where a row or column lies
// outside the matrix - and the feed tables say when each stream starts and whether its tokens are
// valid. Row i of A and column j of B start i (or j) edges late, so term k meets at PE(i, j) on
// edge k + i + j; padding rows and columns carry valid zeros, and outside a stream the token is a
// bubble. Plain C++: the engines read its buffers and tables, and so can a unit test.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "systolic/aligned_vector.h"
#include "systolic/format_instances.h"
#include "systolic/tiling.h"

namespace systolic {

// The skew rule, the one place it is written. Stream i (row i of A, column i of B) starts
// skew_delay(i) = i edges late. A stream that starts on edge `delay` carries term
// skewed_term(e, delay) = e - delay on edge e while that is below the chunk's kc; before the
// stream starts it wraps to a huge value, so `skewed_term(e, delay) < kc` is the whole test. So
// term k meets PE(i, j) on edge k + i + j, and the last of kc terms reaches PE(R-1, C-1) after
// skewed_edges(kc, R, C) = kc + R + C - 2 edges.
constexpr std::uint64_t skew_delay(std::uint64_t i) {
    return i;
}
constexpr std::uint64_t skewed_term(std::uint64_t e, std::uint64_t delay) {
    return e - delay;
}
constexpr std::uint64_t skewed_edges(std::uint64_t kc, std::uint64_t rows, std::uint64_t cols) {
    return kc + skew_delay(rows - 1) + skew_delay(cols - 1);
}

// When each stream starts (its delay in edges) and whether its tokens are valid. plan() fills the
// correct tables; a fault hook may change them.
struct feed_tables {
    std::vector<std::uint64_t> row_delay, col_delay;
    std::vector<std::uint8_t> row_valid, col_valid;
};

template <class Format>
class feeder {
public:
    using operand_type = typename Format::operand_type;

    // The streams of an R x C array: `rows` west (A) streams and `cols` north (B) streams.
    feeder(std::size_t rows, std::size_t cols) : m_rows(rows), m_cols(cols) {
        m_tables.row_delay.resize(rows);
        m_tables.col_delay.resize(cols);
        m_tables.row_valid.resize(rows);
        m_tables.col_valid.resize(cols);
    }
    explicit feeder(std::size_t n) : feeder(n, n) {}

    std::size_t rows() const { return m_rows; }
    std::size_t cols() const { return m_cols; }

    // The correct tables for a tile: local skew, every stream valid (padding is a valid zero).
    void plan(const tile&) {
        for (std::size_t i = 0; i < m_rows; ++i) {
            m_tables.row_delay[i] = skew_delay(i);
            m_tables.row_valid[i] = 1;
        }
        for (std::size_t j = 0; j < m_cols; ++j) {
            m_tables.col_delay[j] = skew_delay(j);
            m_tables.col_valid[j] = 1;
        }
    }
    feed_tables& tables() { return m_tables; }
    const feed_tables& tables() const { return m_tables; }

    // Sizes the buffers for a chunk of kc terms, zero wherever the load step will not write: it fills
    // the first `rows` rows of A and the first `cols` columns of every term of B, and the padding
    // stays zero. Zeroing only the padding keeps a big tile's load to one pass over its operands.
    void begin_chunk(std::uint64_t kc, std::size_t rows = 0, std::size_t cols = 0) {
        m_kc = kc;
        m_a.resize(m_rows * kc);
        m_b.resize(kc * m_cols);
        std::fill(m_a.begin() + static_cast<std::ptrdiff_t>(std::min(rows, m_rows) * kc), m_a.end(),
                  operand_type{});
        if (cols < m_cols)
            for (std::uint64_t k = 0; k < kc; ++k)
                std::fill_n(&m_b[k * m_cols + cols], m_cols - cols, operand_type{});
        m_view = {m_a.data(), kc, m_b.data(), m_cols};
    }
    // A chunk of kc terms read where the operands already are (a scratchpad), without a copy: A's
    // real rows a_stride elements apart, B's terms b_stride apart. For an engine that reads only the
    // tile's real block (engine::reads_padding() is false): there is no padding here.
    void view_chunk(std::uint64_t kc, const operand_type* a, std::size_t a_stride, const operand_type* b,
                    std::size_t b_stride) {
        m_kc = kc;
        m_view = {a, a_stride, b, b_stride};
    }
    std::uint64_t chunk_length() const { return m_kc; }
    operand_type* a_row(std::size_t i) { return &m_a[i * m_kc]; }      // kc terms of row i
    operand_type* b_row(std::uint64_t k) { return &m_b[k * m_cols]; }  // term k of every column
    // The chunk as the engines read it: after begin_chunk the feeder's own R x kc and kc x C
    // buffers, after view_chunk the operands where they are.
    const operand_type* a() const { return m_view.a; }
    std::size_t a_stride() const { return m_view.a_stride; }  // elements from one A row to the next
    const operand_type* b() const { return m_view.b; }
    std::size_t b_stride() const { return m_view.b_stride; }  // elements from one B term to the next

private:
    std::size_t m_rows;
    std::size_t m_cols;
    std::uint64_t m_kc = 0;
    feed_tables m_tables;
    aligned_vector<operand_type> m_a;  // R x kc: this tile's A rows, zero rows for padding
    aligned_vector<operand_type> m_b;  // kc x C: this tile's B columns, zero columns for padding
    struct view {
        const operand_type* a = nullptr;
        std::size_t a_stride = 0;
        const operand_type* b = nullptr;
        std::size_t b_stride = 0;
    } m_view;
};

SYSTOLIC_EXTERN_TEMPLATE(feeder)

}  // namespace systolic
