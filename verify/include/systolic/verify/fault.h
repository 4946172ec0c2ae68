// The known defects the testbench can plant in the model, to prove that its checks catch them.
// The model offers hooks (systolic/fault_hooks.h); this file is the testbench's list of defects
// and the policy that applies one through those hooks. Each changes a feed table, the schedule or
// the drain; none touches the per-edge path.
#pragma once

#include "systolic/engine.h"
#include "systolic/fault_hooks.h"
#include "systolic/verify/fault_names.h"

namespace systolic::verify {

// Faults that change how the array is stepped, which the functional engine does not do.
bool needs_cycle_engine(fault f);

template <class Format>
class fault_policy final : public fault_hooks<Format> {
public:
    explicit fault_policy(fault f = fault::none) : m_fault(f) {}
    void set(fault f) { m_fault = f; }
    fault get() const { return m_fault; }

    void feed(const tile& t, feed_tables& tables) override {
        for (std::size_t i = 0; i < tables.row_delay.size(); ++i) {
            if (m_fault == fault::global_skew) tables.row_delay[i] = t.r0 + i;
            if (m_fault == fault::invalid_padding) tables.row_valid[i] = i < t.rows;
        }
        for (std::size_t j = 0; j < tables.col_delay.size(); ++j) {
            if (m_fault == fault::global_skew) tables.col_delay[j] = t.c0 + j;
            if (m_fault == fault::invalid_padding) tables.col_valid[j] = j < t.cols;
        }
    }
    std::uint64_t edges(const plan_step& s, std::uint64_t planned) override {
        if (s.kind == step_kind::preload) return m_fault == fault::skip_preload ? planned - 1 : planned;
        if (!s.last_chunk) return planned;
        if (m_fault == fault::skip_advance) return planned - 1;
        if (m_fault == fault::extra_advance) return planned + 1;
        return planned;
    }
    void continue_chunk(const plan_step&, engine<Format>& e) override {
        if (m_fault == fault::clear_between_k) e.clear_accumulators();
    }
    void drain_block(const plan_step&, std::size_t array_rows, std::size_t array_cols, std::size_t& rows,
                     std::size_t& cols) override {
        if (m_fault == fault::no_mask) {
            rows = array_rows;
            cols = array_cols;
        }
    }

    void actions(action_counts& c) override {
        if (m_fault == fault::miscount_gated && c.pe.mac_gated > 0) {
            --c.pe.mac_gated;
            ++c.pe.mac_random;
        }
    }

private:
    fault m_fault;
};

}  // namespace systolic::verify
