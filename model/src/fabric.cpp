// The fabric of arrays and its engine, compiled once per number format (format_instances.h).

#include "systolic/fabric.h"
#include "systolic/fabric_engine.h"

namespace systolic {

SYSTOLIC_INSTANTIATE_TEMPLATE(fabric_engine)
SYSTOLIC_INSTANTIATE_TEMPLATE(fabric_array)
SYSTOLIC_INSTANTIATE_TEMPLATE(fabric)

}  // namespace systolic
