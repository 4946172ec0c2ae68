// What every stepped grid of R x C PEs has, whatever its dataflow: its shape, the edges it has
// stepped, the overflow mode, and per PE the terms consumed and the accumulation steps that
// overflowed since the last clear (row-major, row stride C), with the questions the controller and
// its watchdog ask of them. array_core (os) and stationary_core (ws, is) build on it; their edge
// kernels update the counters in place.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include "systolic/aligned_vector.h"
#include "systolic/bit_count.h"
#include "systolic/number_format.h"

// Baseline x86-64 has no vector multiply for the wider formats, so GCC leaves the MAC loops
// scalar. Where ifuncs exist, a kernel is built twice, with an AVX2 clone (x86-64-v3), and the
// loader picks one when the program loads.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define SYSTOLIC_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define SYSTOLIC_VECTOR_CLONES
#endif

namespace systolic {

// Called after each edge with the edge's index in its step (an observer's hook).
class edge_callback {
public:
    virtual void after_edge(std::uint64_t edge) = 0;

protected:
    ~edge_callback() = default;
};

// What the edge kernels of a job that counts its actions add up as they step (action_counter.h
// turns it into the energy account's PE actions and toggles). Each register's toggles are the
// Hamming distances between its values on successive edges, read off the cores' windows: the row
// register is the token moving east, the column register the one moving south (B in os; in ws and
// is the stationary weight, which moves only to preload), the sum the accumulator (os) or the
// partial sum passing south (ws, is).
struct edge_tally {
    std::uint64_t mac_edges = 0;      // advance and stream edges
    std::uint64_t preload_edges = 0;  // ws and is: every PE preloads
    std::uint64_t valid = 0;          // PE-edges with a valid MAC
    std::uint64_t random = 0;         // ... both of whose operands are nonzero
    std::uint64_t row_toggles = 0, col_toggles = 0, sum_toggles = 0;
};

// What a counting run of edges adds up (edge_tally), kept apart until it ends. Both cores keep
// their A tokens in a window that slides one slot per edge (array_core.h), so a token's value
// one edge before is in the next slot up, except where a west input overwrote that: `fix`
// corrects those (west_slots).
struct span_tally {
    std::uint64_t valid = 0, random = 0, a_toggles = 0, b_toggles = 0, sum_toggles = 0;
    std::int64_t fix = 0;
    void add_to(edge_tally& t, std::uint64_t edges) const {
        t.mac_edges += edges;
        t.valid += valid;
        t.random += random;
        t.row_toggles += std::uint64_t(std::int64_t(a_toggles) + fix);
        t.col_toggles += b_toggles;
        t.sum_toggles += sum_toggles;
    }
};

// The slots of an edge's west inputs (PE(i, 0), slot ah + i * C) for the rows r0 .. r1 - 1 that the
// edge runs next, counting: each held PE(i - 1, C - 1)'s token of one edge before, which the MAC
// pass would read as such. So `save` keeps them before the inputs are written, and `fix`, after,
// puts right the toggles of rows r0 + 1 .. r1 - 1's left neighbours (the block above ran this edge
// before row r0's input came). A block has at most MaxRows rows.
template <class T, std::size_t MaxRows>
struct west_slots {
    T before[MaxRows];
    void save(const T* a, std::size_t ah, std::size_t cols, std::size_t r0, std::size_t r1) {
        for (std::size_t i = r0 + 1; i < r1; ++i)
            before[i - r0] = a[ah + i * cols];
    }
    void fix(const T* a, std::size_t ah, std::size_t cols, std::size_t r0, std::size_t r1,
             span_tally& counted) const {
        for (std::size_t i = r0 + 1; i < r1; ++i) {
            const T east = a[ah + i * cols - 1];  // PE(i - 1, C - 1)'s token now
            counted.fix +=
                std::int64_t(toggles_between(east, before[i - r0])) - toggles_between(east, a[ah + i * cols]);
        }
    }
};

// A PE that has not consumed exactly the expected number of terms when it should have.
struct stuck_pe {
    std::size_t row = 0;
    std::size_t col = 0;
    std::uint64_t consumed = 0;
    std::size_t array = 0;  // which array, where an engine steps several (a fabric's index)
};

// The bytes a heap block of `bytes` takes with glibc's malloc: an 8-byte header, 16-byte
// alignment, 32 bytes at least (none for an empty vector).
inline std::uint64_t heap_block_bytes(std::uint64_t bytes) {
    return bytes == 0 ? 0 : std::max<std::uint64_t>(32, (bytes + 8 + 15) / 16 * 16);
}

template <class Format>
class stepped_grid {
public:
    using operand_type = typename Format::operand_type;

    std::size_t rows() const { return m_rows; }
    std::size_t cols() const { return m_cols; }

    overflow_mode overflow() const { return m_overflow; }
    void set_overflow(overflow_mode mode) { m_overflow = mode; }

    // Edges stepped since the last clear.
    std::uint64_t edges() const { return m_edges; }
    std::uint64_t consumed(std::size_t i, std::size_t j) const { return m_consumed[i * m_cols + j]; }

    // True when every PE has consumed exactly `terms` terms: the tile (or chunk, or fold) may drain.
    bool complete(std::uint64_t terms) const {
        return std::all_of(m_consumed.begin(), m_consumed.end(),
                           [terms](std::uint32_t c) { return c == terms; });
    }
    // The PEs that have not, in row-major order.
    std::vector<stuck_pe> stuck(std::uint64_t terms) const {
        std::vector<stuck_pe> out;
        for (std::size_t idx = 0; idx < m_consumed.size(); ++idx) {
            if (m_consumed[idx] != terms) out.push_back({idx / m_cols, idx % m_cols, m_consumed[idx]});
        }
        return out;
    }

    // From here on the edge kernels add what they do to *t (null: they count nothing, and run the
    // kernels that do not look).
    void tally_into(edge_tally* t) { m_tally = t; }

    // Terms consumed by all PEs since the last clear (the MACs executed, padding included), and by
    // the top-left rows x cols block of PEs only (the MACs that belong to real outputs).
    std::uint64_t macs() const { return macs_in(m_rows, m_cols); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const { return sum_in(m_consumed, rows, cols); }
    // Accumulation steps that overflowed (wrapped or saturated) since the last clear, in the block.
    std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const {
        return sum_in(m_overflows, rows, cols);
    }

protected:
    stepped_grid(std::size_t rows, std::size_t cols, const char* kind)
        : m_rows(rows), m_cols(cols), m_consumed(rows * cols), m_overflows(rows * cols) {
        if (rows == 0 || cols == 0)
            throw std::invalid_argument(std::string(kind) + ": the array needs at least one PE");
    }
    ~stepped_grid() = default;

    // What the counters allocate (each vector is one heap block).
    static std::uint64_t heap_bytes(std::size_t rows, std::size_t cols) {
        return 2 * heap_block_bytes(std::uint64_t(rows) * cols * sizeof(std::uint32_t));
    }

    void clear_consumed() { std::fill(m_consumed.begin(), m_consumed.end(), 0); }
    void clear_overflows() { std::fill(m_overflows.begin(), m_overflows.end(), 0); }

    // The largest |value| in `rows` runs of `len` operands, `stride` apart (integer formats): what
    // the overflow bounds are made of. In the operand's own width, unsigned (|min| fits), so that it
    // vectorises.
    SYSTOLIC_VECTOR_CLONES static std::uint64_t max_magnitude(const operand_type* v, std::size_t len,
                                                              std::size_t rows, std::size_t stride) {
        if constexpr (Format::is_integer) {
            using magnitude = std::make_unsigned_t<operand_type>;
            magnitude m = 0;
            for (std::size_t r = 0; r < rows; ++r, v += stride) {
                for (std::size_t i = 0; i < len; ++i) {
                    const auto u = static_cast<magnitude>(v[i]);
                    m = std::max<magnitude>(m,
                                            std::min<magnitude>(u, magnitude(0 - u)));  // |v[i]|, no branch
                }
            }
            return m;
        } else {  // never called: floats have no overflow bound
            (void)v, (void)len, (void)rows, (void)stride;
            return 0;
        }
    }

    std::size_t m_rows;
    std::size_t m_cols;
    aligned_vector<std::uint32_t> m_consumed;   // terms consumed since the last clear
    aligned_vector<std::uint32_t> m_overflows;  // accumulation steps that overflowed since the last clear
    std::uint64_t m_edges = 0;
    overflow_mode m_overflow = overflow_mode::wrap;
    edge_tally* m_tally = nullptr;

private:
    std::uint64_t sum_in(const aligned_vector<std::uint32_t>& v, std::size_t rows, std::size_t cols) const {
        std::uint64_t sum = 0;
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j)
                sum += v[i * m_cols + j];
        return sum;
    }
};

}  // namespace systolic
