#include "testbench_hosts.h"

template systolic::engine_host<systolic::int8_format>&
systolic::verify::testbench<systolic::int8_format>::make_host(const config&);
template systolic::verify::testbench<systolic::int8_format>::~testbench();
