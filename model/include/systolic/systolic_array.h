// The R x C systolic array as a SystemC module: R rows (row_0 ... row_<R-1>) of C PE children
// (pe_<i>_0 ... pe_<i>_<C-1>) over the engines that hold the state. The array has no process:
// the tile controller runs a chunk on one of its engines from its single thread.
//  - The cycle engine steps the array_core that the PE modules show.
//  - The functional engine (made on first use) computes chunks without stepping.
// Teardown is ordered for speed (docs/performance.md). SystemC removes a destroyed module from
// one flat registry by a linear search from the front and fills the hole with the registry's last
// module; it also searches the parent's list of children. So:
//  - R rows of C PEs keep the search of a parent's children short (C, not R x C);
//  - the first few PEs go first, then everything else newest first. The holes the first ones leave
//    near the front take the registry's last modules (the kernel's own, made at elaboration, and
//    then our newest), so every later module is found within a few steps of the array's start.
//    Plain newest-first or oldest-first order scans about R x C entries per PE instead.
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/cycle_engine.h"
#include "systolic/format_instances.h"
#include "systolic/functional_engine.h"
#include "systolic/pe.h"

namespace systolic {

template <class Format>
class pe_row : public sc_core::sc_module {
public:
    pe_row(const sc_core::sc_module_name& name, const array_core<Format>& core, std::size_t row)
        : sc_core::sc_module(name) {
        const std::size_t cols = core.cols();
        m_pes.reserve(cols);
        for (std::size_t j = 0; j < cols; ++j) {
            const std::string pe_name = "pe_" + std::to_string(row) + "_" + std::to_string(j);
            m_pes.push_back(std::make_unique<pe<Format>>(pe_name.c_str(), core, row, j));
        }
    }
    ~pe_row() override { destroy_newest_first(m_pes); }

    const pe<Format>& at(std::size_t j) const { return *m_pes[j]; }
    void destroy_pe(std::size_t j) { m_pes[j].reset(); }

    template <class V>
    static void destroy_newest_first(V& v) {
        while (!v.empty())
            v.pop_back();
    }

private:
    std::vector<std::unique_ptr<pe<Format>>> m_pes;
};

// The PE modules over one array_core: R rows (row_<i>) of C PEs, made as children of the module
// whose constructor makes the grid (systolic_array, or one array of a fabric), with the ordered
// teardown described above.
template <class Format>
class pe_grid {
public:
    explicit pe_grid(const array_core<Format>& core) : m_cols(core.cols()) {
        m_rows.reserve(core.rows());
        for (std::size_t i = 0; i < core.rows(); ++i) {
            const std::string row_name = "row_" + std::to_string(i);
            m_rows.push_back(std::make_unique<pe_row<Format>>(row_name.c_str(), core, i));
        }
    }
    // See the header comment for why this order. Any number of oldest PEs above the count of
    // modules made after the array works; 64 covers the kernel's module and a platform's few.
    ~pe_grid() {
        destroy_oldest_pes(64);
        destroy_pes_newest_first();
    }

    // The two steps of the teardown, for a platform that owns several arrays and tears them down in
    // one order (the oldest PEs of its oldest array first, then everything newest first; see
    // accelerator.cpp). Each is safe to repeat; the PE modules are gone afterwards.
    // Returns how many PEs that step covers (at most count).
    std::size_t destroy_oldest_pes(std::size_t count) {
        const std::size_t first = std::min<std::size_t>(count, m_rows.size() * m_cols);
        for (std::size_t p = 0; p < first && p / m_cols < m_rows.size(); ++p)
            m_rows[p / m_cols]->destroy_pe(p % m_cols);
        return first;
    }
    void destroy_pes_newest_first() { pe_row<Format>::destroy_newest_first(m_rows); }

    const pe<Format>& at(std::size_t i, std::size_t j) const { return m_rows[i]->at(j); }

private:
    std::size_t m_cols;
    std::vector<std::unique_ptr<pe_row<Format>>> m_rows;
};

template <class Format>
class systolic_array : public sc_core::sc_module, public engine_host<Format> {
public:
    using core_type = array_core<Format>;
    using engine_type = engine<Format>;

    // R = rows rows of C = cols PEs.
    systolic_array(const sc_core::sc_module_name& name, std::size_t rows, std::size_t cols)
        : sc_core::sc_module(name), m_cycle(rows, cols), m_grid(core()) {}
    // The square N x N array.
    systolic_array(const sc_core::sc_module_name& name, std::size_t n) : systolic_array(name, n, n) {}

    // The teardown's two steps (pe_grid), for a platform that owns several arrays.
    void destroy_oldest_pes(std::size_t count) { m_grid.destroy_oldest_pes(count); }
    void destroy_pes_newest_first() { m_grid.destroy_pes_newest_first(); }

    std::size_t rows() const override { return m_cycle.rows(); }
    std::size_t cols() const override { return m_cycle.cols(); }
    const pe<Format>& at(std::size_t i, std::size_t j) const { return m_grid.at(i, j); }
    // The PEs' state: the cycle engine's array.
    const core_type& core() const { return m_cycle.core(); }

    engine_type& engine_for(engine_kind kind) override {
        if (kind == engine_kind::cycle) return m_cycle;
        if (!m_functional) m_functional = std::make_unique<functional_engine<Format>>(rows(), cols());
        return *m_functional;
    }

    // "pe_1_2" for a grid position, as the children are named.
    std::string pe_name(std::size_t i, std::size_t j) const { return at(i, j).basename(); }
    std::string pe_name(const stuck_pe& p) const override { return pe_name(p.row, p.col); }

private:
    cycle_engine<Format> m_cycle;
    std::unique_ptr<functional_engine<Format>> m_functional;
    pe_grid<Format> m_grid;
};

SYSTOLIC_EXTERN_TEMPLATE(pe_row)
SYSTOLIC_EXTERN_TEMPLATE(pe_grid)
SYSTOLIC_EXTERN_TEMPLATE(systolic_array)

}  // namespace systolic
