// The functional engine: computes each chunk's sums with gemm_accumulate, a blocked, vectorised
// loop nest that keeps every output's accumulation in k order with the format's mac rule, so C is
// the same bit for bit as stepping the array. It does not step edges: its counters come from the
// counting rules (every PE consumes the chunk's kc terms over kc + R + C - 2 edges), and the JSON
// report says so ("counts": "modelled"). Only the real rows x cols block of a tile is computed;
// the padding PEs' sums are zero, as the array's are.
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
    }
    void clear_accumulators() override {
        std::fill(m_acc.begin(), m_acc.end(), accumulator_type{});
        m_overflows = 0;
    }

    void advance(const feeder<Format>& in, const tile& t, std::uint64_t first, std::uint64_t count,
                 edge_callback*) override {
        const std::size_t cols = this->m_cols;
        if (first == 0 && count > 0) {  // the call that issues edge 0
            const std::uint64_t kc = in.chunk_length();
            m_overflows += gemm_accumulate<Format>(t.rows, t.cols, kc, in.a(), in.a_stride(), in.b(),
                                                   in.b_stride(), m_acc.data(), cols, m_overflow);
            m_terms += kc;
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
    std::vector<accumulator_type> m_acc;  // R x C, row-major
    overflow_mode m_overflow = overflow_mode::wrap;
    std::uint64_t m_edges = 0;      // edges issued since the last clear
    std::uint64_t m_terms = 0;      // terms every PE holds since the last clear
    std::uint64_t m_overflows = 0;  // overflowed accumulations in the real block since the last clear
};

SYSTOLIC_EXTERN_TEMPLATE(functional_engine)

}  // namespace systolic
