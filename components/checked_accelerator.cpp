#include "checked_accelerator.h"

namespace systolic::components {

checked_accelerator::checked_accelerator(const std::string& name, const accelerator::config& cfg,
                                         std::uint64_t ram_base, std::uint64_t ram_size)
    : dut(name.c_str(), cfg),
      checks((name + "_checks").c_str(), dut, ram_base, ram_size),
      regs(checks.target_socket),
      dma(checks.dma_initiator_socket),
      irq(dut.irq) {
    dut.dma.bind(checks.dma_target_socket);
    checks.initiator_socket.bind(dut.regs);
}

std::vector<std::string> checked_accelerator::protocol_violations() const {
    std::vector<std::string> lines;
    for (const std::string& v : checks.protocol_violations())
        lines.push_back("DMA: " + v);
    return lines;
}

std::vector<std::string> checked_accelerator::accelerator_errors() const {
    std::vector<std::string> lines;
    for (const verify::passive_checker::job_report& j : checks.jobs())
        if (j.pass && !j.error.empty())
            lines.push_back("job " + std::to_string(j.index) + " (" + j.job + "): " + j.error);
    return lines;
}

}  // namespace systolic::components
