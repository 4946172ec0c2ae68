#include "systolic/verify/fault.h"

#include "systolic/names.h"

namespace systolic::verify {

std::string_view to_string(fault f) {
    switch (f) {
        case fault::none:
            return "none";
        case fault::clear_between_k:
            return "clear-between-k";
        case fault::invalid_padding:
            return "invalid-padding";
        case fault::no_mask:
            return "no-mask";
        case fault::global_skew:
            return "global-skew";
        case fault::skip_advance:
            return "skip-advance";
        case fault::extra_advance:
            return "extra-advance";
    }
    return "?";
}

std::optional<fault> parse_fault(std::string_view name) {
    return parse_name(name, {fault::none, fault::clear_between_k, fault::invalid_padding, fault::no_mask,
                             fault::global_skew, fault::skip_advance, fault::extra_advance});
}

bool needs_cycle_engine(fault f) {
    return f == fault::invalid_padding || f == fault::global_skew || f == fault::skip_advance ||
           f == fault::extra_advance;
}

}  // namespace systolic::verify
