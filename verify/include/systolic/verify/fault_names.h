// The known defects the testbench can plant, by name (fault.h applies them). Plain C++, so that a
// command line can hold one.
#pragma once

#include <optional>
#include <string_view>

#include "systolic/names.h"

namespace systolic::verify {

enum class fault {
    none,
    clear_between_k,  // zero the accumulators between K chunks (k_policy::preserve)
    invalid_padding,  // feed padding rows and columns as invalid tokens instead of valid zeros
    no_mask,          // drain all R x C results, in range or not
    global_skew,      // skew the streams by global row/column instead of local
    skip_advance,     // issue one advance edge too few per tile
    extra_advance,    // issue one advance edge too many per tile (only the edge count shows it)
};
inline constexpr enum_name<fault> fault_names[] = {
    {fault::none, "none", "no defect"},
    {fault::clear_between_k, "clear-between-k", "zero the accumulators between K chunks"},
    {fault::invalid_padding, "invalid-padding", "feed padding rows and columns as invalid tokens"},
    {fault::no_mask, "no-mask", "drain all R x C results, in range or not"},
    {fault::global_skew, "global-skew", "skew the streams by global row and column instead of local"},
    {fault::skip_advance, "skip-advance", "one advance edge too few per tile"},
    {fault::extra_advance, "extra-advance", "one advance edge too many per tile"},
};
static_assert(names_in_order(fault_names));
constexpr const char* to_string(fault f) {
    return name_of(fault_names, f);
}
constexpr std::optional<fault> parse_fault(std::string_view name) {
    return parse_name(fault_names, name);
}

}  // namespace systolic::verify
