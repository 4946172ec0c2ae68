#include "testbench_hosts.h"

template systolic::engine_host<systolic::int32_format>&
systolic::verify::testbench<systolic::int32_format>::make_host(const config&);
template systolic::verify::testbench<systolic::int32_format>::~testbench();
