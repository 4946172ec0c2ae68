// The array's core, compiled once per number format (format_instances.h): its edge kernels and
// their AVX2 clones are the heaviest code of the model to compile.

#include "systolic/array_core.h"

namespace systolic {

SYSTOLIC_INSTANTIATE_TEMPLATE(array_core)

}  // namespace systolic
