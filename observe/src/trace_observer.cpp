// The trace_observer, compiled once per number format (format_instances.h).

#include "systolic/observe/trace_observer.h"

namespace systolic::observe {

SYSTOLIC_INSTANTIATE_TEMPLATE(trace_observer)

}  // namespace systolic::observe
