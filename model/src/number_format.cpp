#include "systolic/number_format.h"

#include "systolic/names.h"
#include "systolic/quantize.h"

namespace systolic {

std::string_view to_string(overflow_mode mode) {
    return mode == overflow_mode::wrap ? "wrap" : "saturate";
}

std::optional<overflow_mode> parse_overflow_mode(std::string_view name) {
    return parse_name(name, {overflow_mode::wrap, overflow_mode::saturate});
}

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
    return parse_name(name,
                      {rounding_mode::nearest_even, rounding_mode::nearest_away, rounding_mode::toward_zero});
}

}  // namespace systolic
