// The example virtual platform's bus map (systolic_vp.cpp draws it): a CPU running a job script and
// the checked accelerator (checked_accelerator.h: every job the CPU starts is checked) on one
// router with the RAM. The CPU reaches the bus through a protocol checker of its own.
#pragma once

#include <ostream>
#include <string>
#include <systemc>
#include <vector>

#include "checked_accelerator.h"
#include "cpu.h"
#include "job_script.h"
#include "router.h"
#include "systolic/accelerator.h"
#include "systolic/memory.h"
#include "systolic/observe/vcd_writer.h"
#include "systolic/verify/protocol_checker.h"

namespace systolic::vp {

struct platform : sc_core::sc_module {
    components::router bus;
    memory ram;
    components::checked_accelerator accel;
    vp::cpu cpu;
    verify::protocol_checker cpu_checker;
    sc_core::sc_signal<bool> irq;
    std::vector<std::string> violations;  // the CPU's bus, as the protocol checker words them

    SC_HAS_PROCESS(platform);

    platform(const sc_core::sc_module_name& name, const cpu::config& cc, const accelerator::config& ac,
             std::vector<command> script, std::ostream& out);

    // The interrupt line in the VCD beside the accelerator's signals, as <platform>.irq.
    void trace_irq(observe::vcd_writer& w);

private:
    void dump_irq();

    observe::vcd_writer* m_vcd = nullptr;
    observe::vcd_writer::id m_irq_var = 0;
};

}  // namespace systolic::vp
