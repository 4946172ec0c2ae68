// The N x N systolic array as a SystemC module: the PE children (pe_0_0 ... pe_<N-1>_<N-1>) over
// one array_core. The array has no process: its owner (the tile controller) steps every PE with
// one call per advance edge from its single thread.
#pragma once

#include <memory>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/array_core.h"
#include "systolic/pe.h"

namespace systolic {

template <class Format>
class systolic_array : public sc_core::sc_module {
public:
    using core_type = array_core<Format>;
    using token_type = typename core_type::token_type;

    systolic_array(const sc_core::sc_module_name& name, std::size_t n) : sc_core::sc_module(name), m_core(n) {
        m_pes.reserve(n * n);
        for (std::size_t i = 0; i < n; ++i) {
            for (std::size_t j = 0; j < n; ++j) {
                const std::string pe_name = "pe_" + std::to_string(i) + "_" + std::to_string(j);
                m_pes.push_back(std::make_unique<pe<Format>>(pe_name.c_str(), m_core, i, j));
            }
        }
    }

    std::size_t size() const { return m_core.size(); }
    const pe<Format>& at(std::size_t i, std::size_t j) const { return *m_pes[i * m_core.size() + j]; }
    const core_type& core() const { return m_core; }

    void clear() { m_core.clear(); }
    void clear_accumulators() { m_core.clear_accumulators(); }
    void set_overflow(overflow_mode mode) { m_core.set_overflow(mode); }
    void advance(const token_type* west, const token_type* north) { m_core.advance(west, north); }

    // "pe_1_2" for a grid position, as the children are named.
    std::string pe_name(std::size_t i, std::size_t j) const { return at(i, j).basename(); }

private:
    core_type m_core;
    std::vector<std::unique_ptr<pe<Format>>> m_pes;
};

}  // namespace systolic
