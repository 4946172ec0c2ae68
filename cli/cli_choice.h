// An option whose value is one of an enum's names (systolic/names.h), for every command line:
// CLI11 checks the typed name against the enum's table, so its message and --help list the same
// names in the same order, and the option holds the enum, never the text.
#pragma once

#include <CLI/CLI.hpp>

#include <string>

#include "systolic/names.h"

namespace systolic::cli {

template <class Enum, std::size_t N>
CLI::Option* add_choice(CLI::App& app, const std::string& name, Enum& value, const name_table<Enum, N>& table,
                        const std::string& help) {
    auto* option = app.add_option_function<std::string>(
        name,
        [&value, &table](const std::string& typed) {
            if (const auto v = parse_name(table, typed)) value = *v;
        },
        help);
    option->check(CLI::IsMember(names(table)));
    option->type_name("TEXT");
    option->default_str(name_of(table, value));
    return option;
}

}  // namespace systolic::cli
