// One way to read back the names that to_string() gives an enum's values (for options, reports
// and logs), so each enum lists its values once and spells each name once.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>

namespace systolic {

template <class Enum>
std::optional<Enum> parse_name(std::string_view name, std::initializer_list<Enum> values) {
    for (Enum v : values) {
        if (to_string(v) == name) return v;
    }
    return std::nullopt;
}

}  // namespace systolic
