// An unknown option (or command) answered with the nearest known name, for every executable:
//   systolic-tb: error: unknown option --arry; did you mean --array?
// Header-only and free of CLI11, so that systolic-regs, which parses its own commands, uses the
// same rule; parse_error_text takes the CLI::App as a template parameter for the same reason.
#pragma once

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

namespace systolic::cli {

// Edits (insert, delete, replace, swap of two neighbours) that turn `a` into `b`.
inline std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
    for (std::size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (std::size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i)
        for (std::size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

// The name nearest to `typed` when it is close enough to be a typo of it: at most one edit per four
// letters, plus one, and fewer edits than the name has letters (so "--x" suggests no "--m"). Leading
// dashes do not count; the first of equally near names wins.
inline std::optional<std::string> nearest_name(const std::string& typed,
                                               const std::vector<std::string>& names) {
    auto bare = [](const std::string& s) { return s.substr(std::min(s.find_first_not_of('-'), s.size())); };
    const std::string t = bare(typed);
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    for (const auto& name : names) {
        const std::string n = bare(name);
        const std::size_t d = edit_distance(t, n);
        if (d > 1 + n.size() / 4 || d >= n.size()) continue;
        if (!best || d < best_distance) {
            best = name;
            best_distance = d;
        }
    }
    return best;
}

// "unknown option --arry; did you mean --array?", or "unknown option --zzz (see --help)".
inline std::string unknown_name_message(const std::string& kind, const std::string& typed,
                                        const std::vector<std::string>& names,
                                        const std::string& otherwise = "see --help") {
    const auto near = nearest_name(typed, names);
    return "unknown " + kind + " " + typed +
           (near ? "; did you mean " + *near + "?" : " (" + otherwise + ")");
}

// The message for a CLI11 parse error. What CLI11 could not place comes first, whatever it threw:
// a mistyped required option ("--blok 2") is the error, not the missing one. An unknown option is
// named with the nearest of the app's option names, then a stray word; else CLI11's own text.
template <class App, class Error>
std::string parse_error_text(const App& app, const Error& e) {
    std::vector<std::string> names;
    for (const auto* opt : app.get_options()) {
        for (const auto& n : opt->get_lnames())
            names.push_back("--" + n);
        for (const auto& n : opt->get_snames())
            names.push_back("-" + n);
    }
    const std::vector<std::string> extras = app.remaining();
    for (const auto& arg : extras)
        if (arg.size() > 1 && arg[0] == '-' && !(arg[1] >= '0' && arg[1] <= '9'))
            return unknown_name_message("option", arg.substr(0, arg.find('=')), names);
    if (!extras.empty())
        return "unexpected argument '" + extras.front() + "' (options start with --; see --help)";
    return std::string(e.what()) + " (see --help)";
}

}  // namespace systolic::cli
