#include "systolic/fabric_geometry.h"

#include <charconv>
#include <vector>

namespace systolic {

std::optional<fabric_shape> parse_fabric_shape(std::string_view text) {
    std::vector<std::size_t> parts;
    for (;;) {
        const std::size_t x = text.find('x');
        const std::string_view part = text.substr(0, x);
        std::size_t v = 0;
        const auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), v);
        if (part.empty() || ec != std::errc{} || end != part.data() + part.size() || v == 0)
            return std::nullopt;
        parts.push_back(v);
        if (x == std::string_view::npos) break;
        text.remove_prefix(x + 1);
    }
    if (parts.size() < 2 || parts.size() > 3) return std::nullopt;
    return fabric_shape{parts[0], parts[1], parts.size() == 3 ? parts[2] : 1};
}

std::string to_string(const fabric_shape& s) {
    return std::to_string(s.rows) + "x" + std::to_string(s.cols) + "x" + std::to_string(s.depth);
}

}  // namespace systolic
