// The functional engine: computes each chunk's sums with gemm_accumulate, a blocked, vectorised
// loop nest that keeps every output's accumulation in k order with the format's mac rule, so C is
// the same bit for bit as stepping the array. It does not step edges: its counters come from the
// counting rules (every PE consumes the chunk's kc terms over kc + R + C - 2 edges), and the JSON
// report says so ("counts": "modelled"). Only the real rows x cols block of a tile is computed;
// the padding PEs' sums are zero, as the array's are. A weight- or input-stationary fold is the
// same loop nest over the fold's L terms into a scratch block, stored into or added to the tile's
// accumulators as the stepped array's bottom row does. A job that counts its actions
// (run_options::count_actions) has them worked out per chunk or fold, on the call that issues its
// edge 0, by action_counter's rules: the same counts the cycle engine reads off its registers.
#pragma once

#include <algorithm>
#include <vector>

#include "systolic/engine.h"
#include "systolic/format_instances.h"
#include "systolic/gemm_kernel.h"

namespace systolic {

template <class Format>
class functional_engine final : public engine<Format> {
public:
    using typename engine<Format>::accumulator_type;

    functional_engine(std::size_t rows, std::size_t cols) : engine<Format>(rows, cols), m_acc(rows * cols) {}
    explicit functional_engine(std::size_t n) : functional_engine(n, n) {}

    engine_kind kind() const override { return engine_kind::functional; }
    bool reads_padding() const override { return false; }
    void set_overflow(overflow_mode mode) override { m_overflow = mode; }
    void clear() override {
        clear_accumulators();
        m_edges = m_terms = 0;
        if (this->m_counter) this->m_counter->clear();
    }
    void clear_accumulators() override {
        std::fill(m_acc.begin(), m_acc.end(), accumulator_type{});
        m_overflows = m_partial_overflows = 0;
    }

    bool supports(dataflow_kind) const override { return true; }
    void set_dataflow(dataflow_kind) override {}
    void preload(const typename engine<Format>::fold_type& f, std::uint64_t first, std::uint64_t count,
                 edge_callback*) override {
        if (this->m_counter && first == 0 && count > 0) this->m_counter->preload_fold(f);
        m_edges += count;
    }
    void stream(const typename engine<Format>::fold_type& f, std::uint64_t first, std::uint64_t count,
                edge_callback*) override {
        if (first == 0 && count > 0) {  // the call that issues edge 0
            run_fold(f);
            m_terms += f.t;
            if (this->m_counter) this->m_counter->stream_fold(f, m_overflow);
        }
        m_edges += count;
    }
    std::uint64_t partial_overflows() const override { return m_partial_overflows; }

    void advance(const feeder<Format>& in, const tile& t, std::uint64_t first, std::uint64_t count,
                 edge_callback*) override {
        const std::size_t cols = this->m_cols;
        if (first == 0 && count > 0) {  // the call that issues edge 0
            const std::uint64_t kc = in.chunk_length();
            m_overflows += gemm_accumulate<Format>(t.rows, t.cols, kc, in.a(), in.a_stride(), in.b(),
                                                   in.b_stride(), m_acc.data(), cols, m_overflow);
            m_terms += kc;
            if (this->m_counter)
                this->m_counter->os_chunk(t.rows, t.cols, kc, in.a(), in.a_stride(), in.b(), in.b_stride(),
                                          m_overflow);
        }
        m_edges += count;
    }

    const accumulator_type* accumulators() const override { return m_acc.data(); }
    std::uint64_t edges() const override { return m_edges; }
    std::uint64_t macs() const override { return macs_in(this->m_rows, this->m_cols); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const override {
        return std::uint64_t(rows) * cols * m_terms;
    }
    std::uint64_t overflows_in(std::size_t, std::size_t) const override { return m_overflows; }
    bool complete(std::uint64_t terms) const override { return m_terms == terms; }
    std::vector<stuck_pe> stuck(std::uint64_t terms) const override {
        if (complete(terms)) return {};
        std::vector<stuck_pe> out;
        for (std::size_t i = 0; i < this->m_rows * this->m_cols; ++i)
            out.push_back({i / this->m_cols, i % this->m_cols, m_terms});
        return out;
    }

private:
    // The fold's sums, each from zero in k order, as a T x n (ws: rows of A by columns of B) or
    // n x T (is: the transposed views, so rows of A by columns of B again) block of C, then into
    // the accumulators. Either way an output's sum is that of the stepped array's column of PEs.
    void run_fold(const typename engine<Format>::fold_type& f) {
        // ws: the stream is A's rows and the block B's, the gemm's own form; is: B's rows stream
        // past a block of A, read through the transposed views (either fits when T = 1 and L = 1).
        const bool transposed = !(f.stream_i == 1 && f.weight_j == 1);
        const std::size_t rows = transposed ? f.n : f.t, cols = transposed ? f.t : f.n;
        m_fold.assign(rows * cols, accumulator_type{});
        m_overflows += transposed ? gemm_accumulate<Format>(rows, cols, f.l, f.weight, f.weight_j, f.stream,
                                                            f.stream_i, m_fold.data(), cols, m_overflow)
                                  : gemm_accumulate<Format>(rows, cols, f.l, f.stream, f.stream_t, f.weight,
                                                            f.weight_i, m_fold.data(), cols, m_overflow);
        for (std::uint64_t t = 0; t < f.t; ++t) {
            for (std::size_t j = 0; j < f.n; ++j) {
                const accumulator_type v = transposed ? m_fold[j * cols + t] : m_fold[t * cols + j];
                accumulator_type& out = f.acc[t * f.acc_t + j * f.acc_j];
                if (!f.combine) {
                    out = v;
                    continue;
                }
                bool overflowed = false;
                out = add<Format>(m_overflow, out, v, overflowed);
                m_partial_overflows += overflowed;
            }
        }
    }

    std::vector<accumulator_type> m_acc;   // R x C, row-major
    std::vector<accumulator_type> m_fold;  // a stationary fold's sums
    overflow_mode m_overflow = overflow_mode::wrap;
    std::uint64_t m_edges = 0;              // edges issued since the last clear
    std::uint64_t m_terms = 0;              // terms every PE holds since the last clear
    std::uint64_t m_overflows = 0;          // overflowed accumulations in the real block since the last clear
    std::uint64_t m_partial_overflows = 0;  // stationary folds' additions that overflowed
};

SYSTOLIC_EXTERN_TEMPLATE(functional_engine)

}  // namespace systolic
