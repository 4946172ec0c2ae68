// The accelerator as every platform puts it on its bus: behind the verification environment's
// passive checker (<systolic/verify/passive_checker.h>), which fronts its registers and holds the
// bus monitor, the protocol checkers and the scoreboards in its DMA path, so that every job software
// starts is checked, and every DMA transaction too:
//
//   bus -> regs [<name>_checks] -> <name>.regs
//   <name>.dma -> [<name>_checks: dma_monitor -> environments] -> dma -> bus (RAM)
//   <name>.irq -> irq
//
// A platform binds regs to its router, dma to its router, and irq to its interrupt signal, then
// reads the results below once the simulation has stopped (after finish()). The register path's
// transactions are the platform's initiator's to check (vp and soc put a protocol checker on their
// CPU's bus, which sees every register access).
//
// Not a module of its own: the two modules are children of the platform, so the accelerator keeps
// its name (<platform>.accel) in logs, waveforms and traces.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

#include "systolic/accelerator.h"
#include "systolic/verify/fault_names.h"

namespace systolic::verify {
class passive_checker;
}

namespace systolic::components {

class checked_accelerator {
public:
    // The accelerator is called `name` and its checker `name`_checks; the environments place their
    // own jobs (environment::check) in [ram_base, ram_base + ram_size).
    checked_accelerator(const std::string& name, const accelerator::config& cfg, std::uint64_t ram_base,
                        std::uint64_t ram_size);
    checked_accelerator(const checked_accelerator&) = delete;
    checked_accelerator& operator=(const checked_accelerator&) = delete;
    ~checked_accelerator();

    accelerator dut;

private:
    // Held by pointer so that a platform's header, and every unit that includes one, need not
    // parse the verification environment's headers (a second per unit: docs/performance.md).
    std::unique_ptr<verify::passive_checker> m_checks;
    struct faults;  // one verify::fault_policy per format
    std::unique_ptr<faults> m_faults;

public:
    tlm::tlm_target_socket<>& regs;    // the accelerator's registers, through the checker
    tlm::tlm_initiator_socket<>& dma;  // the accelerator's DMA, after the checker's chain
    sc_core::sc_out<bool>& irq;        // the accelerator's level interrupt

    // The checker (<systolic/verify/passive_checker.h>): its environments, its job reports.
    verify::passive_checker& checks() { return *m_checks; }
    const verify::passive_checker& checks() const { return *m_checks; }

    // Plants a known defect (verify/fault.h) in every job that follows, of every format, so that a
    // platform shows its checks catch what its software does not (--inject); fault::none removes it.
    void inject(verify::fault f);

    // Once the simulation has stopped: a job still running then fails (it was never checked).
    void finish();

    // Jobs the passive checker checked (refusals included), and the failed ones, one line each.
    std::uint64_t jobs_checked() const;
    const std::vector<std::string>& failures() const;
    // DMA transactions the protocol checker saw, and the TLM-2.0 rules broken there, one line each,
    // each starting "DMA: ".
    std::uint64_t bus_transactions_checked() const;
    std::vector<std::string> protocol_violations() const;
    // The jobs the accelerator refused or ended with ERR_DMA, rightly by the checker, one line each:
    // "job 2 (refused: unknown DTYPE 7): ERR_DTYPE". Software sees only a code in ERROR; these say why.
    std::vector<std::string> accelerator_errors() const;
};

}  // namespace systolic::components
