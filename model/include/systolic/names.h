// The names of an enum's values, declared once as a constexpr table of (value, name, meaning) next
// to the enum. to_string, parsing, a command line's choices, the messages that list the choices and
// the docs' tables all come from that table, so no list of values is written twice.
//
// A table lists the values in their declaration order, starting at 0, every name once; the
// static_assert beside each table (names_in_order) holds it to that, so to_string is an index.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace systolic {

template <class Enum>
struct enum_name {
    Enum value;
    const char* name;     // as options, reports and logs spell it
    const char* meaning;  // one line, for help texts and the docs' tables
};

template <class Enum, std::size_t N>
using name_table = enum_name<Enum>[N];

namespace detail {
constexpr bool same_name(const char* a, const char* b) {
    while (*a != '\0' && *a == *b)
        ++a, ++b;
    return *a == *b;
}
}  // namespace detail

// Values 0, 1, ... in order and no name twice.
template <class Enum, std::size_t N>
constexpr bool names_in_order(const name_table<Enum, N>& table) {
    for (std::size_t i = 0; i < N; ++i) {
        if (static_cast<std::size_t>(table[i].value) != i) return false;
        for (std::size_t j = 0; j < i; ++j)
            if (detail::same_name(table[i].name, table[j].name)) return false;
    }
    return true;
}

template <class Enum, std::size_t N>
constexpr const char* name_of(const name_table<Enum, N>& table, Enum v) {
    const auto i = static_cast<std::size_t>(v);
    return i < N ? table[i].name : "?";
}

template <class Enum, std::size_t N>
constexpr std::optional<Enum> parse_name(const name_table<Enum, N>& table, std::string_view name) {
    for (const auto& e : table)
        if (name == e.name) return e.value;
    return std::nullopt;
}

// The names in table order, e.g. for CLI::IsMember.
template <class Enum, std::size_t N>
std::vector<std::string> names(const name_table<Enum, N>& table) {
    std::vector<std::string> out;
    for (const auto& e : table)
        out.emplace_back(e.name);
    return out;
}

// "int8, int32, fp32 or bf16", for messages that list the choices.
template <class Enum, std::size_t N>
std::string names_text(const name_table<Enum, N>& table, const char* last = " or ") {
    std::string out;
    for (std::size_t i = 0; i < N; ++i)
        out += std::string(i == 0 ? "" : i + 1 == N ? last : ", ") + table[i].name;
    return out;
}

}  // namespace systolic
