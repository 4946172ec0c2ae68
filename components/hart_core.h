// A RISC-V hart (RV32IMAC or RV64IMAC, machine mode) on the Unicorn engine, with no SystemC in it:
// the SystemC shell (hart.h) adds the bus, the time and the interrupt lines. RAM is given as host
// memory and runs at JIT speed; every other mapped range goes to a hart_bus, one call per access.
//
// run(budget) executes whole translated blocks until about `budget` instructions have retired (the
// block that crosses it finishes), a bus callback asks for a stop, a wfi is executed, a block has
// changed what decides whether an interrupt is taken (it wrote mstatus or mie, or was an mret),
// or a fault.
// Instructions are counted per block, from the block's bytes (2 or 4 per instruction), so nothing
// is done per instruction. A block's count is kept by its address and size: code that rewrites
// itself in place (not the loader's, nor a test's: code_changed()) may be counted as it was. An
// interrupt is taken between runs (take_interrupt) by writing the trap CSRs as the privileged spec
// says; Unicorn itself is given none, and its mret returns. Code runs from host memory only.
//
// A synchronous exception (illegal instruction, ecall, ebreak, misaligned atomic, access to
// unmapped memory, a bus error) ends the run as a fault: Unicorn reports them to the host rather
// than through mtvec, and the platform treats every one as a firmware bug. The fault's pc is exact
// for exceptions; for an access to unmapped memory it is the load or store of the faulting block
// whose address, from the registers at the fault, is the one accessed (the block's start if none
// is); for a bus error (a device refused the access) it is the start of the block.
#pragma once

#include <cstdint>
#include <exception>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

struct uc_struct;

namespace systolic::components {

enum class isa { rv32, rv64 };

// Where the accesses outside host-mapped RAM go. false: the access failed (a bus error).
class hart_bus {
public:
    virtual ~hart_bus() = default;
    virtual bool bus_read(std::uint64_t address, void* data, unsigned length) = 0;
    virtual bool bus_write(std::uint64_t address, const void* data, unsigned length) = 0;
};

struct hart_fault {
    std::uint64_t pc = 0;
    std::uint64_t cause = 0;    // mcause's value for the trap it would have been
    std::uint64_t address = 0;  // the address accessed, or the instruction's own
    std::string what;           // "illegal instruction", "load from unmapped address", ...
};

// The trap CSRs and bits the platform uses.
namespace csr {
constexpr std::uint64_t mstatus_mie = 1u << 3, mstatus_mpie = 1u << 7, mstatus_mpp = 3u << 11;
constexpr unsigned external_irq = 11, timer_irq = 7;  // mip and mie bit numbers, mcause codes
}  // namespace csr

class hart_core {
public:
    // interrupt_state: the block before wrote mstatus or mie, or returned with mret. The privileged
    // spec has the interrupt conditions evaluated again right after such an instruction (3.1.9);
    // QEMU ends a translated block after each, so the run stops before the next one.
    enum class stop { budget, requested, wfi, fault, interrupt_state };

    hart_core(isa arch, hart_bus& bus);
    ~hart_core();
    hart_core(const hart_core&) = delete;
    hart_core& operator=(const hart_core&) = delete;

    isa arch() const { return m_isa; }
    unsigned xlen() const { return m_isa == isa::rv32 ? 32 : 64; }

    // Maps [base, base + size) (4 KiB multiples) to host memory, or to the bus. Not during run().
    void map_memory(std::uint64_t base, std::uint64_t size, std::uint8_t* host);
    void map_bus(std::uint64_t base, std::uint64_t size);
    void unmap(std::uint64_t base, std::uint64_t size);

    // [begin, end) of host-mapped RAM was written other than by the hart's own stores (a loader, a
    // test): code the engine translated from it is dropped. The hart's stores need no call.
    void code_changed(std::uint64_t begin, std::uint64_t end);

    // Runs from pc(); see the header comment. retired() counts every run's instructions.
    stop run(std::uint64_t budget);
    // From a bus callback: end the run after the current block (which runs to its end).
    void request_stop();
    // Instructions of the current run so far, the current block included.
    std::uint64_t run_retired() const { return m_run_count; }
    std::uint64_t retired() const { return m_retired; }
    const std::optional<hart_fault>& fault() const { return m_fault; }

    std::uint64_t pc() const;
    void set_pc(std::uint64_t pc);
    std::uint64_t reg(unsigned x) const;  // x0..x31
    void set_reg(unsigned x, std::uint64_t value);
    std::uint64_t mstatus() const;
    std::uint64_t mie() const;

    // Takes the highest-priority interrupt of `pending` (mip bits: external 11 before timer 7) that
    // mie enables, when mstatus.MIE is set: mepc = pc, mcause, mtval = 0, MPIE = MIE, MIE = 0,
    // MPP = M, pc = mtvec (direct) or mtvec base + 4 * cause (vectored). Returns the cause, or -1
    // when none is taken; with mtvec 0 (no trap handler) it records a fault and returns -1.
    int take_interrupt(std::uint64_t pending);
    // wfi's wake-up condition: an interrupt pending that mie enables, whatever mstatus.MIE says.
    bool wakes(std::uint64_t pending) const { return (pending & mie()) != 0; }

private:
    struct ram_range {
        std::uint64_t base, size;
        std::uint8_t* host;
    };
    struct bus_range {
        hart_core* core;
        std::uint64_t base, size;
    };

    struct callbacks;  // Unicorn's hooks (hart_core.cpp), with Unicorn's own signatures
    friend struct callbacks;

    void stop_now();
    void bus_error(std::uint64_t address, unsigned size, bool write);
    void set_fault(std::uint64_t pc, std::uint64_t cause, std::uint64_t address, std::string what);
    struct block_count {
        std::uint64_t address = ~std::uint64_t{0};
        std::uint32_t size = 0, count = 0;
        bool interrupt_state = false;  // its last instruction writes mstatus or mie, or is an mret
    };
    const block_count& block_info(std::uint64_t address, std::uint32_t size);
    void forget_counts();
    const std::uint8_t* host_code(std::uint64_t address, std::uint64_t length) const;
    // The load or store of the current block that accesses `address` with the registers as they are.
    std::optional<std::uint64_t> access_pc(std::uint64_t address) const;
    std::uint64_t read_csr(int reg) const;
    void write_csr(int reg, std::uint64_t value);
    std::uint64_t mask(std::uint64_t v) const { return m_isa == isa::rv32 ? v & 0xffffffffu : v; }

    isa m_isa;
    hart_bus& m_bus;
    uc_struct* m_uc = nullptr;
    std::vector<ram_range> m_ram;
    std::list<bus_range> m_bus_ranges;  // stable addresses: Unicorn holds pointers to them
    std::vector<block_count> m_counts = std::vector<block_count>(4096);  // a power of two
    std::uint64_t m_budget = 0, m_run_count = 0, m_retired = 0;
    std::uint64_t m_block = 0, m_block_size = 0;  // the block being executed
    bool m_stopping = false;                      // uc_emu_stop has been called: the next block will not run
    bool m_stop_pending = false;                  // request_stop(): stop at the next block
    bool m_interrupt_state = false;               // the block being executed is an interrupt_state one
    stop m_stop = stop::budget;
    std::optional<hart_fault> m_fault;
    std::exception_ptr m_error;  // thrown by the bus inside a run, rethrown after it
};

}  // namespace systolic::components
