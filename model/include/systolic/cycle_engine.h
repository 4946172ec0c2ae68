// The cycle engine: steps the array (array_core) one advance edge at a time, with the feeder's
// tokens at its west and north edges; for weight and input stationary it steps a stationary_core
// (made on first use) through each fold's preload and stream edges. Which of the two a job steps is
// chosen once, when the job sets its dataflow (a mapping). Every counter is what the PEs did.
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

    cycle_engine(std::size_t rows, std::size_t cols)
        : engine<Format>(rows, cols), m_core(rows, cols), m_os(m_core) {}
    explicit cycle_engine(std::size_t n) : cycle_engine(n, n) {}
    cycle_engine(const cycle_engine&) = delete;  // m_os refers to m_core
    cycle_engine& operator=(const cycle_engine&) = delete;

    engine_kind kind() const override { return engine_kind::cycle; }
    void set_overflow(overflow_mode mode) override {
        m_core.set_overflow(mode);
        m_overflow = mode;
        if (m_stationary) m_stationary->core.set_overflow(mode);
    }
    void clear() override {
        if (this->m_counter) m_mapping->clear_registers(*this->m_counter);
        m_mapping->clear();
    }
    void clear_accumulators() override { m_mapping->clear_accumulators(); }

    bool supports(dataflow_kind) const override { return true; }
    // The one place that asks which dataflow runs: once per job.
    void set_dataflow(dataflow_kind df) override {
        if (!is_stationary(df)) {
            m_mapping = &m_os;
            return;
        }
        if (!m_stationary) {
            m_stationary = std::make_unique<stationary_mapping>(this->m_rows, this->m_cols);
            m_stationary->core.set_overflow(m_overflow);
            m_stationary->core.tally_into(tally());
        }
        m_mapping = m_stationary.get();
    }
    void preload(const typename engine<Format>::fold_type& f, std::uint64_t first, std::uint64_t count,
                 edge_callback* after) override {
        m_stationary->core.preload(f, first, count, after);
    }
    void stream(const typename engine<Format>::fold_type& f, std::uint64_t first, std::uint64_t count,
                edge_callback* after) override {
        m_stationary->core.stream(f, first, count, after);
    }
    std::uint64_t partial_overflows() const override { return m_mapping->partial_overflows(); }
    const stationary_core<Format>* stationary_array() const override {
        return m_stationary ? &m_stationary->core : nullptr;
    }

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
    // The counters and the watchdog's questions are the stepped grid's, whichever dataflow it runs.
    std::uint64_t edges() const override { return m_mapping->grid().edges(); }
    std::uint64_t macs() const override { return m_mapping->grid().macs(); }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const override {
        return m_mapping->grid().macs_in(rows, cols);
    }
    std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const override {
        return m_mapping->grid().overflows_in(rows, cols);
    }
    bool complete(std::uint64_t terms) const override { return m_mapping->grid().complete(terms); }
    std::vector<stuck_pe> stuck(std::uint64_t terms) const override { return m_mapping->grid().stuck(terms); }
    // The output-stationary array (null while a stationary dataflow runs: its PEs are elsewhere).
    const array_core<Format>* array() const override { return m_mapping->array(); }
    const array_core<Format>& core() const { return m_core; }

private:
    // A job that counts its actions has its cores' kernels add up what they do (edge_tally), chosen
    // once per job: the kernels of a job that does not are the ones that do not look.
    edge_tally* tally() { return this->m_counter ? this->m_counter->stepped() : nullptr; }
    void counter_changed() override {
        m_core.tally_into(tally());
        if (m_stationary) m_stationary->core.tally_into(tally());
    }

    // What the job's dataflow steps, chosen once per job by set_dataflow: the output-stationary
    // array_core, or a stationary_core for ws and is. Both are stepped grids.
    class mapping {
    public:
        virtual const stepped_grid<Format>& grid() const = 0;
        virtual void clear() = 0;
        virtual void clear_accumulators() = 0;
        // A clear's toggles, from the registers it is about to zero.
        virtual void clear_registers(action_counter<Format>& counter) const = 0;
        virtual std::uint64_t partial_overflows() const = 0;
        virtual const array_core<Format>* array() const = 0;

    protected:
        ~mapping() = default;
    };
    struct os_mapping final : mapping {
        explicit os_mapping(array_core<Format>& c) : core(c) {}
        const stepped_grid<Format>& grid() const override { return core; }
        void clear() override { core.clear(); }
        void clear_accumulators() override { core.clear_accumulators(); }
        void clear_registers(action_counter<Format>& counter) const override {
            counter.clear_registers(core);
        }
        std::uint64_t partial_overflows() const override { return 0; }
        const array_core<Format>* array() const override { return &core; }
        array_core<Format>& core;
    };
    // The tile's accumulators are the controller's: a fault hook's clear_accumulators has none here.
    struct stationary_mapping final : mapping {
        stationary_mapping(std::size_t rows, std::size_t cols) : core(rows, cols) {}
        const stepped_grid<Format>& grid() const override { return core; }
        void clear() override { core.clear(); }
        void clear_accumulators() override {}
        void clear_registers(action_counter<Format>& counter) const override {
            counter.clear_registers(core);
        }
        std::uint64_t partial_overflows() const override { return core.partial_overflows(); }
        const array_core<Format>* array() const override { return nullptr; }
        stationary_core<Format> core;
    };

    array_core<Format> m_core;
    os_mapping m_os;
    std::unique_ptr<stationary_mapping> m_stationary;  // made on first use
    mapping* m_mapping = &m_os;
    overflow_mode m_overflow = overflow_mode::wrap;
};

SYSTOLIC_EXTERN_TEMPLATE(cycle_engine)

}  // namespace systolic
