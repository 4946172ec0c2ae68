// The cycle engine: steps the array (array_core) one advance edge at a time, with the feeder's
// tokens at its west and north edges. Every counter is what the PEs did.
#pragma once

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
    void set_overflow(overflow_mode mode) override { m_core.set_overflow(mode); }
    void clear() override { m_core.clear(); }
    void clear_accumulators() override { m_core.clear_accumulators(); }

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
    std::uint64_t edges() const override { return m_core.edges(); }
    std::uint64_t macs() const override { return m_core.macs(); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const override {
        return m_core.macs_in(rows, cols);
    }
    std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const override {
        return m_core.overflows_in(rows, cols);
    }
    bool complete(std::uint64_t terms) const override { return m_core.complete(terms); }
    std::vector<stuck_pe> stuck(std::uint64_t terms) const override { return m_core.stuck(terms); }
    const array_core<Format>* array() const override { return &m_core; }

private:
    array_core<Format> m_core;
};

SYSTOLIC_EXTERN_TEMPLATE(cycle_engine)

}  // namespace systolic
