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
#include "systolic/bit_count.h"
#include "systolic/job_names.h"
#include "systolic/number_format.h"
#include "systolic/stationary_core.h"

namespace systolic {

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
        // Per term k, the nonzero A rows times the nonzero B columns are the random MACs; each row's
        // and each column's stream toggles once inside itself, then every PE it passes (below).
        m_row_inner.assign(R, 0);
        m_col_inner.assign(C, 0);
        m_nonzero.assign(kc, 0);
        std::uint64_t random = 0;
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            constexpr bool Native = decltype(native)::value;
            std::uint32_t* __restrict nz_a = m_nonzero.data();
            for (std::size_t i = 0; i < rows; ++i) {
                const operand_type* __restrict x = a + i * a_stride;
                std::uint32_t t = 0;
                for (std::uint64_t k = 0; k < kc; ++k)
                    nz_a[k] += !operand_is_zero(x[k]);
                for (std::uint64_t k = 1; k < kc; ++k)
                    t += toggles_between<Native>(x[k - 1], x[k]);
                m_row_inner[i] = t;
            }
            std::uint32_t* __restrict inner = m_col_inner.data();
            for (std::uint64_t k = 0; k < kc; ++k) {
                const operand_type* __restrict y = b + k * b_stride;
                std::uint32_t nz_b = 0;
                for (std::size_t j = 0; j < cols; ++j)
                    nz_b += !operand_is_zero(y[j]);
                random += std::uint64_t(nz_a[k]) * nz_b;
                if (k == 0) continue;
                const operand_type* __restrict up = y - b_stride;
                for (std::size_t j = 0; j < cols; ++j)
                    inner[j] += toggles_between<Native>(up[j], y[j]);
            }
        });
        add_macs(random, std::uint64_t(R) * C * kc, std::uint64_t(R) * C * (R + C - 2));
        // A padding row or column streams valid zeros.
        for (std::size_t i = 0; i < R; ++i) {
            const stream s =
                i < rows ? stream{a[i * a_stride], m_row_inner[i], a[i * a_stride + kc - 1]} : stream{};
            for (std::size_t j = 0; j < C; ++j)
                pass(m_row[i * C + j], s, i + j, m_row_toggles);
        }
        for (std::size_t j = 0; j < C; ++j) {
            const stream s = j < cols ? stream{b[j], m_col_inner[j], b[(kc - 1) * b_stride + j]} : stream{};
            for (std::size_t i = 0; i < R; ++i)
                pass(m_col[i * C + j], s, i + j, m_col_toggles);
        }
        // Accumulators: every PE's partial sums in k order (sums_of_chunk).
        m_sum_toggles += sums_of_chunk(mode, R, C, rows, cols, kc, a, a_stride, b, b_stride, m_sum.data());
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
        m_first.resize(R * C);
        m_last.resize(R * C);
        const std::uint64_t inner = sums_of_fold(mode, R, C, f, m_col.data(), m_first.data(), m_last.data());
        m_sum_toggles += inner;
        for (std::size_t i = 0; i < R; ++i)
            for (std::size_t j = 0; j < C; ++j) {
                const std::size_t p = i * C + j;
                pass(m_sum[p], basic_stream<accumulator_type>{m_first[p], 0, m_last[p]}, i + j,
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

    // The toggles of the R x C accumulators `sum` (row-major) over an output-stationary chunk, which
    // they leave holding its sums: PE(i, j) adds A(i, k) x B(k, j) for k = 0 .. kc - 1 (zero outside
    // the tile's rows x cols). Row by row and term by term, so that the inner loop runs along a row
    // of B and a row of sums, vectorised; integer padding adds zeros, which change nothing, so only
    // floats (0 x inf is NaN) step it.
    static std::uint64_t sums_of_chunk(overflow_mode mode, std::size_t R, std::size_t C, std::size_t rows,
                                       std::size_t cols, std::uint64_t kc, const operand_type* a,
                                       std::size_t a_stride, const operand_type* b, std::size_t b_stride,
                                       accumulator_type* sum) {
        std::uint64_t toggles = 0;
        const std::size_t real_rows = Format::is_integer ? rows : R;
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            with_mode(
                mode, [&](auto m) __attribute__((always_inline)) {
                    constexpr bool Native = decltype(native)::value;
                    constexpr overflow_mode Mode = decltype(m)::value;
                    for (std::size_t i = 0; i < real_rows; ++i) {
                        accumulator_type* __restrict s = sum + i * C;
                        for (std::uint64_t k = 0; k < kc; ++k) {
                            const operand_type x = i < rows ? a[i * a_stride + k] : operand_type{};
                            const operand_type* __restrict y = b + k * b_stride;
                            std::uint32_t t = 0;  // at most 32 x C
                            for (std::size_t j = 0; j < cols; ++j)
                                t += step<Mode, Native>(s[j], x, y[j]);
                            if constexpr (!Format::is_integer)
                                for (std::size_t j = cols; j < C; ++j)
                                    t += step<Mode, Native>(s[j], x, operand_type{});
                            toggles += t;
                        }
                    }
                });
        });
        return toggles;
    }

    // The sums of a stationary fold's stream rows, PE by PE: w holds the stationary registers
    // (R x C); row t's sum enters row 0 as zero and PE(i, j) adds S(t, i) x w(i, j). Leaves each
    // PE's sum of stream row 0 in first and of the last row in last, and returns the toggles between
    // successive rows' sums at every PE.
    static std::uint64_t sums_of_fold(overflow_mode mode, std::size_t R, std::size_t C, const fold_type& f,
                                      const operand_type* w, accumulator_type* first,
                                      accumulator_type* last) {
        std::uint64_t toggles = 0;
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            with_mode(
                mode, [&](auto m) __attribute__((always_inline)) {
                    constexpr bool Native = decltype(native)::value;
                    constexpr overflow_mode Mode = decltype(m)::value;
                    for (std::uint64_t t = 0; t < f.t; ++t) {
                        accumulator_type* out = t == 0 ? first : last;
                        // Row i's sums are row i - 1's plus its products; row 0's, zero's. (Row t = 0's
                        // toggles, against what first held, are not counted.)
                        std::uint32_t n = 0;
                        for (std::size_t i = 0; i < R; ++i) {
                            const operand_type x =
                                i < f.l ? f.stream[t * f.stream_t + i * f.stream_i] : operand_type{};
                            const operand_type* __restrict y = w + i * C;
                            accumulator_type* __restrict row = out + i * C;
                            if (i == 0) {
                                for (std::size_t j = 0; j < C; ++j)
                                    n += put<Native>(row[j], sum_step<Mode>(accumulator_type{}, x, y[j]));
                            } else {
                                const accumulator_type* __restrict above = out + (i - 1) * C;
                                for (std::size_t j = 0; j < C; ++j)
                                    n += put<Native>(row[j], sum_step<Mode>(above[j], x, y[j]));
                            }
                        }
                        if (t > 0) toggles += n;
                        if (t == 0) std::copy(first, first + R * C, last);
                    }
                });
        });
        return toggles;
    }

    // One accumulation step (its overflows are the engine's to count), and one of a sum register:
    // its new value, and the bits that toggled.
    template <overflow_mode Mode>
    static inline __attribute__((always_inline)) accumulator_type sum_step(accumulator_type s, operand_type x,
                                                                           operand_type y) {
        bool overflowed = false;
        return Format::template mac<Mode>(s, x, y, overflowed);
    }
    template <overflow_mode Mode, bool Native>
    static inline __attribute__((always_inline)) std::uint32_t step(accumulator_type& s, operand_type x,
                                                                    operand_type y) {
        return put<Native>(s, sum_step<Mode>(s, x, y));
    }
    // A register takes a new value: the bits that toggled.
    template <bool Native, class T>
    static inline __attribute__((always_inline)) std::uint32_t put(T& reg, T next) {
        const std::uint32_t t = toggles_between<Native>(reg, next);
        reg = next;
        return t;
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
    static inline __attribute__((always_inline)) void with_mode(overflow_mode mode, F f) {
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
    // Scratch: os_chunk's streams' inner toggles and nonzero A terms per k, stream_fold's sums.
    std::vector<std::uint32_t> m_row_inner, m_col_inner, m_nonzero;
    std::vector<accumulator_type> m_first, m_last;
};

}  // namespace systolic
