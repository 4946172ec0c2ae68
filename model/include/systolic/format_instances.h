// The closed set of number formats that the model's class templates are compiled for. Each heavy
// template is compiled once per format, in model/src (an explicit instantiation), and its header
// declares those four instantiations extern, so that no other translation unit compiles them
// again (docs/performance.md, "Build time"). A format outside the set still works: it is
// instantiated where it is used, as any template is.
#pragma once

#include <type_traits>

#include "systolic/number_format.h"

// what(tmpl, format) for each of the four formats.
#define SYSTOLIC_FOR_EACH_FORMAT(what, tmpl) \
    what(tmpl, int8_format) what(tmpl, int32_format) what(tmpl, fp32_format) what(tmpl, bf16_format)

// m(format) for each of the four formats: an explicit instantiation of functions, say.
#define SYSTOLIC_FORMAT_APPLY(m, format) m(format)
#define SYSTOLIC_FOR_EACH_FORMAT_DO(m) SYSTOLIC_FOR_EACH_FORMAT(SYSTOLIC_FORMAT_APPLY, m)

namespace systolic {
// The preprocessor's list is the type list, `formats`, in its order: instantiations cannot be
// derived from a type, so the two are held together here instead.
namespace detail {
template <class List>
struct formats_then_void;
template <class... Formats>
struct formats_then_void<type_list<Formats...>> {
    using type = type_list<Formats..., void>;
};
}  // namespace detail
#define SYSTOLIC_FORMAT_TYPE(format) format,
static_assert(std::is_same_v<type_list<SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_FORMAT_TYPE) void>,
                             detail::formats_then_void<formats>::type>,
              "SYSTOLIC_FOR_EACH_FORMAT lists the formats of number_format.h's `formats`, in order");
#undef SYSTOLIC_FORMAT_TYPE
}  // namespace systolic

#define SYSTOLIC_EXTERN_TEMPLATE_OF(tmpl, format) extern template class tmpl<format>;
#define SYSTOLIC_INSTANTIATE_TEMPLATE_OF(tmpl, format) template class tmpl<format>;

// In a header, after the class template (in its namespace): the four instantiations are compiled
// in model/src.
#define SYSTOLIC_EXTERN_TEMPLATE(tmpl) SYSTOLIC_FOR_EACH_FORMAT(SYSTOLIC_EXTERN_TEMPLATE_OF, tmpl)
// In model/src, once for each template that its header declares extern.
#define SYSTOLIC_INSTANTIATE_TEMPLATE(tmpl) SYSTOLIC_FOR_EACH_FORMAT(SYSTOLIC_INSTANTIATE_TEMPLATE_OF, tmpl)
