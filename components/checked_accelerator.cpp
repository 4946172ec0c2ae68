#include "checked_accelerator.h"

#include <tuple>

#include "systolic/verify/fault.h"
#include "systolic/verify/passive_checker.h"

namespace systolic::components {

template <class List>
struct policies_of;
template <class... Formats>
struct policies_of<type_list<Formats...>> {
    using type = std::tuple<verify::fault_policy<Formats>...>;
};

struct checked_accelerator::faults {
    policies_of<formats>::type policies;
};

checked_accelerator::checked_accelerator(const std::string& name, const accelerator::config& cfg,
                                         std::uint64_t ram_base, std::uint64_t ram_size)
    : dut(name.c_str(), cfg),
      m_checks(
          std::make_unique<verify::passive_checker>((name + "_checks").c_str(), dut, ram_base, ram_size)),
      regs(m_checks->target_socket),
      dma(m_checks->dma_initiator_socket),
      irq(dut.irq) {
    dut.dma.bind(m_checks->dma_target_socket);
    m_checks->initiator_socket.bind(dut.regs);
}

checked_accelerator::~checked_accelerator() = default;

void checked_accelerator::inject(verify::fault f) {
    if (!m_faults) m_faults = std::make_unique<faults>();
    std::apply(
        [&](auto&... policy) {
            (policy.set(f), ...);
            (dut.set_fault_hooks(f == verify::fault::none ? nullptr : &policy), ...);
        },
        m_faults->policies);
}

void checked_accelerator::finish() {
    m_checks->finish();
}

std::uint64_t checked_accelerator::jobs_checked() const {
    return m_checks->counts().checked;
}

const std::vector<std::string>& checked_accelerator::failures() const {
    return m_checks->failures();
}

std::uint64_t checked_accelerator::bus_transactions_checked() const {
    return m_checks->transactions_checked();
}

std::vector<std::string> checked_accelerator::protocol_violations() const {
    std::vector<std::string> lines;
    for (const std::string& v : m_checks->protocol_violations())
        lines.push_back("DMA: " + v);
    return lines;
}

std::vector<std::string> checked_accelerator::accelerator_errors() const {
    std::vector<std::string> lines;
    for (const verify::passive_checker::job_report& j : m_checks->jobs())
        if (j.pass && !j.error.empty())
            lines.push_back("job " + std::to_string(j.index) + " (" + j.job + "): " + j.error);
    return lines;
}

}  // namespace systolic::components
