// The known defects the testbench can plant, by name (fault.h applies them). Plain C++, so that a
// command line can hold one.
#pragma once

#include <optional>
#include <string_view>

#include "systolic/job_names.h"
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
    skip_preload,     // ws, is: issue one preload edge too few per fold (the weights sit a row off)
    miscount_gated,   // the energy account counts one MAC with a zero operand as a MAC of two nonzero ones
};
inline constexpr enum_name<fault> fault_names[] = {
    {fault::none, "none", "no defect"},
    {fault::clear_between_k, "clear-between-k", "zero the accumulators between K chunks"},
    {fault::invalid_padding, "invalid-padding", "feed padding rows and columns as invalid tokens"},
    {fault::no_mask, "no-mask", "drain all R x C results, in range or not"},
    {fault::global_skew, "global-skew", "skew the streams by global row and column instead of local"},
    {fault::skip_advance, "skip-advance", "one advance edge too few per tile"},
    {fault::extra_advance, "extra-advance", "one advance edge too many per tile"},
    {fault::skip_preload, "skip-preload", "ws, is: one preload edge too few per fold"},
    {fault::miscount_gated, "miscount-gated",
     "count one gated MAC as a random one (--energy; only the energy checks see it)"},
};
static_assert(names_in_order(fault_names));
constexpr const char* to_string(fault f) {
    return name_of(fault_names, f);
}
constexpr std::optional<fault> parse_fault(std::string_view name) {
    return parse_name(fault_names, name);
}
// Whether a defect exists in a dataflow: the stationary dataflows have no feed tables and no
// accumulators kept between chunks, and output stationary preloads nothing.
constexpr bool fault_applies(fault f, dataflow_kind df) {
    if (df == dataflow_kind::os) return f != fault::skip_preload;
    return f == fault::none || f == fault::no_mask || f == fault::skip_advance || f == fault::extra_advance ||
           f == fault::skip_preload || f == fault::miscount_gated;
}

}  // namespace systolic::verify
