// Options that change nothing without another one are refused with the reason, as one mechanism
// for every executable. Each executable declares its rules once, as a table (option, what it
// needs, why); the check and the --help text come from that table, and a test holds the table
// of docs/options.md to it.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace systolic::cli {

template <class Options>
struct option_rule {
    const char* option;  // "--threads"
    const char* needs;   // "--fabric with more than one array"
    const char* reason;  // "they step a fabric's arrays; one array runs on one thread"
    bool (*met)(const Options&);
};

// "--threads needs --fabric with more than one array: they step ...".
template <class Options>
std::string rule_text(const option_rule<Options>& r) {
    return std::string(r.option) + " needs " + r.needs + ": " + r.reason;
}

// The first rule broken, said as rule_text: an option given (`given(name)`) whose need the
// options do not meet.
template <class Options, class Given>
std::optional<std::string> broken_option_rule(const std::vector<option_rule<Options>>& rules,
                                              const Options& o, Given given) {
    for (const auto& r : rules)
        if (given(r.option) && !r.met(o)) return rule_text(r);
    return std::nullopt;
}

// The rules for --help, one a line.
template <class Options>
std::string option_rules_help(const std::vector<option_rule<Options>>& rules) {
    std::string text = "Options refused without what they need:\n";
    for (const auto& r : rules)
        text += "  " + rule_text(r) + "\n";
    return text;
}

}  // namespace systolic::cli
