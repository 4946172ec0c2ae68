#include "testbench_impl.h"

template class systolic::verify::testbench<systolic::int32_format>;
