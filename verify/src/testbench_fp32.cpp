#include "testbench_impl.h"

template class systolic::verify::testbench<systolic::fp32_format>;
