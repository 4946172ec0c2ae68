// The cycle engine: steps the array (array_core) one advance edge at a time, with the feeder's
// tokens at its west and north edges; for weight and input stationary it steps a stationary_core
// (made on first use) through each fold's preload and stream edges. Every counter is what the PEs
// did.
#pragma once

#include <memory>
#include <vector>

#include "systolic/array_core.h"
#include "systolic/engine.h"
#include "systolic/format_instances.h"

namespace systolic {

template <class Format>
class cycle_engine final : public engine<Format> {
public:
    using typename engine<Format>::accumulator_type;
    using operand_type = typename Format::operand_type;

    cycle_engine(std::size_t rows, std::size_t cols) : engine<Format>(rows, cols), m_core(rows, cols) {}
    explicit cycle_engine(std::size_t n) : cycle_engine(n, n) {}

    engine_kind kind() const override { return engine_kind::cycle; }
    void set_overflow(overflow_mode mode) override {
        m_core.set_overflow(mode);
        m_overflow = mode;
        if (m_stationary) m_stationary->set_overflow(mode);
    }
    void clear() override { m_folds ? m_stationary->clear() : m_core.clear(); }
    void clear_accumulators() override {
        if (!m_folds) m_core.clear_accumulators();
    }

    bool supports(dataflow_kind) const override { return true; }
    void set_dataflow(dataflow_kind df) override {
        m_folds = is_stationary(df);
        if (m_folds && !m_stationary) {
            m_stationary = std::make_unique<stationary_core<Format>>(this->m_rows, this->m_cols);
            m_stationary->set_overflow(m_overflow);
        }
    }
    void preload(const typename engine<Format>::fold_type& f, std::uint64_t first, std::uint64_t count,
                 edge_callback* after) override {
        m_stationary->preload(f, first, count, after);
    }
    void stream(const typename engine<Format>::fold_type& f, std::uint64_t first, std::uint64_t count,
                edge_callback* after) override {
        m_stationary->stream(f, first, count, after);
    }
    std::uint64_t partial_overflows() const override {
        return m_folds ? m_stationary->partial_overflows() : 0;
    }
    const stationary_core<Format>* stationary_array() const override { return m_stationary.get(); }

    // The feeder's buffers are the core's streams: its inputs go straight into the array's slots,
    // and the whole slice is one run (cut into single edges for an observer).
    void advance(const feeder<Format>& in, const tile&, std::uint64_t first, std::uint64_t count,
                 edge_callback* after) override {
        const feed_tables& t = in.tables();
        const typename array_core<Format>::streams s{in.a(),
                                                     in.chunk_length(),
                                                     in.b(),
                                                     in.cols(),
                                                     in.chunk_length(),
                                                     t.row_delay.data(),
                                                     t.col_delay.data(),
                                                     t.row_valid.data(),
                                                     t.col_valid.data()};
        m_core.advance(s, first, count, after);
    }

    const accumulator_type* accumulators() const override { return &m_core.accumulator_row(0)[0]; }
    std::uint64_t edges() const override { return m_folds ? m_stationary->edges() : m_core.edges(); }
    std::uint64_t macs() const override { return m_folds ? m_stationary->macs() : m_core.macs(); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const override {
        return m_folds ? m_stationary->macs_in(rows, cols) : m_core.macs_in(rows, cols);
    }
    std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const override {
        return m_folds ? m_stationary->overflows_in(rows, cols) : m_core.overflows_in(rows, cols);
    }
    bool complete(std::uint64_t terms) const override {
        return m_folds ? m_stationary->complete(terms) : m_core.complete(terms);
    }
    std::vector<stuck_pe> stuck(std::uint64_t terms) const override {
        return m_folds ? m_stationary->stuck(terms) : m_core.stuck(terms);
    }
    // The output-stationary array (null while a stationary dataflow runs: its PEs are elsewhere).
    const array_core<Format>* array() const override { return m_folds ? nullptr : &m_core; }
    const array_core<Format>& core() const { return m_core; }

private:
    array_core<Format> m_core;
    std::unique_ptr<stationary_core<Format>> m_stationary;
    bool m_folds = false;  // the dataflow is ws or is: the counters are the stationary core's
    overflow_mode m_overflow = overflow_mode::wrap;
};

SYSTOLIC_EXTERN_TEMPLATE(cycle_engine)

}  // namespace systolic
