// Counts what one array's PEs do for the energy account (action_counts.h): each PE-edge's action and
// the bit toggles of every PE's three registers. Plain C++, one object per job that counts (an
// engine makes it when the job starts, run_options::count_actions), so that a job that does not
// count runs the engines' kernels untouched. Two ways in, which must agree exactly:
//  - stepped: the cycle engine's cores add up, in their edge kernels, what each edge does to the
//    registers as they are (an edge_tally, stepped_grid.h; what the VCD shows: vcd_observer samples
//    the same registers), and clear_registers counts a clear from the registers it zeroes;
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

    pe_action_counts pe() const {
        const std::uint64_t pes = std::uint64_t(m_rows) * m_cols;
        pe_action_counts c = m_pe;
        c.mac_random += m_stepped.random;
        c.mac_gated += m_stepped.valid - m_stepped.random;
        c.idle += pes * m_stepped.mac_edges - m_stepped.valid;
        c.preload += pes * m_stepped.preload_edges;
        return c;
    }
    // The row and column registers by operand: A streams in os and ws and is stationary in is.
    toggle_counts toggles() const {
        const std::uint64_t row = m_row_toggles + m_stepped.row_toggles,
                            col = m_col_toggles + m_stepped.col_toggles,
                            sum = m_sum_toggles + m_stepped.sum_toggles;
        if (m_df == dataflow_kind::is) return {col, row, sum};
        return {row, col, sum};
    }

    // What the cycle engine's cores add to as they step (stepped_grid::tally_into).
    edge_tally* stepped() { return &m_stepped; }

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

    // ---- the cycle engine: a clear, from the registers it zeroes (before it does).

    void clear_registers(const array_core<Format>& core) {
        const array_core<Format>* one[] = {&core};
        clear_registers(one);
    }
    void clear_registers(const stationary_core<Format>& core) {
        if (first_clear()) return;
        count_clear(core.rows(), core.cols(), [&](std::size_t i, std::size_t j) {
            return registers{core.a(i, j).value, core.weight(i, j), core.psum(i, j)};
        });
    }
    // A clear of several arrays at once (a fabric's): the registers of each.
    template <class Cores>
    void clear_registers(const Cores& cores) {
        if (first_clear()) return;
        for (const array_core<Format>* core : cores)
            count_clear(core->rows(), core->cols(), [&](std::size_t i, std::size_t j) {
                return registers{core->a(i, j).value, core->b(i, j).value, core->accumulator(i, j)};
            });
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
        // Per row i < L: its stream's nonzero terms and inner toggles, stepping along whichever of t
        // and i is contiguous (ws: i, is: t); rows from L on stream valid zeros.
        const std::size_t L = std::min<std::size_t>(R, f.l);
        m_nonzero.assign(L, 0);
        m_row_inner.assign(L, 0);
        with_counting_path([&](auto native) __attribute__((always_inline)) {
            constexpr bool Native = decltype(native)::value;
            std::uint32_t* __restrict nz = m_nonzero.data();
            std::uint32_t* __restrict inner = m_row_inner.data();
            const operand_type* x = f.stream;
            if (f.stream_i == 1) {
                for (std::uint64_t t = 0; t < f.t; ++t) {
                    const operand_type* __restrict row = x + t * f.stream_t;
                    for (std::size_t i = 0; i < L; ++i)
                        nz[i] += !operand_is_zero(row[i]);
                    if (t == 0) continue;
                    const operand_type* __restrict up = row - f.stream_t;
                    for (std::size_t i = 0; i < L; ++i)
                        inner[i] += toggles_between<Native>(up[i], row[i]);
                }
            } else {
                for (std::size_t i = 0; i < L; ++i) {
                    const operand_type* col = x + i * f.stream_i;
                    std::uint32_t n = 0, t_in = 0;
                    for (std::uint64_t t = 0; t < f.t; ++t)
                        n += !operand_is_zero(col[t * f.stream_t]);
                    for (std::uint64_t t = 1; t < f.t; ++t)
                        t_in += toggles_between<Native>(col[(t - 1) * f.stream_t], col[t * f.stream_t]);
                    nz[i] = n;
                    inner[i] = t_in;
                }
            }
        });
        std::uint64_t random = 0;
        for (std::size_t i = 0; i < L; ++i) {
            std::uint64_t nz_w = 0;
            for (std::size_t j = 0; j < C; ++j)
                nz_w += !operand_is_zero(m_col[i * C + j]);
            random += m_nonzero[i] * nz_w;
        }
        add_macs(random, std::uint64_t(R) * C * f.t, std::uint64_t(R) * C * (R + C - 2));
        for (std::size_t i = 0; i < R; ++i) {
            const stream s = i < L ? stream{f.stream[i * f.stream_i], m_row_inner[i],
                                            f.stream[(f.t - 1) * f.stream_t + i * f.stream_i]}
                                   : stream{};
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
    struct registers {
        operand_type row, col;
        accumulator_type sum;
    };
    // The job's first clear finds what the last job left: it counts from zero registers, as the
    // functional engine's shadows start.
    bool first_clear() {
        const bool first = !m_cleared;
        m_cleared = true;
        return first;
    }
    template <class Get>
    void count_clear(std::size_t rows, std::size_t cols, Get get) {
        for (std::size_t i = 0; i < rows; ++i)
            for (std::size_t j = 0; j < cols; ++j) {
                const registers r = get(i, j);
                m_row_toggles += toggles_between(r.row, operand_type{});
                m_col_toggles += toggles_between(r.col, operand_type{});
                m_sum_toggles += toggles_between(r.sum, accumulator_type{});
            }
    }

    // A stream of values through one register, on consecutive edges: its first and last values and
    // the toggles between them.
    template <class T>
    struct basic_stream {
        T first;
        std::uint64_t inner;
        T last;
    };
    using stream = basic_stream<operand_type>;

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
    // the tile's rows x cols). Row by row, a block of `block` columns at a time (block_sums), whose
    // sums and toggles stay in vector registers for the whole chunk; integer padding adds zeros,
    // which change nothing, so only floats (0 x inf is NaN) step it.
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
                        const operand_type* x = a + i * a_stride;
                        accumulator_type* s = sum + i * C;
                        std::size_t j = 0;
                        if (i < rows) {  // (a padding row's terms are zeros: below)
                            for (; j + block <= cols; j += block)
                                toggles += block_sums<Mode, Native, block>(kc, x, b + j, b_stride, s + j);
                            for (; j + block / 2 <= cols; j += block / 2)
                                toggles += block_sums<Mode, Native, block / 2>(kc, x, b + j, b_stride, s + j);
                        }
                        for (std::uint64_t k = 0; k < kc; ++k) {
                            const operand_type xk = i < rows ? x[k] : operand_type{};
                            const operand_type* __restrict y = b + k * b_stride;
                            std::uint32_t t = 0;  // at most 64 x C
                            for (std::size_t jj = j; jj < cols; ++jj)
                                t += step<Mode, Native>(s[jj], xk, y[jj]);
                            if constexpr (!Format::is_integer)
                                for (std::size_t jj = cols; jj < C; ++jj)
                                    t += step<Mode, Native>(s[jj], xk, operand_type{});
                            toggles += t;
                        }
                    }
                });
        });
        return toggles;
    }

    // W sums s[0 .. W) through kc terms x[k] * y[k * y_stride + j], in k order:
    // a fixed width, which GCC keeps in vector registers across the k loop (narrower than a few
    // vectors it leaves in memory, wider it spills).
    static constexpr std::size_t block = 64;
    template <overflow_mode Mode, bool Native, std::size_t W>
    static inline __attribute__((always_inline)) std::uint64_t block_sums(std::uint64_t kc,
                                                                          const operand_type* x,
                                                                          const operand_type* y,
                                                                          std::size_t y_stride,
                                                                          accumulator_type* s_out) {
        accumulator_type s[W];
        std::uint32_t t[W];  // at most 64 x kc each
        for (std::size_t j = 0; j < W; ++j) {
            s[j] = s_out[j];
            t[j] = 0;
        }
        for (std::uint64_t k = 0; k < kc; ++k) {
            const operand_type xk = x[k];
            const operand_type* yk = y + k * y_stride;
            for (std::size_t j = 0; j < W; ++j)
                t[j] += step<Mode, Native>(s[j], xk, yk[j]);
        }
        std::uint64_t toggles = 0;
        for (std::size_t j = 0; j < W; ++j) {
            s_out[j] = s[j];
            toggles += t[j];
        }
        return toggles;
    }

    // The sums of a stationary fold's stream rows, PE by PE: w holds the stationary registers
    // (R x C); row t's sum enters row 0 as zero and PE(i, j) adds S(t, i) x w(i, j). Leaves each
    // PE's sum of stream row 0 in first and of the last row in last, and returns the toggles between
    // successive rows' sums at every PE. Stream row by stream row, a block of columns at a time
    // (fold_block).
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
                        // Row t = 0's toggles, against what first held, are not counted.
                        accumulator_type* out = t == 0 ? first : last;
                        std::uint64_t n = 0;
                        std::size_t j = 0;
                        for (; j + block <= C; j += block)
                            n += fold_block<Mode, Native, block>(R, C, f, t, w + j, out + j);
                        for (; j + block / 2 <= C; j += block / 2)
                            n += fold_block<Mode, Native, block / 2>(R, C, f, t, w + j, out + j);
                        for (; j < C; ++j)
                            n += fold_block<Mode, Native, 1>(R, C, f, t, w + j, out + j);
                        if (t > 0) toggles += n;
                        if (t == 0) std::copy(first, first + R * C, last);
                    }
                });
        });
        return toggles;
    }

    // Stream row t's sums down W columns: each PE's register takes the sum from the one above plus
    // its product (row 0's from zero), its toggles against what out held (that PE's sum of the row
    // before), and out takes it. The sums passing down stay in vector registers.
    template <overflow_mode Mode, bool Native, std::size_t W>
    static inline __attribute__((always_inline)) std::uint64_t fold_block(std::size_t R, std::size_t C,
                                                                          const fold_type& f, std::uint64_t t,
                                                                          const operand_type* w,
                                                                          accumulator_type* out) {
        accumulator_type s[W];
        std::uint32_t n[W];  // at most 64 x R each
        for (std::size_t j = 0; j < W; ++j) {
            s[j] = accumulator_type{};
            n[j] = 0;
        }
        for (std::size_t i = 0; i < R; ++i) {
            const operand_type x = i < f.l ? f.stream[t * f.stream_t + i * f.stream_i] : operand_type{};
            const operand_type* __restrict wi = w + i * C;
            accumulator_type* __restrict o = out + i * C;
            for (std::size_t j = 0; j < W; ++j) {
                s[j] = sum_step<Mode>(s[j], x, wi[j]);
                n[j] += toggles_between<Native>(o[j], s[j]);
                o[j] = s[j];
            }
        }
        std::uint64_t toggles = 0;
        for (std::size_t j = 0; j < W; ++j)
            toggles += n[j];
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

    std::size_t m_rows, m_cols;
    dataflow_kind m_df;
    pe_action_counts m_pe;
    std::uint64_t m_row_toggles = 0, m_col_toggles = 0, m_sum_toggles = 0;
    edge_tally m_stepped;  // the cycle engine's
    bool m_cleared = false;
    // What each PE's registers held after the last edge or clear, row-major.
    std::vector<operand_type> m_row, m_col;
    std::vector<accumulator_type> m_sum;
    // Scratch: the streams' inner toggles and nonzero terms (os_chunk: A's per k; stream_fold: per
    // row), stream_fold's sums.
    std::vector<std::uint32_t> m_row_inner, m_col_inner, m_nonzero;
    std::vector<accumulator_type> m_first, m_last;
};

}  // namespace systolic
