#include "testbench_hosts.h"

template systolic::engine_host<systolic::fp32_format>&
systolic::verify::testbench<systolic::fp32_format>::make_host(const config&);
template systolic::verify::testbench<systolic::fp32_format>::~testbench();
