// The vcd_observer, compiled once per number format (format_instances.h).

#include "systolic/observe/vcd_observer.h"

namespace systolic::observe {

SYSTOLIC_INSTANTIATE_TEMPLATE(vcd_observer)

}  // namespace systolic::observe
