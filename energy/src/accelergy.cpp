#include "systolic/energy/accelergy.h"

#ifdef SYSTOLIC_HAVE_YAML_CPP
#include <yaml-cpp/yaml.h>
#endif

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <ostream>
#include <sstream>
#include <string>
#include <vector>

#include "systolic/energy/error.h"

namespace systolic::energy {

namespace {

// component -> action -> the energies of its entries (one per argument set)
using ert_entries = std::vector<std::pair<std::string, std::map<std::string, std::vector<double>>>>;

std::string lower(std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char ch) { return char(std::tolower(ch)); });
    return s;
}

// "system.simple_ws.PE[0..255].mac" -> "mac", "system_top_level.mac[1..256]" -> "mac": instance
// ranges out first, since their ".." would end the path early.
std::string leaf(const std::string& name) {
    std::string s;
    int depth = 0;
    for (char ch : name) {
        depth += ch == '[' ? 1 : ch == ']' ? -1 : 0;
        if (depth == 0 && ch != ']') s += ch;
    }
    return lower(s.substr(s.rfind('.') == std::string::npos ? 0 : s.rfind('.') + 1));
}

bool ends_with_one_of(const std::string& s, const std::string& alternatives) {
    std::size_t start = 0;
    while (start <= alternatives.size()) {
        const std::size_t bar = std::min(alternatives.find('|', start), alternatives.size());
        const std::string x = alternatives.substr(start, bar - start);
        if (!x.empty() && s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0)
            return true;
        start = bar + 1;
    }
    return false;
}

#ifdef SYSTOLIC_HAVE_YAML_CPP
class ert_reader {
public:
    explicit ert_reader(const std::string& path) : m_path(path) {}

    [[noreturn]] void fail(const std::string& what) const { throw energy_error(m_path + ": " + what); }

    ert_entries read() const {
        YAML::Node root;
        try {
            root = YAML::LoadFile(m_path);
        } catch (const YAML::BadFile&) {
            fail("cannot open");
        } catch (const YAML::Exception& e) {
            fail("not YAML: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
        }
        const YAML::Node tables =
            root.IsMap() && root["ERT"] && root["ERT"].IsMap() ? root["ERT"]["tables"] : YAML::Node();
        if (!tables || !(tables.IsMap() || tables.IsSequence()))
            fail("no ERT tables (an Accelergy ERT.yaml has ERT: tables:)");
        ert_entries out;
        try {
            if (tables.IsMap()) {  // v0.2: component: {action: {arguments, energy} or [...]}
                for (const auto& c : tables) {
                    auto& actions =
                        out.emplace_back(c.first.as<std::string>(), decltype(out)::value_type::second_type{})
                            .second;
                    if (!c.second.IsMap())
                        fail("component " + c.first.as<std::string>() + ": expected a map of actions");
                    for (const auto& a : c.second)
                        add(actions[a.first.as<std::string>()], a.second, c.first.as<std::string>(),
                            a.first.as<std::string>());
                }
            } else {  // v0.3, v0.4: [{name, actions: [{name, arguments, energy}]}]
                for (const auto& c : tables) {
                    const std::string name = text(c, "name", "a table");
                    auto& actions = out.emplace_back(name, decltype(out)::value_type::second_type{}).second;
                    if (!c["actions"] || !c["actions"].IsSequence())
                        fail("component " + name + ": expected a list of actions");
                    for (const auto& a : c["actions"]) {
                        const std::string action = text(a, "name", "an action of " + name);
                        add(actions[action], a, name, action);
                    }
                }
            }
        } catch (const YAML::Exception& e) {
            fail("not an ERT: " + e.msg + " (line " + std::to_string(e.mark.line + 1) + ")");
        }
        return out;
    }

private:
    std::string text(const YAML::Node& n, const char* key, const std::string& what) const {
        if (!n.IsMap() || !n[key] || !n[key].IsScalar()) fail(what + " without a '" + key + "'");
        return n[key].as<std::string>();
    }

    // One entry {arguments, energy}, or a list of them (v0.2 with arguments).
    void add(std::vector<double>& energies, const YAML::Node& n, const std::string& component,
             const std::string& action) const {
        if (n.IsSequence()) {
            for (const auto& x : n)
                add(energies, x, component, action);
            return;
        }
        const std::string where = "component " + component + " action " + action;
        if (!n.IsMap() || !n["energy"]) fail(where + ": no energy");
        try {
            energies.push_back(n["energy"].as<double>());
        } catch (const YAML::Exception&) {
            fail(where + ": energy is not a number");
        }
    }

    const std::string& m_path;
};

#else
// A build without yaml-cpp (energy/CMakeLists.txt) reads no ERT and says so.
class ert_reader {
public:
    explicit ert_reader(const std::string& path) : m_path(path) {}
    [[noreturn]] void fail(const std::string& what) const { throw energy_error(m_path + ": " + what); }
    ert_entries read() const {
        fail("reading an ERT.yaml needs yaml-cpp (Debian's libyaml-cpp-dev), which this build did not find");
    }

private:
    const std::string& m_path;
};
#endif

}  // namespace

energy_table read_ert(const std::string& path) {
    const ert_reader r(path);
    const ert_entries ert = r.read();
    energy_table t;
    t.name = std::filesystem::path(path).stem().string();
    t.origin = path;
    t.description = "Accelergy ERT " + path;
    t.sources["ert"] = path;

    std::map<std::string, table_value> found;
    for (const auto& n : ert_names) {
        const auto c = std::find_if(ert.begin(), ert.end(), [&](const auto& e) {
            return ends_with_one_of(leaf(e.first), n.component);
        });
        if (c == ert.end()) {
            if (n.required)
                r.fail(std::string("no component named *") + n.component + " with action '" + n.action +
                       "', which prices " + n.ours);
            continue;
        }
        auto a = c->second.find(n.action);
        if (a == c->second.end() && n.fallback) a = c->second.find(n.fallback);
        if (a == c->second.end() || a->second.empty()) {
            if (n.required)
                r.fail("component " + c->first + " has no action '" + n.action + "', which prices " + n.ours);
            continue;
        }
        double sum = 0;
        for (double x : a->second)
            sum += x;
        table_value v;
        v.value = sum / double(a->second.size());
        v.per_word = std::string(n.ours).rfind("pe.", 0) != 0;  // a MAC action is per action
        v.unit = "pJ per action";
        v.status = "ert";
        v.sources = {"ert"};
        v.note = c->first + " " + a->first + (a->second.size() > 1 ? " (mean of its entries)" : "");
        found[n.ours] = v;
    }
    auto get = [&](const char* ours) { return found.count(ours) ? found[ours] : table_value{}; };
    t.pe["*"] = {get("pe.mac_random"), get("pe.mac_gated"), get("pe.idle"), {}};
    t.register_toggle_bit = get("register.toggle_bit");
    t.sram.push_back({UINT64_MAX, get("sram.read"), get("sram.write")});
    t.dram_read = get("dram.read");
    t.dram_write = get("dram.write");
    t.link_word = get("link.word");
    return t;
}

void write_action_counts(const action_counts& c, std::ostream& out, const std::string& top) {
    const unsigned ob = c.operand_bits ? c.operand_bits : 8, ab = c.accumulator_bits ? c.accumulator_bits : 8;
    auto words = [](std::uint64_t bytes, unsigned bits) { return bytes * 8 / bits; };
    out << "# A systolic job's action counts for Accelergy (docs/energy.md, \"Accelergy\"): the " << c.rows
        << "x" << c.cols << (c.depth > 1 ? "x" + std::to_string(c.depth) : std::string())
        << " array's counts summed into one instance.\n"
        << "action_counts:\n  version: 0.3\n  local:\n";
    auto component = [&](const std::string& name) {
        out << "  - name: " << top << "." << name << "\n    action_counts:\n";
    };
    auto action = [&](const char* name, std::uint64_t n, const char* args = nullptr) {
        out << "    - name: " << name << "\n";
        if (args) out << "      arguments: {" << args << "}\n";
        out << "      counts: " << n << "\n";
    };
    component("PE[0].mac");
    action("mac_random", c.pe.mac_random);
    action("mac_gated", c.pe.mac_gated);
    action("idle", c.pe.idle + c.pe.preload);
    component("PE[0].reg");
    action("toggle", c.toggles.a_toggles, "register: a");
    action("toggle", c.toggles.b_toggles, "register: b");
    action("toggle", c.toggles.acc_toggles, "register: acc");
    for (auto [name, b] :
         {std::pair{"a_sram", &c.a_sram}, std::pair{"b_sram", &c.b_sram}, std::pair{"c_sram", &c.c_sram}}) {
        component(name);
        action("read", b->read_words);
        action("write", b->write_words);
    }
    component("DRAM");
    action("read",
           words(c.dram_a_read_bytes, ob) + words(c.dram_b_read_bytes, ob) + words(c.dram_c_read_bytes, ab));
    action("write", words(c.dram_c_write_bytes, ab));
    component("link");
    action("transfer_random", c.link_words);
}

std::string action_counts_yaml(const action_counts& c, const std::string& top) {
    std::ostringstream out;
    write_action_counts(c, out, top);
    return out.str();
}

}  // namespace systolic::energy
