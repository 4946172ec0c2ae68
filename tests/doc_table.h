// Tables in docs/ held to the headers that declare what they list: a row names its macros in
// backquotes, and its numbers are backquoted too.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace systolic::test {

inline std::string read(const char* path) {
    std::ifstream in(path);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

// The line of `doc` (called `doc_name` in a failure) that names `macro` in backquotes, and the
// backquoted numbers on it.
inline std::vector<std::uint64_t> row_numbers(const std::string& doc, const std::string& doc_name,
                                              const std::string& macro) {
    std::istringstream lines(doc);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("| ", 0) != 0 || line.find("`" + macro + "`") == std::string::npos) continue;
        std::vector<std::uint64_t> out;
        for (auto open = line.find('`'); open != std::string::npos; open = line.find('`', open + 1)) {
            const auto close = line.find('`', open + 1);
            if (close == std::string::npos) break;
            const std::string quoted = line.substr(open + 1, close - open - 1);
            if (!quoted.empty() && quoted.find_first_not_of("0123456789abcdefx") == std::string::npos)
                out.push_back(std::stoull(quoted, nullptr, 0));
            open = close;
        }
        return out;
    }
    ADD_FAILURE() << doc_name << " has no table row naming `" << macro << "`";
    return {};
}

}  // namespace systolic::test
