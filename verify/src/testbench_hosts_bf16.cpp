#include "testbench_hosts.h"

template systolic::engine_host<systolic::bf16_format>&
systolic::verify::testbench<systolic::bf16_format>::make_host(const config&);
template systolic::verify::testbench<systolic::bf16_format>::~testbench();
