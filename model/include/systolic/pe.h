// One processing element, named by grid position (pe_<row>_<col>) under its row module
// (array.row_<row>.pe_<row>_<col>), so that logs and waveform scopes read as the grid. A PE has
// no process and no state of its own: the engine steps all PEs from one process, and the PE's
// state (the A token it passes east, the B token it passes south, its accumulator and its
// consumed-term count) lives in the array's contiguous storage. This module is the named,
// inspectable view of one slot of it.
#pragma once

#include <cstdint>
#include <systemc>

#include "systolic/array_core.h"
#include "systolic/format_instances.h"

namespace systolic {

template <class Format>
class pe : public sc_core::sc_module {
public:
    using core_type = array_core<Format>;
    using accumulator_type = typename core_type::accumulator_type;

    pe(const sc_core::sc_module_name& name, const core_type& core, std::size_t row, std::size_t col)
        : sc_core::sc_module(name), m_core(core), m_row(row), m_col(col) {}

    std::size_t row() const { return m_row; }
    std::size_t col() const { return m_col; }
    accumulator_type accumulator() const { return m_core.accumulator(m_row, m_col); }
    std::uint64_t consumed() const { return m_core.consumed(m_row, m_col); }
    // Done when exactly k terms have been consumed.
    bool done(std::uint64_t k) const { return consumed() == k; }

private:
    const core_type& m_core;
    std::size_t m_row;
    std::size_t m_col;
};

SYSTOLIC_EXTERN_TEMPLATE(pe)

}  // namespace systolic
