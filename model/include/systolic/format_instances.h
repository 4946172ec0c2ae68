// The closed set of number formats that the model's class templates are compiled for. Each heavy
// template is compiled once per format, in model/src (an explicit instantiation), and its header
// declares those four instantiations extern, so that no other translation unit compiles them
// again (docs/performance.md, "Build time"). A format outside the set still works: it is
// instantiated where it is used, as any template is.
#pragma once

#include "systolic/number_format.h"

// what(tmpl, format) for each of the four formats.
#define SYSTOLIC_FOR_EACH_FORMAT(what, tmpl) \
    what(tmpl, int8_format) what(tmpl, int32_format) what(tmpl, fp32_format) what(tmpl, bf16_format)

#define SYSTOLIC_EXTERN_TEMPLATE_OF(tmpl, format) extern template class tmpl<format>;
#define SYSTOLIC_INSTANTIATE_TEMPLATE_OF(tmpl, format) template class tmpl<format>;

// In a header, after the class template (in its namespace): the four instantiations are compiled
// in model/src.
#define SYSTOLIC_EXTERN_TEMPLATE(tmpl) SYSTOLIC_FOR_EACH_FORMAT(SYSTOLIC_EXTERN_TEMPLATE_OF, tmpl)
// In model/src, once for each template that its header declares extern.
#define SYSTOLIC_INSTANTIATE_TEMPLATE(tmpl) SYSTOLIC_FOR_EACH_FORMAT(SYSTOLIC_INSTANTIATE_TEMPLATE_OF, tmpl)
