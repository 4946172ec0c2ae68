// The weight-stationary array's core, compiled once per number format (format_instances.h): its
// edge kernels and their AVX2 clones are, with array_core's, the heaviest code of the model to compile.

#include "systolic/stationary_core.h"

namespace systolic {

SYSTOLIC_INSTANTIATE_TEMPLATE(stationary_core)

}  // namespace systolic
