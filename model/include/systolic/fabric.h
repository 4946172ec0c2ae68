// The fabric of arrays as a SystemC module: `fabric` with one child per array, array_r_c_d, each
// with rows of PE children (row_<i>.pe_<i>_<j>) as systolic_array has, over the fabric engine that
// holds the state and steps it (fabric_engine.h, docs/fabric.md). Like systolic_array it has no
// process: the tile controller runs each chunk on the engine from its one thread, and the engine
// steps the arrays, on several threads if asked.
#pragma once

#include <memory>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/fabric_engine.h"
#include "systolic/format_instances.h"
#include "systolic/systolic_array.h"

namespace systolic {

// One array of the fabric: the PE modules over one of the engine's array_cores.
template <class Format>
class fabric_array : public sc_core::sc_module {
public:
    fabric_array(const sc_core::sc_module_name& name, const array_core<Format>& core)
        : sc_core::sc_module(name), m_grid(core) {}
    pe_grid<Format>& grid() { return m_grid; }
    const pe<Format>& at(std::size_t i, std::size_t j) const { return m_grid.at(i, j); }

private:
    pe_grid<Format> m_grid;
};

template <class Format>
class fabric : public sc_core::sc_module, public engine_host<Format> {
public:
    using engine_type = engine<Format>;

    fabric(const sc_core::sc_module_name& name, const fabric_geometry& g, unsigned threads = 1)
        : sc_core::sc_module(name), m_engine(g, threads) {
        m_arrays.reserve(m_engine.arrays());
        for (std::size_t a = 0; a < m_engine.arrays(); ++a)
            m_arrays.push_back(
                std::make_unique<fabric_array<Format>>(m_engine.array_name(a).c_str(), m_engine.core(a)));
    }
    ~fabric() override {
        destroy_oldest_pes(64);
        destroy_pes_newest_first();
    }

    // The teardown's two steps, as systolic_array's (see there), for a platform that owns several
    // module trees: the oldest PEs, taken from the oldest arrays, then everything newest first.
    void destroy_oldest_pes(std::size_t count) {
        for (std::size_t a = 0; a < m_arrays.size() && count > 0; ++a)
            if (m_arrays[a]) count -= m_arrays[a]->grid().destroy_oldest_pes(count);
    }
    void destroy_pes_newest_first() {
        // SystemC searches this module's list of children from the front too, and fills a hole with
        // the last child: with the oldest array gone first, each next newest array is found at once.
        // Only small arrays go this way (the many that make a long list): an array destroyed out of
        // order costs a search of the registry per module.
        if (m_arrays.size() > 1 && geometry().n * geometry().n <= 64) m_arrays.front().reset();
        while (!m_arrays.empty()) {
            if (m_arrays.back()) m_arrays.back()->grid().destroy_pes_newest_first();
            m_arrays.pop_back();
        }
    }

    const fabric_geometry& geometry() const { return m_engine.geometry(); }
    // The arrays' state, links and counts.
    const fabric_engine<Format>& state() const { return m_engine; }
    std::size_t arrays() const { return m_arrays.size(); }
    const fabric_array<Format>& array(std::size_t a) const { return *m_arrays[a]; }

    // engine_host: the controller's view, one engine of (R*N) x (C*N) PEs.
    std::size_t rows() const override { return geometry().tile_rows(); }
    std::size_t cols() const override { return geometry().tile_cols(); }
    engine_type& engine_for(engine_kind kind) override {
        if (kind != engine_kind::cycle)
            throw std::invalid_argument("a fabric of arrays runs on the cycle engine only");
        return m_engine;
    }
    // "array_0_1_2.pe_3_4" (the PE's place in its own array).
    std::string pe_name(const stuck_pe& p) const override {
        const std::size_t n = geometry().n;
        return std::string(m_arrays[p.array]->basename()) + "." +
               m_arrays[p.array]->at(p.row % n, p.col % n).basename();
    }

private:
    fabric_engine<Format> m_engine;
    std::vector<std::unique_ptr<fabric_array<Format>>> m_arrays;
};

SYSTOLIC_EXTERN_TEMPLATE(fabric_array)
SYSTOLIC_EXTERN_TEMPLATE(fabric)

}  // namespace systolic
