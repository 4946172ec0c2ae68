#include "systolic/energy/price.h"

#include <cstdio>
#include <iterator>
#include <string>
#include <utility>

#include "systolic/energy/error.h"
#include "systolic/energy/node_scaling.h"
#include "systolic/number_format.h"

namespace systolic::energy {

namespace {

// The cost of one counted bit: a value per access divided by its width, or by the word's width
// for an ERT's per-word value.
double per_bit(const table_value& v, unsigned word_bits) {
    const double width = v.per_word ? word_bits : v.bits ? v.bits : 1;
    return *v.value / width;
}

class pricer {
public:
    pricer(energy_report& r, double scale) : m_r(r), m_scale(scale) {}

    // count x pj_each, where pj_each is the table's value per bit (per_bit) x the bits one counted
    // unit holds, times the node's factor; a value the table does not give prices nothing and is
    // listed as unpriced.
    void add(component_energy& c, const char* name, std::uint64_t count, const table_value& v,
             unsigned word_bits, double bits_per_unit) {
        priced_action a{name, count, 0, 0, v.given()};
        if (a.priced) {
            a.pj_each = per_bit(v, word_bits) * bits_per_unit * m_scale;
            a.pj = double(count) * a.pj_each;
        } else if (count > 0) {
            m_r.unpriced.push_back(std::string(to_string(c.which)) + "." + name);
        }
        c.pj += a.pj;
        c.actions.push_back(a);
    }

private:
    energy_report& m_r;
    double m_scale;
};

const sram_energies* sram_for(const energy_table& t, std::uint64_t bytes) {
    if (t.sram.empty()) return nullptr;
    for (const auto& s : t.sram)
        if (s.capacity_bytes >= bytes) return &s;
    return &t.sram.back();
}

template <class Map>
const typename Map::mapped_type* by_format(const Map& m, const std::string& format) {
    auto it = m.find(format);
    if (it == m.end()) it = m.find("*");
    return it == m.end() ? nullptr : &it->second;
}

std::string formats_of(const std::map<std::string, pe_energies>& pe) {
    std::string out;
    for (const auto& [f, e] : pe)
        out += (out.empty() ? "" : ", ") + f;
    return out.empty() ? "none" : out;
}

}  // namespace

std::string format_name(unsigned operand_bits, unsigned accumulator_bits) {
    std::string name;
    for_each_format([&](auto format) {
        using F = decltype(format);
        if (sizeof(typename F::operand_type) * 8 == operand_bits &&
            sizeof(typename F::accumulator_type) * 8 == accumulator_bits)
            name = F::name;
    });
    if (name.empty())
        throw energy_error("no number format has " + std::to_string(operand_bits) + "-bit operands and " +
                           std::to_string(accumulator_bits) + "-bit accumulators");
    return name;
}

scratchpad_sizes scratchpads_of(const memory_config& m, const problem_shape& s, std::uint64_t operand_bytes,
                                std::uint64_t output_bytes) {
    if (m.buffers != buffer_mode::double_buffered) return {};
    return {m.a_sram ? m.a_sram : s.m * s.k * operand_bytes, m.b_sram ? m.b_sram : s.k * s.p * operand_bytes,
            m.c_sram ? m.c_sram : s.m * s.p * output_bytes};
}

void check_table(const energy_table& table, double tech_node, dtype d) {
    with_format(d, [&](auto format) {
        using F = decltype(format);
        action_counts none;  // nothing counted: only the table, the node and the format are tried
        none.operand_bits = 8 * sizeof(typename F::operand_type);
        none.accumulator_bits = 8 * sizeof(typename F::accumulator_type);
        price(none, table, tech_node);
    });
}

energy_report price(const action_counts& c, const energy_table& t, double tech_node,
                    const scratchpad_sizes& sizes) {
    energy_report r;
    r.table = t.name;
    r.scratchpads = sizes;
    r.node_nm = t.node_nm.value.value_or(0);
    if (tech_node > 0 && tech_node != r.node_nm) {
        if (!t.node_nm.given())
            throw energy_error(
                t.origin +
                ": has no technology node (an ERT is priced as given), so it cannot be scaled to " +
                std::to_string(int(tech_node)) + " nm");
        if (!t.vdd_v.given())
            throw energy_error(t.origin + ": has no supply voltage to scale its energies at");
        r.energy_scale = energy_factor(r.node_nm, tech_node, *t.vdd_v.value);
        r.area_scale = area_factor(r.node_nm, tech_node);
        r.node_nm = tech_node;
    }
    const std::string format = format_name(c.operand_bits, c.accumulator_bits);
    const pe_energies* pe = by_format(t.pe, format);
    if (!pe)
        throw energy_error(t.origin + ": prices no " + format + " MAC (it has: " + formats_of(t.pe) + ")");

    pricer p(r, r.energy_scale);
    const unsigned ob = c.operand_bits, ab = c.accumulator_bits;

    component_energy e{component::pe, {}, 0};
    for (auto [name, count, v] :
         {std::tuple{"mac_random", c.pe.mac_random, &pe->mac_random},
          std::tuple{"mac_gated", c.pe.mac_gated, &pe->mac_gated}, std::tuple{"idle", c.pe.idle, &pe->idle},
          std::tuple{"preload", c.pe.preload, &pe->preload}})
        p.add(e, name, count, *v, 0, 1);  // per action
    r.energy.push_back(e);

    const table_value& tog = t.register_toggle_bit;
    e = {component::registers, {}, 0};
    p.add(e, "a_toggles", c.toggles.a_toggles, tog, ob, 1);
    p.add(e, "b_toggles", c.toggles.b_toggles, tog, ob, 1);
    p.add(e, "acc_toggles", c.toggles.acc_toggles, tog, ab, 1);
    r.energy.push_back(e);

    // Scratchpads: per byte accessed, from the SRAM entry for the buffer's size.
    const table_value none;
    for (auto [which, counts, bytes, word_bits, label] :
         {std::tuple{component::a_sram, &c.a_sram, sizes.a_bytes, ob, "A"},
          std::tuple{component::b_sram, &c.b_sram, sizes.b_bytes, ob, "B"},
          std::tuple{component::c_sram, &c.c_sram, sizes.c_bytes, ab, "C"}}) {
        if (bytes == 0 && (counts->read_bytes | counts->write_bytes) != 0)
            throw energy_error(std::string("scratchpad ") + label + ": " +
                               std::to_string(counts->read_bytes + counts->write_bytes) +
                               " bytes accessed, but no size given to price them by");
        const sram_energies* s = sram_for(t, bytes);
        const table_value& rd = s ? s->read : none;
        const table_value& wr = s ? s->write : none;
        e = {which, {}, 0};
        p.add(e, "read_bytes", counts->read_bytes, rd, word_bits, 8);
        p.add(e, "write_bytes", counts->write_bytes, wr, word_bits, 8);
        r.energy.push_back(e);
    }

    // DRAM is off chip: its energy per bit is the memory's and its interface's, not the logic node's,
    // so it is not scaled with the node.
    const table_value &dr = t.dram_read, &dw = t.dram_write;
    pricer off_chip(r, 1.0);
    e = {component::dram, {}, 0};
    off_chip.add(e, "a_read_bytes", c.dram_a_read_bytes, dr, ob, 8);
    off_chip.add(e, "b_read_bytes", c.dram_b_read_bytes, dr, ob, 8);
    off_chip.add(e, "c_read_bytes", c.dram_c_read_bytes, dr, ab, 8);
    off_chip.add(e, "c_write_bytes", c.dram_c_write_bytes, dw, ab, 8);
    r.energy.push_back(e);

    const table_value& lw = t.link_word;
    e = {component::links, {}, 0};
    p.add(e, "link_words", c.link_words, lw, ob, ob);
    r.energy.push_back(e);

    for (const auto& x : r.energy)
        r.total_pj += x.pj;
    r.macs = c.macs_real;
    r.pj_per_mac = r.macs ? r.total_pj / double(r.macs) : 0;

    // Area: the array's MAC units, its PEs' registers (two operand registers and an accumulator
    // each), and the scratchpads.
    auto area = [&](component which, const table_value* v, double units) {
        component_area a{which, 0, units, 0, v && v->given()};
        if (a.priced) {
            a.um2_each = *v->value * r.area_scale;
            a.mm2 = a.um2_each * units * 1e-6;
        } else if (units > 0) {
            r.unpriced.push_back(std::string("area.") + to_string(which));
        }
        r.total_mm2 += a.mm2;
        r.area.push_back(a);
    };
    const double pes = double(c.rows) * double(c.cols) * double(c.depth);
    area(component::pe, by_format(t.mac_area, format), pes);
    area(component::registers, &t.register_bit_area, pes * (2.0 * ob + ab));
    area(component::a_sram, &t.sram_kib_area, double(sizes.a_bytes) / 1024);
    area(component::b_sram, &t.sram_kib_area, double(sizes.b_bytes) / 1024);
    area(component::c_sram, &t.sram_kib_area, double(sizes.c_bytes) / 1024);
    return r;
}

nlohmann::json to_json(const energy_report& r) {
    using nlohmann::json;
    json energy = {
        {"table", r.table},
        {"node_nm", r.node_nm},
        {"energy_scale", r.energy_scale},
        {"scratchpad_bytes",
         {{"a", r.scratchpads.a_bytes}, {"b", r.scratchpads.b_bytes}, {"c", r.scratchpads.c_bytes}}}};
    json components = json::object();
    for (const auto& c : r.energy) {
        json actions = json::object();
        for (const auto& a : c.actions)
            actions[a.name] = {
                {"count", a.count}, {"pj_each", a.pj_each}, {"pj", a.pj}, {"priced", a.priced}};
        components[to_string(c.which)] = {{"actions", actions}, {"pj", c.pj}};
    }
    energy["components"] = components;
    energy["total_pj"] = r.total_pj;
    energy["macs"] = r.macs;
    energy["pj_per_mac"] = r.pj_per_mac;
    energy["unpriced"] = r.unpriced;
    json area_components = json::object();
    for (const auto& a : r.area)
        area_components[to_string(a.which)] = {
            {"units", a.units}, {"um2_each", a.um2_each}, {"mm2", a.mm2}, {"priced", a.priced}};
    json area = {{"area_scale", r.area_scale}, {"components", area_components}, {"total_mm2", r.total_mm2}};
    return {{"energy", energy}, {"area", area}};
}

std::string energy_text(double pj) {
    static constexpr std::pair<double, const char*> units[] = {
        {1, "pJ"}, {1e3, "nJ"}, {1e6, "uJ"}, {1e9, "mJ"}, {1e12, "J"}};
    std::size_t u = 0;
    while (u + 1 < std::size(units) && pj >= units[u + 1].first * 0.9995)
        ++u;
    const double v = pj / units[u].first;
    char text[48];
    std::snprintf(text, sizeof text, "%.3g %s", v, units[u].second);
    return text;
}

std::string summary(const energy_report& r) {
    char number[48];
    std::string node = "its own node";
    if (r.node_nm > 0) {
        std::snprintf(number, sizeof number, "%g nm", r.node_nm);
        node = number;
    }
    std::string text = "energy (" + r.table + ", " + node + "): " + energy_text(r.total_pj) + ", " +
                       energy_text(r.pj_per_mac) + " per MAC;";
    const char* separator = " ";
    for (const auto& c : r.energy) {
        std::snprintf(number, sizeof number, "%.0f%%", r.total_pj > 0 ? 100 * c.pj / r.total_pj : 0.0);
        text += separator + std::string(to_string(c.which)) + " " + energy_text(c.pj) + " (" + number + ")";
        separator = ", ";
    }
    std::snprintf(number, sizeof number, "%.3g", r.total_mm2);
    text += std::string("\narea: ") + number + " mm2 (";
    separator = "";
    for (const auto& a : r.area) {
        std::snprintf(number, sizeof number, "%.3g", a.mm2);
        text += separator + std::string(to_string(a.which)) + " " + number;
        separator = ", ";
    }
    text += ")\n";
    if (!r.unpriced.empty()) {
        text += "not priced by " + r.table + ":";
        for (const auto& u : r.unpriced)
            text += " " + u;
        text += "\n";
    }
    return text;
}

}  // namespace systolic::energy
