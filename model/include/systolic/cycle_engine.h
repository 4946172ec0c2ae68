// The cycle engine: steps the array (array_core) one advance edge at a time, with the feeder's
// tokens at its west and north edges. Every counter is what the PEs did.
#pragma once

#include <vector>

#include "systolic/array_core.h"
#include "systolic/engine.h"

namespace systolic {

template <class Format>
class cycle_engine final : public engine<Format> {
public:
    using typename engine<Format>::accumulator_type;
    using operand_type = typename Format::operand_type;

    cycle_engine(std::size_t rows, std::size_t cols)
        : engine<Format>(rows, cols),
          m_core(rows, cols),
          m_west(rows),
          m_north(cols),
          m_west_ok(rows),
          m_north_ok(cols) {}
    explicit cycle_engine(std::size_t n) : cycle_engine(n, n) {}

    engine_kind kind() const override { return engine_kind::cycle; }
    void set_overflow(overflow_mode mode) override { m_core.set_overflow(mode); }
    void clear() override { m_core.clear(); }
    void clear_accumulators() override { m_core.clear_accumulators(); }

    void advance(const feeder<Format>& in, const tile&, std::uint64_t first, std::uint64_t count,
                 edge_callback* after) override {
        for (std::uint64_t e = first; e < first + count; ++e) {
            in.tokens(e, m_west.data(), m_west_ok.data(), m_north.data(), m_north_ok.data());
            m_core.advance(m_west.data(), m_west_ok.data(), m_north.data(), m_north_ok.data());
            if (after) after->after_edge(e);
        }
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
    std::vector<operand_type> m_west, m_north;  // one edge's inputs
    std::vector<std::uint8_t> m_west_ok, m_north_ok;
};

}  // namespace systolic
