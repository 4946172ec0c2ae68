#include "job_script.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <set>
#include <sstream>

#include "systolic/accelerator_map.h"

namespace systolic::vp {

namespace {

struct verb_rule {
    const char* verb;
    std::size_t min_args, max_args;
    std::set<std::string> keys;
};

const verb_rule rules[] = {
    {"job", 1, 1, {"dtype",  "m",        "k",      "p",        "data",       "seed",     "k_tile", "policy",
                   "order",  "overflow", "out",    "scale",    "zero_point", "rounding", "wait",   "expect",
                   "a_addr", "b_addr",   "c_addr", "a_stride", "b_stride",   "c_stride", "timeout"}},
    {"write", 2, 2, {}},
    {"read", 1, 3, {}},  // read REG [== VALUE]
    {"poll", 3, 4, {}},  // poll REG MASK VALUE [TIMEOUT]
    {"wait-irq", 0, 1, {}},
    {"delay", 1, 1, {}},
    {"mem", 3, 3, {}},         // mem ADDR TYPE v1,v2,...
    {"expect-mem", 3, 3, {}},  // expect-mem ADDR TYPE v1,v2,...
    {"print", 1, 1, {}},
};

const regmap::reg* reg_named(const std::string& name) {
    for (const auto& r : regmap::registers)
        if (name == r.name) return &r;
    return nullptr;
}

}  // namespace

std::vector<command> parse_script(const std::string& text, const std::string& name) {
    std::vector<command> out;
    std::istringstream in(text);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
        const std::string body = line.substr(0, line.find('#'));
        std::istringstream words(body);
        command c;
        c.line = n;
        c.text = body.substr(0, body.find_last_not_of(" \t\r") + 1);
        if (!(words >> c.verb)) continue;
        const auto fail = [&](const std::string& what) {
            return script_error(name + ":" + std::to_string(n) + ": " + what + " in '" + c.text + "'");
        };
        const verb_rule* rule = nullptr;
        for (const auto& r : rules)
            if (c.verb == r.verb) rule = &r;
        if (!rule) throw fail("unknown command '" + c.verb + "'");
        for (std::string w; words >> w;) {
            const auto eq = w.find('=');
            if (eq != std::string::npos && eq > 0 && w != "==") {
                const std::string key = w.substr(0, eq);
                if (!rule->keys.count(key)) throw fail("unknown option '" + key + "'");
                if (!c.keys.emplace(key, w.substr(eq + 1)).second)
                    throw fail("option '" + key + "' given twice");
            } else {
                c.args.push_back(w);
            }
        }
        if (c.args.size() < rule->min_args || c.args.size() > rule->max_args)
            throw fail("wrong number of arguments");
        if (c.verb == "read" && c.args.size() != 1 && !(c.args.size() == 3 && c.args[1] == "=="))
            throw fail("expected 'read REG' or 'read REG == VALUE'");
        if ((c.verb == "write" || c.verb == "read" || c.verb == "poll" || c.verb == "print") &&
            !register_offset(c.args[0]))
            throw fail("unknown register '" + c.args[0] + "'");
        if (c.verb == "write" && !register_value(*register_offset(c.args[0]), c.args[1]))
            throw fail("bad value '" + c.args[1] + "'");
        if (c.verb == "read" && c.args.size() == 3 && !register_value(*register_offset(c.args[0]), c.args[2]))
            throw fail("bad value '" + c.args[2] + "'");
        if (c.verb == "poll" && (!register_value(*register_offset(c.args[0]), c.args[1]) ||
                                 !register_value(*register_offset(c.args[0]), c.args[2]) ||
                                 (c.args.size() == 4 && !parse_time(c.args[3]))))
            throw fail("bad mask, value or timeout");
        if ((c.verb == "wait-irq" && !c.args.empty()) || c.verb == "delay")
            if (!parse_time(c.args[0])) throw fail("bad time '" + c.args[0] + "'");
        if ((c.verb == "mem" || c.verb == "expect-mem") && !parse_number(c.args[0]))
            throw fail("bad address '" + c.args[0] + "'");
        out.push_back(std::move(c));
    }
    return out;
}

std::optional<std::uint64_t> parse_number(const std::string& s) {
    if (s.empty()) return std::nullopt;
    const bool neg = s[0] == '-';
    const std::string digits = neg ? s.substr(1) : s;
    if (digits.empty() || digits[0] == '-' || digits[0] == '+') return std::nullopt;
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(digits.c_str(), &end, 0);
    if (errno != 0 || *end != '\0') return std::nullopt;
    return neg ? std::uint64_t(0) - v : std::uint64_t(v);
}

std::optional<sc_core::sc_time> parse_time(const std::string& s) {
    static const std::pair<const char*, sc_core::sc_time_unit> units[] = {{"ps", sc_core::SC_PS},
                                                                          {"ns", sc_core::SC_NS},
                                                                          {"us", sc_core::SC_US},
                                                                          {"ms", sc_core::SC_MS},
                                                                          {"s", sc_core::SC_SEC}};
    for (const auto& [suffix, unit] : units) {
        const std::string u = suffix;
        if (s.size() > u.size() && s.compare(s.size() - u.size(), u.size(), u) == 0) {
            const std::string num = s.substr(0, s.size() - u.size());
            if (num.empty() || !std::isdigit(static_cast<unsigned char>(num.back()))) continue;
            const auto v = parse_number(num);
            if (!v || num[0] == '-') return std::nullopt;
            return sc_core::sc_time(double(*v), unit);
        }
    }
    return std::nullopt;
}

std::optional<std::uint32_t> register_offset(const std::string& s) {
    if (const regmap::reg* r = reg_named(s)) return r->offset;
    if (const auto v = parse_number(s); v && *v < regmap::block_size && *v % 4 == 0) return std::uint32_t(*v);
    return std::nullopt;
}

std::optional<std::uint32_t> register_value(std::uint32_t offset, const std::string& s) {
    const regmap::reg* r = nullptr;
    for (const auto& x : regmap::registers)
        if (x.offset == offset) r = &x;
    std::uint32_t v = 0;
    std::istringstream parts(s);
    bool any = false;
    for (std::string part; std::getline(parts, part, '|');) {
        any = true;
        if (const auto n = parse_number(part)) {
            v |= static_cast<std::uint32_t>(*n);
            continue;
        }
        bool found = false;
        if (r) {
            for (const auto& f : r->fields)
                if (part == f.name) {
                    v |= ((1u << f.width) - 1u) << f.shift;
                    found = true;
                }
            for (const auto& set : regmap::value_sets)
                if (std::string(set.used_by) == r->name)
                    for (const auto& val : set.values)
                        if (part == val.name) {
                            v |= val.code;
                            found = true;
                        }
        }
        if (!found) return std::nullopt;
    }
    if (!any) return std::nullopt;
    return v;
}

std::string value_name(std::uint32_t offset, std::uint32_t value) {
    for (const auto& r : regmap::registers) {
        if (r.offset != offset) continue;
        for (const auto& set : regmap::value_sets)
            if (std::string(set.used_by) == r.name)
                for (const auto& val : set.values)
                    if (val.code == value) return std::string(set.prefix) + "_" + val.name;
    }
    return std::to_string(value);
}

}  // namespace systolic::vp
