// Counts what one array's PEs do for the energy account (action_counts.h): each PE-edge's action and
// the bit toggles of every PE's three registers. Plain C++, one object per job that counts (an
// engine makes it when the job starts, run_options::count_actions), so that a job that does not
// count runs the engines' kernels untouched. Two ways in, which must agree exactly:
//  - stepped_*: the cycle engine calls one after each edge it steps, and the counter reads the
//    registers as they are (what the VCD shows, vcd_observer samples the same accessors);
//  - *_chunk, *_fold: the functional engine calls one per chunk or fold with its operands, and the
//    counter works the same registers' sequences out from the skew rule, without stepping.
//
// The registers, per PE: the row register (the token moving east: A in os, the streamed operand in
// ws and is), the column register (the token moving south: B in os; the stationary register in ws
// and is, which moves south while it is preloaded) and the sum (os: the accumulator; ws, is: the
// partial sum passing south). A register's toggles are the Hamming distance between its value after
// one edge (or clear) and after the next, at its own width (operand_type, accumulator_type). What a
// register holds when no valid token is there is what the engines put there: a bubble is a zero value
// (array_core and stationary_core write operand_type{} with the valid bit clear), so a token stream
// toggles from 0 to its first value and back to 0 after its last, and a valid bit's own transitions
// are not counted. A clear zeroes every register, and its toggles count too (the VCD samples after
// each clear). Each job starts from zero registers: its first step is a clear, which so costs nothing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <vector>

#include "systolic/action_counts.h"
#include "systolic/array_core.h"
#include "systolic/job_names.h"
#include "systolic/number_format.h"
#include "systolic/stationary_core.h"

namespace systolic {

// A register value's bits at its own width (an int8's 8, a bf16's 16), for the Hamming distance.
template <class T>
std::uint64_t register_bits(T v) {
    static_assert(sizeof(T) <= sizeof(std::uint64_t) && std::is_trivially_copyable_v<T>);
    std::uint64_t u = 0;
    std::memcpy(&u, &v, sizeof v);
    return u;
}
template <class T>
std::uint64_t toggles_between(T x, T y) {
    return static_cast<std::uint64_t>(__builtin_popcountll(register_bits(x) ^ register_bits(y)));
}

// Whether a MAC's operand gates it: an integer 0, or a floating-point zero of either sign (a zero
// detector looks at the exponent and mantissa; the sign does not make the product nonzero).
template <class T>
bool operand_is_zero(T v) {
    if constexpr (std::is_integral_v<T>) {
        return v == 0;
    } else {
        const std::uint64_t sign = std::uint64_t{1} << (8 * sizeof(T) - 1);
        return (register_bits(v) & ~sign) == 0;
    }
}

template <class Format>
class action_counter {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    using fold_type = typename stationary_core<Format>::fold;

    action_counter(std::size_t rows, std::size_t cols, dataflow_kind df)
        : m_rows(rows), m_cols(cols), m_df(df), m_row(rows * cols), m_col(rows * cols), m_sum(rows * cols) {}

    const pe_action_counts& pe() const { return m_pe; }
    // The row and column registers by operand: A streams in os and ws and is stationary in is.
    toggle_counts toggles() const {
        if (m_df == dataflow_kind::is) return {m_col_toggles, m_row_toggles, m_sum_toggles};
        return {m_row_toggles, m_col_toggles, m_sum_toggles};
    }

    // A clear step: every register to zero.
    void clear() {
        for (std::size_t p = 0; p < m_row.size(); ++p) {
            m_row_toggles += toggles_between(m_row[p], operand_type{});
            m_col_toggles += toggles_between(m_col[p], operand_type{});
            m_sum_toggles += toggles_between(m_sum[p], accumulator_type{});
        }
        std::fill(m_row.begin(), m_row.end(), operand_type{});
        std::fill(m_col.begin(), m_col.end(), operand_type{});
        std::fill(m_sum.begin(), m_sum.end(), accumulator_type{});
    }

    // ---- the cycle engine: after each stepped edge, the registers as they are.

    // An output-stationary edge: a PE whose two tokens are valid did a MAC.
    void stepped(const array_core<Format>& core) {
        for (std::size_t i = 0, p = 0; i < m_rows; ++i) {
            for (std::size_t j = 0; j < m_cols; ++j, ++p) {
                const auto a = core.a(i, j), b = core.b(i, j);
                count_pe(a.valid && b.valid, a.value, b.value);
                note(m_row[p], a.value, m_row_toggles);
                note(m_col[p], b.value, m_col_toggles);
                note(m_sum[p], core.accumulator(i, j), m_sum_toggles);
            }
        }
    }
    // A weight- or input-stationary edge: a preload edge is every PE's preload; on a stream edge a
    // PE with a valid streamed token did a MAC with its stationary register.
    void stepped(const stationary_core<Format>& core, bool preload) {
        if (preload) m_pe.preload += m_rows * m_cols;
        for (std::size_t i = 0, p = 0; i < m_rows; ++i) {
            for (std::size_t j = 0; j < m_cols; ++j, ++p) {
                const auto a = core.a(i, j);
                const operand_type w = core.weight(i, j);
                if (!preload) count_pe(a.valid, a.value, w);
                note(m_row[p], a.value, m_row_toggles);
                note(m_col[p], w, m_col_toggles);
                note(m_sum[p], core.psum(i, j), m_sum_toggles);
            }
        }
    }

    // ---- the functional engine: whole chunks and folds, from the skew rule.

    // An output-stationary chunk's kc + R + C - 2 edges, A(i, k) = a[i * a_stride + k] for the tile's
    // real rows (i < rows), B(k, j) = b[k * b_stride + j] for its real columns, zero (valid padding)
    // elsewhere. PE(i, j) does its kc MACs on edges i + j .. i + j + kc - 1 and idles on the others;
    // its row register holds row i's terms on those edges and a bubble (0) before and after, its
    // column register column j's, so a row's toggles inside the stream are the same for every PE
    // of the row; the accumulator steps through its partial sums.
    void os_chunk(std::size_t rows, std::size_t cols, std::uint64_t kc, const operand_type* a,
                  std::size_t a_stride, const operand_type* b, std::size_t b_stride, overflow_mode mode) {
        const std::size_t R = m_rows, C = m_cols;
        auto A = [&](std::size_t i, std::uint64_t k) {
            return i < rows ? a[i * a_stride + k] : operand_type{};
        };
        auto B = [&](std::uint64_t k, std::size_t j) {
            return j < cols ? b[k * b_stride + j] : operand_type{};
        };
        // Actions: per term, the nonzero A rows times the nonzero B columns are the random MACs.
        std::uint64_t random = 0;
        for (std::uint64_t k = 0; k < kc; ++k) {
            std::uint64_t nz_a = 0, nz_b = 0;
            for (std::size_t i = 0; i < rows; ++i)
                nz_a += !operand_is_zero(A(i, k));
            for (std::size_t j = 0; j < cols; ++j)
                nz_b += !operand_is_zero(B(k, j));
            random += nz_a * nz_b;
        }
        add_macs(random, std::uint64_t(R) * C * kc, std::uint64_t(R) * C * (R + C - 2));
        // Row and column registers: each stream's inner toggles once, then every PE it passes.
        for (std::size_t i = 0; i < R; ++i) {
            const stream s = stream_of(kc, [&](std::uint64_t k) { return A(i, k); });
            for (std::size_t j = 0; j < C; ++j)
                pass(m_row[i * C + j], s, i + j, m_row_toggles);
        }
        for (std::size_t j = 0; j < C; ++j) {
            const stream s = stream_of(kc, [&](std::uint64_t k) { return B(k, j); });
            for (std::size_t i = 0; i < R; ++i)
                pass(m_col[i * C + j], s, i + j, m_col_toggles);
        }
        // Accumulators: every PE's partial sums in k order, padding PEs too (a float's 0 x inf is NaN).
        with_mode(mode, [&](auto m) {
            constexpr overflow_mode Mode = decltype(m)::value;
            for (std::size_t i = 0; i < R; ++i) {
                for (std::size_t j = 0; j < C; ++j) {
                    accumulator_type& s = m_sum[i * C + j];
                    for (std::uint64_t k = 0; k < kc; ++k) {
                        bool overflowed = false;
                        const accumulator_type next =
                            Format::template mac<Mode>(s, A(i, k), B(k, j), overflowed);
                        m_sum_toggles += toggles_between(s, next);
                        s = next;
                    }
                }
            }
        });
    }

    // A fold's R preload edges: on edge e every stationary register takes the one above's, and row 0
    // takes row R-1-e of the block (zero outside its L x n). So column j's registers see the
    // sequence old(R-1), ..., old(0), W(R-1), ..., W(0), and PE(i, j) the R transitions from old(i)
    // to W(i) of it; the others stand still.
    void preload_fold(const fold_type& f) {
        const std::size_t R = m_rows, C = m_cols;
        m_pe.preload += std::uint64_t(R) * C * R;
        std::vector<operand_type> x(2 * R);
        std::vector<std::uint64_t> before(2 * R);  // before[t]: the toggles of x[0] .. x[t]
        for (std::size_t j = 0; j < C; ++j) {
            for (std::size_t t = 0; t < R; ++t) {
                x[t] = m_col[(R - 1 - t) * C + j];
                x[R + t] = weight(f, R - 1 - t, j);
            }
            before[0] = 0;
            for (std::size_t t = 1; t < 2 * R; ++t)
                before[t] = before[t - 1] + toggles_between(x[t - 1], x[t]);
            for (std::size_t i = 0; i < R; ++i) {
                m_col_toggles += before[2 * R - 1 - i] - before[R - 1 - i];
                m_col[i * C + j] = x[2 * R - 1 - i];
            }
        }
    }

    // A fold's T + R + C - 2 stream edges: row i's streamed tokens s(t, i) (valid zeros for the
    // padding rows i >= L) meet PE(i, j) on edges t + i + j, as in os, and the partial sum of stream
    // row t, which enters row 0 as zero, holds at PE(i, j) on that edge the MACs of rows 0 .. i.
    // Between its stream's edges a sum register holds zero (a sum with bubbles only), apart from
    // PE(R-1, C-1)'s last, which stays until the next fold's first edge or the clear.
    void stream_fold(const fold_type& f, overflow_mode mode) {
        const std::size_t R = m_rows, C = m_cols;
        auto S = [&](std::uint64_t t, std::size_t i) {
            return i < f.l ? f.stream[t * f.stream_t + i * f.stream_i] : operand_type{};
        };
        std::uint64_t random = 0;
        for (std::size_t i = 0; i < R && i < f.l; ++i) {
            std::uint64_t nz_s = 0, nz_w = 0;
            for (std::uint64_t t = 0; t < f.t; ++t)
                nz_s += !operand_is_zero(S(t, i));
            for (std::size_t j = 0; j < C; ++j)
                nz_w += !operand_is_zero(m_col[i * C + j]);
            random += nz_s * nz_w;
        }
        add_macs(random, std::uint64_t(R) * C * f.t, std::uint64_t(R) * C * (R + C - 2));
        for (std::size_t i = 0; i < R; ++i) {
            const stream s = stream_of(f.t, [&](std::uint64_t t) { return S(t, i); });
            for (std::size_t j = 0; j < C; ++j)
                pass(m_row[i * C + j], s, i + j, m_row_toggles);
        }
        // Each PE's sums, stream row by stream row: first, inner toggles, last.
        std::vector<accumulator_type> first(R * C), last(R * C);
        std::vector<std::uint64_t> inner(R * C);
        with_mode(mode, [&](auto m) {
            constexpr overflow_mode Mode = decltype(m)::value;
            for (std::uint64_t t = 0; t < f.t; ++t) {
                for (std::size_t j = 0; j < C; ++j) {
                    accumulator_type s{};
                    for (std::size_t i = 0; i < R; ++i) {
                        bool overflowed = false;
                        s = Format::template mac<Mode>(s, S(t, i), m_col[i * C + j], overflowed);
                        const std::size_t p = i * C + j;
                        if (t == 0)
                            first[p] = s;
                        else
                            inner[p] += toggles_between(last[p], s);
                        last[p] = s;
                    }
                }
            }
        });
        for (std::size_t i = 0; i < R; ++i)
            for (std::size_t j = 0; j < C; ++j) {
                const std::size_t p = i * C + j;
                pass(m_sum[p], basic_stream<accumulator_type>{first[p], inner[p], last[p]}, i + j,
                     m_sum_toggles);
            }
    }

private:
    // A stream of values through one register, on consecutive edges: its first and last values and
    // the toggles between them.
    template <class T>
    struct basic_stream {
        T first;
        std::uint64_t inner;
        T last;
    };
    using stream = basic_stream<operand_type>;

    template <class Get>
    static stream stream_of(std::uint64_t n, Get get) {
        stream s{get(0), 0, get(0)};
        for (std::uint64_t k = 1; k < n; ++k) {
            const operand_type v = get(k);
            s.inner += toggles_between(s.last, v);
            s.last = v;
        }
        return s;
    }

    // A register that holds `reg`, then zero for `lead` edges (the skew), then the stream, then zero
    // for the chunk's remaining R + C - 2 - lead edges: its toggles, and what it holds after.
    template <class T>
    void pass(T& reg, const basic_stream<T>& s, std::size_t lead, std::uint64_t& toggles) const {
        if (lead > 0)
            toggles += toggles_between(reg, T{}) + toggles_between(T{}, s.first);
        else
            toggles += toggles_between(reg, s.first);
        toggles += s.inner;
        if (lead < m_rows + m_cols - 2) {
            toggles += toggles_between(s.last, T{});
            reg = T{};
        } else {
            reg = s.last;
        }
    }

    // A fold's stationary block as the preload feeds it: W(r, j), zero outside its L x n.
    static operand_type weight(const fold_type& f, std::size_t r, std::size_t j) {
        return r < f.l && j < f.n ? f.weight[r * f.weight_i + j * f.weight_j] : operand_type{};
    }

    void add_macs(std::uint64_t random, std::uint64_t valid, std::uint64_t idle) {
        m_pe.mac_random += random;
        m_pe.mac_gated += valid - random;
        m_pe.idle += idle;
    }

    template <class F>
    static void with_mode(overflow_mode mode, F f) {
        if (mode == overflow_mode::saturate)
            f(std::integral_constant<overflow_mode, overflow_mode::saturate>{});
        else
            f(std::integral_constant<overflow_mode, overflow_mode::wrap>{});
    }

    void count_pe(bool valid, operand_type a, operand_type b) {
        if (!valid)
            ++m_pe.idle;
        else if (operand_is_zero(a) || operand_is_zero(b))
            ++m_pe.mac_gated;
        else
            ++m_pe.mac_random;
    }
    template <class T>
    static void note(T& reg, T now, std::uint64_t& toggles) {
        toggles += toggles_between(reg, now);
        reg = now;
    }

    std::size_t m_rows, m_cols;
    dataflow_kind m_df;
    pe_action_counts m_pe;
    std::uint64_t m_row_toggles = 0, m_col_toggles = 0, m_sum_toggles = 0;
    // What each PE's registers held after the last edge or clear, row-major.
    std::vector<operand_type> m_row, m_col;
    std::vector<accumulator_type> m_sum;
};

}  // namespace systolic
