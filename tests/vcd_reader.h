// A small reader of text VCD for the tests: the variables by full dotted name, and each one's
// changes in time order. The tests feed it what GTKWave's own fst2vcd printed back from the FST that
// vcd2fst made of our file, so the values checked are the ones GTKWave read.
#pragma once

#include <cstdint>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace systolic::tb::testing {

struct vcd_change {
    std::uint64_t time;
    std::string value;  // "0"/"1" for scalars, the binary digits of a vector, the text of a real or string
};

struct vcd_data {
    std::string timescale;
    std::map<std::string, std::string> code_of;              // full name -> identifier code
    std::map<std::string, std::vector<vcd_change>> changes;  // identifier code -> changes
    std::uint64_t last_time = 0;

    bool has(const std::string& name) const { return code_of.count(name) > 0; }
    const std::vector<vcd_change>& of(const std::string& name) const {
        const auto it = code_of.find(name);
        if (it == code_of.end()) throw std::runtime_error("no VCD variable " + name);
        static const std::vector<vcd_change> none;
        const auto c = changes.find(it->second);
        return c == changes.end() ? none : c->second;
    }
    // The value at time t (the last change at or before t), as an unsigned integer.
    std::uint64_t at(const std::string& name, std::uint64_t t) const {
        std::uint64_t v = 0;
        for (const auto& c : of(name)) {
            if (c.time > t) break;
            v = std::stoull(c.value.empty() ? "0" : c.value, nullptr, 2);
        }
        return v;
    }
    // The text of a string (or real) variable at time t.
    std::string text_at(const std::string& name, std::uint64_t t) const {
        std::string v;
        for (const auto& c : of(name)) {
            if (c.time > t) break;
            v = c.value;
        }
        return v;
    }
    // Times at which a one-bit signal rises.
    std::vector<std::uint64_t> rises(const std::string& name) const {
        std::vector<std::uint64_t> out;
        std::string last = "0";
        for (const auto& c : of(name)) {
            if (c.value == "1" && last != "1") out.push_back(c.time);
            last = c.value;
        }
        return out;
    }
};

inline vcd_data parse_vcd(const std::string& text) {
    vcd_data d;
    std::istringstream in(text);
    std::string tok;
    std::vector<std::string> scope;
    std::uint64_t time = 0;
    bool body = false;
    auto record = [&](const std::string& code, std::string value) {
        // Vectors as fst2vcd prints them may drop leading zeros; keep the digits as given.
        d.changes[code].push_back({time, std::move(value)});
    };
    while (in >> tok) {
        if (!body) {
            if (tok == "$scope") {
                std::string kind, name, end;
                in >> kind >> name >> end;
                scope.push_back(name);
            } else if (tok == "$upscope") {
                in >> tok;
                scope.pop_back();
            } else if (tok == "$var") {
                std::string kind, width, code, name, rest;
                in >> kind >> width >> code >> name;
                while (in >> rest && rest != "$end") {
                }
                std::string full;
                for (const auto& s : scope)
                    full += s + ".";
                d.code_of[full + name] = code;
            } else if (tok == "$timescale") {
                std::string t;
                while (in >> t && t != "$end")
                    d.timescale += (d.timescale.empty() ? "" : " ") + t;
            } else if (tok == "$enddefinitions") {
                in >> tok;
                body = true;
            } else if (tok[0] == '$') {
                while (in >> tok && tok != "$end") {
                }
            }
            continue;
        }
        if (tok[0] == '#') {
            time = std::stoull(tok.substr(1));
            d.last_time = time;
        } else if (tok == "$dumpvars" || tok == "$end" || tok == "$dumpall" || tok == "$dumpon" ||
                   tok == "$dumpoff") {
            continue;
        } else if (tok[0] == 'b' || tok[0] == 'B' || tok[0] == 'r' || tok[0] == 'R' || tok[0] == 's' ||
                   tok[0] == 'S') {
            std::string code;
            in >> code;
            record(code, tok.substr(1));
        } else {
            record(tok.substr(1), tok.substr(0, 1));
        }
    }
    return d;
}

}  // namespace systolic::tb::testing
