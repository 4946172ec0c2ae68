#include "testbench_impl.h"

template class systolic::verify::testbench<systolic::bf16_format>;
