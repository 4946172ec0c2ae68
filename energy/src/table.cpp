#include "systolic/energy/table.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <filesystem>
#include <fstream>

#include "systolic/energy/accelergy.h"
#include "systolic/energy/error.h"
#include "systolic/number_format.h"

namespace systolic::energy {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Reads the values of one document, holding each to the schema: a value is an object with a
// number or null, a status and at least one source that the document's "sources" names.
class reader {
public:
    reader(const json& doc, const std::string& origin) : m_doc(doc), m_origin(origin) {
        const json* s = find(doc, "sources");
        if (!s || !s->is_object() || s->empty()) fail("sources", "a map of source ids to references");
        for (const auto& [id, ref] : s->items()) {
            if (ref.is_string())
                m_sources[id] = ref.get<std::string>();
            else if (ref.is_object() && ref.contains("ref") && ref["ref"].is_string())
                m_sources[id] = ref["ref"].get<std::string>();
            else
                fail("sources." + id, "a reference (a string, or an object with \"ref\")");
        }
    }

    [[noreturn]] void fail(const std::string& where, const std::string& what) const {
        throw energy_error(m_origin + ": " + where + ": expected " + what);
    }

    static const json* find(const json& j, const char* key) {
        if (!j.is_object()) return nullptr;
        const auto it = j.find(key);
        return it == j.end() ? nullptr : &*it;
    }

    const json& object(const json& j, const char* key, const std::string& where) const {
        const json* v = find(j, key);
        if (!v || !v->is_object()) fail(where + key, "an object");
        return *v;
    }

    table_value value(const json& j, const std::string& where) const {
        if (!j.is_object()) fail(where, "a value object {value, unit, status, sources}");
        table_value v;
        const json* x = find(j, "value");
        if (!x || !(x->is_number() || x->is_null())) fail(where + ".value", "a number or null");
        if (x->is_number()) v.value = x->get<double>();
        if (const json* b = find(j, "bits")) {
            if (!b->is_number_integer() || b->get<long long>() <= 0)
                fail(where + ".bits", "a positive integer");
            v.bits = b->get<unsigned>();
        }
        v.unit = text(j, "unit", where, true);
        v.status = text(j, "status", where, true);
        v.note = text(j, "note", where, false);
        const json* s = find(j, "sources");
        if (!s || !s->is_array() || s->empty()) fail(where + ".sources", "a list of at least one source id");
        for (const auto& id : *s) {
            if (!id.is_string() || !m_sources.count(id.get<std::string>()))
                fail(where + ".sources", "ids that \"sources\" names (" + id.dump() + " is not one)");
            v.sources.push_back(id.get<std::string>());
        }
        return v;
    }

    table_value value(const json& parent, const char* key, const std::string& where) const {
        const json* j = find(parent, key);
        if (!j) fail(where + key, "a value object");
        return value(*j, where + key);
    }

    std::string text(const json& j, const char* key, const std::string& where, bool required) const {
        const json* t = find(j, key);
        if (!t) {
            if (required) fail(where + "." + key, "a string");
            return {};
        }
        if (!t->is_string()) fail(where + "." + key, "a string");
        return t->get<std::string>();
    }

    const std::map<std::string, std::string>& sources() const { return m_sources; }

private:
    const json& m_doc;
    const std::string& m_origin;
    std::map<std::string, std::string> m_sources;
};

bool known_format(const std::string& name) {
    return name == "*" || parse_dtype(name).has_value();
}

std::string self_dir() {
    char buf[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
    if (n <= 0) return {};
    return fs::path(std::string(buf, std::size_t(n))).parent_path().string();
}

bool has_suffix(const std::string& s, const char* suffix) {
    const std::string x(suffix);
    return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

}  // namespace

energy_table parse_table(const json& doc, const std::string& origin) {
    if (!doc.is_object())
        throw energy_error(origin + ": expected a JSON object (docs/energy.md, \"Schema\")");
    reader r(doc, origin);
    energy_table t;
    t.origin = origin;
    t.sources = r.sources();
    t.name = r.text(doc, "name", "", true);
    t.description = r.text(doc, "description", "", false);
    t.node_nm = r.value(doc, "node_nm", "");
    t.vdd_v = r.value(doc, "vdd_v", "");
    if (!t.node_nm.given()) r.fail("node_nm.value", "a number (the node the values are for)");

    const json& e = r.object(doc, "energy_pj", "");
    for (const auto& [format, actions] : r.object(e, "pe", "energy_pj.").items()) {
        const std::string w = "energy_pj.pe." + format + ".";
        if (!known_format(format))
            r.fail("energy_pj.pe." + format, "a format name (int8, int32, fp32, bf16)");
        t.pe[format] = {r.value(actions, "mac_random", w), r.value(actions, "mac_gated", w),
                        r.value(actions, "idle", w), r.value(actions, "preload", w)};
    }
    t.register_toggle_bit = r.value(e, "register_toggle_bit", "energy_pj.");
    const json* sram = reader::find(e, "sram");
    if (!sram || !sram->is_array()) r.fail("energy_pj.sram", "a list of SRAM sizes");
    for (std::size_t i = 0; i < sram->size(); ++i) {
        const json& s = (*sram)[i];
        const std::string w = "energy_pj.sram[" + std::to_string(i) + "].";
        const json* cap = reader::find(s, "capacity_bytes");
        if (!cap || !cap->is_number_integer() || cap->get<long long>() <= 0)
            r.fail(w + "capacity_bytes", "a positive integer");
        t.sram.push_back({cap->get<std::uint64_t>(), r.value(s, "read", w), r.value(s, "write", w)});
    }
    std::sort(t.sram.begin(), t.sram.end(), [](const sram_energies& a, const sram_energies& b) {
        return a.capacity_bytes < b.capacity_bytes;
    });
    const json& dram = r.object(e, "dram", "energy_pj.");
    t.dram_read = r.value(dram, "read", "energy_pj.dram.");
    t.dram_write = r.value(dram, "write", "energy_pj.dram.");
    t.link_word = r.value(e, "link_word", "energy_pj.");

    const json& a = r.object(doc, "area_um2", "");
    for (const auto& [format, v] : r.object(a, "mac", "area_um2.").items()) {
        if (!known_format(format))
            r.fail("area_um2.mac." + format, "a format name (int8, int32, fp32, bf16)");
        t.mac_area[format] = r.value(v, "area_um2.mac." + format);
    }
    t.register_bit_area = r.value(a, "register_bit", "area_um2.");
    t.sram_kib_area = r.value(a, "sram_kib", "area_um2.");
    return t;
}

std::vector<std::string> table_dirs() {
    std::vector<std::string> dirs;
    const std::string self = self_dir();
    if (!self.empty()) dirs.push_back((fs::path(self).parent_path() / "share/systolic/energy").string());
#ifdef SYSTOLIC_ENERGY_SOURCE_DIR
    dirs.push_back(SYSTOLIC_ENERGY_SOURCE_DIR);
#endif
#ifdef SYSTOLIC_ENERGY_INSTALL_DIR
    dirs.push_back(SYSTOLIC_ENERGY_INSTALL_DIR);
#endif
    return dirs;
}

std::vector<std::string> shipped_tables() {
    for (const auto& d : table_dirs()) {
        std::error_code ec;
        std::vector<std::string> names;
        for (const auto& f : fs::directory_iterator(d, ec))
            if (f.path().extension() == ".json") names.push_back(f.path().stem().string());
        if (!names.empty()) {
            std::sort(names.begin(), names.end());
            return names;
        }
    }
    return {};
}

std::string find_table(const std::string& name) {
    std::string looked;
    for (const auto& d : table_dirs()) {
        const fs::path p = fs::path(d) / (name + ".json");
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return p.string();
        looked += (looked.empty() ? "" : ", ") + d;
    }
    std::string known;
    for (const auto& n : shipped_tables())
        known += (known.empty() ? "" : ", ") + n;
    throw energy_error("energy table '" + name + "': not a shipped table (" +
                       (known.empty() ? "none found" : known) + "; looked in " + looked +
                       ") nor a .json or ERT .yaml file");
}

energy_table load_table(const std::string& name_or_path) {
    if (has_suffix(name_or_path, ".yaml") || has_suffix(name_or_path, ".yml")) return read_ert(name_or_path);
    const std::string path = has_suffix(name_or_path, ".json") ? name_or_path : find_table(name_or_path);
    std::ifstream in(path);
    if (!in) throw energy_error(path + ": cannot open");
    json doc;
    try {
        doc = json::parse(in);
    } catch (const json::exception& e) {
        throw energy_error(path + ": not JSON: " + e.what());
    }
    return parse_table(doc, path);
}

}  // namespace systolic::energy
