#include "systolic/number_format.h"

namespace systolic {

std::string_view to_string(overflow_mode mode) {
    return mode == overflow_mode::wrap ? "wrap" : "saturate";
}

std::optional<overflow_mode> parse_overflow_mode(std::string_view name) {
    if (name == "wrap") return overflow_mode::wrap;
    if (name == "saturate") return overflow_mode::saturate;
    return std::nullopt;
}

}  // namespace systolic

#include "systolic/quantize.h"

namespace systolic {

std::string_view to_string(rounding_mode mode) {
    switch (mode) {
        case rounding_mode::nearest_even:
            return "nearest-even";
        case rounding_mode::nearest_away:
            return "nearest-away";
        case rounding_mode::toward_zero:
            return "toward-zero";
    }
    return "?";
}

std::optional<rounding_mode> parse_rounding_mode(std::string_view name) {
    for (auto m : {rounding_mode::nearest_even, rounding_mode::nearest_away, rounding_mode::toward_zero}) {
        if (to_string(m) == name) return m;
    }
    return std::nullopt;
}

}  // namespace systolic
