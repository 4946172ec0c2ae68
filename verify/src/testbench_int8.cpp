#include "testbench_impl.h"

template class systolic::verify::testbench<systolic::int8_format>;
