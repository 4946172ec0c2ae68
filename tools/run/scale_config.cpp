#include "scale_config.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "io/input_file.h"
#include "io/text.h"
#include "topology.h"

namespace systolic::run {

namespace {

// A value or key as typed, on one line and not too long.
std::string shown(const std::string& s) {
    return "'" + io::printable(s.substr(0, 40)) + (s.size() > 40 ? "...'" : "'");
}

const config_key* find_key(const std::string& section, const std::string& key_lower) {
    for (const auto& k : scale_config_keys)
        if (section == k.section && key_lower == lower(k.key)) return &k;
    return nullptr;
}

const config_key& key_of(key_use use) {
    for (const auto& k : scale_config_keys)
        if (k.use == use) return k;
    throw config_error("no configuration key for a use");  // unreachable: the table has every use
}

bool known_section(const std::string& s) {
    return std::any_of(std::begin(scale_config_keys), std::end(scale_config_keys),
                       [&](const config_key& k) { return s == k.section; });
}

struct entry {
    std::string value;
    std::uint64_t line = 0;
};

class reader {
public:
    explicit reader(const std::string& path) : m_path(path) {}

    [[noreturn]] void fail(std::uint64_t line, const std::string& what) const {
        throw config_error(m_path + ":" + std::to_string(line) + ": " + what);
    }

    // A decimal integer in [1, max], digits only (SCALE-Sim's int() takes more; no shipped file does).
    std::uint64_t number(const config_key& k, const entry& e, std::uint64_t max) const {
        const std::string& s = e.value;
        if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos)
            fail(e.line, std::string("key '") + k.key + "': " + shown(s) + " is not a positive integer");
        const std::uint64_t v = std::stoull(s);
        if (v < 1 || v > max)
            fail(e.line,
                 std::string("key '") + k.key + "': " + s + " is outside [1, " + std::to_string(max) + "]");
        return v;
    }

    const std::string& path() const { return m_path; }

private:
    const std::string& m_path;
};

}  // namespace

scale_config parse_scale_config(std::string_view text, const std::string& path, std::uint64_t max_side) {
    // Python's configparser (SCALE-Sim's reader) takes the mark for text on the first line.
    if (const std::string bom = io::bom_error(text, path, "SCALE-Sim's configparser", "the first line");
        !bom.empty())
        throw config_error(bom);
    if (const std::string bad = io::utf8_error(text, path); !bad.empty()) throw config_error(bad);
    const reader rd(path);
    std::map<key_use, entry> used;
    std::map<std::string, std::uint64_t> sections;                      // name -> line
    std::map<std::pair<std::string, std::string>, std::uint64_t> seen;  // (section, key) -> line
    std::string section;
    std::uint64_t line_no = 0;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        const std::string line = trim(text.substr(pos, end - pos));
        pos = end + 1;
        ++line_no;
        if (line.empty() || line[0] == '#' || line[0] == ';') continue;
        if (line.front() == '[') {
            if (line.back() != ']' || line.size() < 3)
                rd.fail(line_no, "not a [section] line: " + shown(line));
            section = line.substr(1, line.size() - 2);
            if (!known_section(section))
                rd.fail(line_no, "section [" + io::printable(section.substr(0, 40)) +
                                     "] is not one of SCALE-Sim's configuration sections");
            if (const auto [it, fresh] = sections.emplace(section, line_no); !fresh)
                rd.fail(line_no, "section [" + section + "] is also on line " + std::to_string(it->second));
            continue;
        }
        // configparser splits at the first '=' or ':'.
        const std::size_t delim = line.find_first_of("=:");
        if (delim == std::string::npos)
            rd.fail(line_no, "not a [section], a 'key: value' line or a comment: " + shown(line));
        const std::string key = trim(std::string_view(line).substr(0, delim));
        const std::string value = trim(std::string_view(line).substr(delim + 1));
        if (key.empty()) rd.fail(line_no, "a value without a key: " + shown(line));
        if (section.empty()) rd.fail(line_no, "key " + shown(key) + " comes before any [section]");
        const config_key* k = find_key(section, lower(key));
        if (!k) {
            std::string where;
            for (const auto& other : scale_config_keys)
                if (lower(key) == lower(other.key))
                    where = std::string(" (it belongs in [") + other.section + "])";
            rd.fail(line_no, "key " + shown(key) + " is not a SCALE-Sim configuration key in [" + section +
                                 "]" + where);
        }
        if (const auto [it, fresh] = seen.emplace(std::make_pair(section, lower(key)), line_no); !fresh)
            rd.fail(line_no,
                    std::string("key '") + k->key + "' is also on line " + std::to_string(it->second));
        if (k->use == key_use::must_be) {
            if (lower(value) != lower(k->value))
                rd.fail(line_no, std::string("key '") + k->key + "': " + shown(value) +
                                     " is not supported, only " + k->value + " (" + k->why + ")");
            continue;
        }
        if (k->use == key_use::ignored) continue;
        used[k->use] = {value, line_no};
    }

    auto need = [&](key_use use) -> const entry& {
        const auto it = used.find(use);
        if (it == used.end()) {
            const config_key& k = key_of(use);
            throw config_error(path + ": no key '" + k.key + "' in [" + k.section + "]");
        }
        return it->second;
    };
    scale_config c;
    c.path = path;
    c.array.rows = rd.number(key_of(key_use::array_height), need(key_use::array_height), max_side);
    c.array.cols = rd.number(key_of(key_use::array_width), need(key_use::array_width), max_side);
    c.ifmap_sram_kb = rd.number(key_of(key_use::ifmap_sram), need(key_use::ifmap_sram), max_sram_kb);
    c.filter_sram_kb = rd.number(key_of(key_use::filter_sram), need(key_use::filter_sram), max_sram_kb);
    c.ofmap_sram_kb = rd.number(key_of(key_use::ofmap_sram), need(key_use::ofmap_sram), max_sram_kb);

    // SCALE-Sim's names are ours (scale_config.py takes them in lower case only).
    const entry& df = need(key_use::dataflow);
    const auto dataflow = parse_dataflow_kind(df.value);
    if (!dataflow)
        rd.fail(df.line, "key 'Dataflow': " + shown(df.value) + " is not " + names_text(dataflow_kind_names));
    c.dataflow = *dataflow;

    const entry& ib = need(key_use::interface_bandwidth);
    bool mode_known = false;
    for (const auto& n : interface_bandwidth_names)
        if (ib.value == n.name) {
            c.mode = n.value;
            mode_known = true;
        }
    if (!mode_known)
        rd.fail(ib.line, "key 'InterfaceBandwidth': " + shown(ib.value) + " is not " +
                             names_text(interface_bandwidth_names));

    const config_key& bw = key_of(key_use::bandwidth);
    if (const auto it = used.find(key_use::bandwidth); it != used.end()) {
        if (it->second.value.find(',') != std::string::npos)
            rd.fail(it->second.line,
                    "key 'Bandwidth': " + shown(it->second.value) +
                        " is a list; give one value (one DRAM channel serves the three streams)");
        c.bandwidth = rd.number(bw, it->second, std::uint64_t{1} << 32);
    } else if (c.mode == interface_bandwidth::user) {
        rd.fail(ib.line,
                std::string("InterfaceBandwidth USER needs the key 'Bandwidth' in [") + bw.section + "]");
    }
    return c;
}

scale_config read_scale_config(const std::string& path, std::uint64_t max_side) {
    try {
        return parse_scale_config(io::read_text_file(path), path, max_side);
    } catch (const io::io_error& e) {
        throw config_error(e.what());
    }
}

memory_config memory_of(const scale_config& config, std::uint64_t word_bytes) {
    memory_config m;
    m.buffers = buffer_mode::double_buffered;
    m.a_sram = config.ifmap_sram_kb * 1024;
    m.b_sram = config.filter_sram_kb * 1024;
    m.c_sram = config.ofmap_sram_kb * 1024;
    m.dram_bandwidth =
        config.mode == interface_bandwidth::user ? double(config.bandwidth) * double(word_bytes) : 0.0;
    return m;
}

}  // namespace systolic::run
