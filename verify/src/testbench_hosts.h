// The testbench's make_host and destructor, included by one source file per format
// (testbench_hosts_<format>.cpp): they instantiate the array and the fabric, compiled apart from the
// controller (testbench_impl.h).
#pragma once

#include "systolic/verify/testbench.h"

namespace systolic::verify {

template <class Format>
engine_host<Format>& testbench<Format>::make_host(const config& cfg) {
    if (cfg.fabric.single()) {
        m_array = std::make_unique<systolic_array<Format>>("array", cfg.rows, cfg.cols);
        return *m_array;
    }
    if (cfg.rows != cfg.cols) throw std::invalid_argument("a fabric of arrays needs square arrays");
    m_fabric = std::make_unique<fabric<Format>>(
        "fabric", fabric_geometry{cfg.fabric, cfg.rows, cfg.link_latency}, cfg.threads);
    return *m_fabric;
}

template <class Format>
testbench<Format>::~testbench() = default;

}  // namespace systolic::verify
