// The array and its engines, compiled once per number format (format_instances.h).

#include "systolic/systolic_array.h"
#include "systolic/cycle_engine.h"
#include "systolic/engine.h"
#include "systolic/feeder.h"
#include "systolic/functional_engine.h"
#include "systolic/output_stage.h"
#include "systolic/pe.h"

namespace systolic {

SYSTOLIC_INSTANTIATE_TEMPLATE(feeder)
SYSTOLIC_INSTANTIATE_TEMPLATE(engine)
SYSTOLIC_INSTANTIATE_TEMPLATE(cycle_engine)
SYSTOLIC_INSTANTIATE_TEMPLATE(functional_engine)
SYSTOLIC_INSTANTIATE_TEMPLATE(output_stage)
SYSTOLIC_INSTANTIATE_TEMPLATE(pe)
SYSTOLIC_INSTANTIATE_TEMPLATE(pe_row)
SYSTOLIC_INSTANTIATE_TEMPLATE(pe_grid)
SYSTOLIC_INSTANTIATE_TEMPLATE(systolic_array)

}  // namespace systolic
