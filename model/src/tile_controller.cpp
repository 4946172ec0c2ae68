// The tile controller, compiled once per number format (format_instances.h).

#include "systolic/tile_controller.h"

namespace systolic {

SYSTOLIC_INSTANTIATE_TEMPLATE(tile_controller)

}  // namespace systolic
