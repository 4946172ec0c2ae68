#include "hart_core.h"

#include <unicorn/unicorn.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include "io/text.h"

namespace systolic::components {

namespace {

void check(uc_err err, const char* call) {
    if (err != UC_ERR_OK) throw std::runtime_error(std::string("unicorn: ") + call + ": " + uc_strerror(err));
}

// The privileged spec's names of the synchronous exception codes.
const char* exception_name(std::uint32_t cause) {
    switch (cause) {
        case 0:
            return "instruction address misaligned";
        case 1:
            return "instruction access fault";
        case 2:
            return "illegal instruction";
        case 3:
            return "breakpoint (ebreak)";
        case 4:
            return "load address misaligned";
        case 5:
            return "load access fault";
        case 6:
            return "store/AMO address misaligned";
        case 7:
            return "store/AMO access fault";
        case 8:
            return "environment call (ecall) from U-mode";
        case 11:
            return "environment call (ecall) from M-mode";
        default:
            return "exception";
    }
}

constexpr std::uint32_t wfi_encoding = 0x10500073, mret_encoding = 0x30200073;

// The A extension's instruction name for an opcode-0x2f encoding ("amoadd.w", "lr.d"), or "" for
// none.
std::string atomic_name(std::uint32_t insn) {
    if ((insn & 0x7f) != 0x2f) return "";
    const unsigned width = (insn >> 12) & 7;
    if (width != 2 && width != 3) return "";
    const char* name = nullptr;
    switch (insn >> 27) {
        case 0x00:
            name = "amoadd";
            break;
        case 0x01:
            name = "amoswap";
            break;
        case 0x02:
            name = "lr";
            break;
        case 0x03:
            name = "sc";
            break;
        case 0x04:
            name = "amoxor";
            break;
        case 0x08:
            name = "amoor";
            break;
        case 0x0c:
            name = "amoand";
            break;
        case 0x10:
            name = "amomin";
            break;
        case 0x14:
            name = "amomax";
            break;
        case 0x18:
            name = "amominu";
            break;
        case 0x1c:
            name = "amomaxu";
            break;
        default:
            return "";
    }
    return std::string(name) + (width == 2 ? ".w" : ".d");
}

// Whether a 32-bit instruction writes mstatus or mie (a csrrw or csrrwi always; a csrrs, csrrc or
// their immediate forms unless rs1 or the immediate is 0), or is an mret: after it, the interrupt
// conditions are evaluated again.
bool changes_interrupt_state(std::uint32_t insn) {
    if (insn == mret_encoding) return true;
    if ((insn & 0x7f) != 0x73) return false;
    const unsigned funct3 = (insn >> 12) & 7, rs1 = (insn >> 15) & 31, csr = insn >> 20;
    if (csr != 0x300 && csr != 0x304) return false;  // mstatus, mie
    switch (funct3) {
        case 1:  // csrrw
        case 5:  // csrrwi
            return true;
        case 2:  // csrrs
        case 3:  // csrrc
        case 6:  // csrrsi
        case 7:  // csrrci
            return rs1 != 0;
        default:
            return false;
    }
}

// The address a load, store or AMO accesses (x: the registers), or nothing for any other instruction.
std::optional<std::uint64_t> effective_address(std::uint32_t insn, unsigned length, bool rv64,
                                               const std::uint64_t* x) {
    if (length == 4) {
        const unsigned rs1 = (insn >> 15) & 31;
        const auto i_imm = std::uint64_t(std::int64_t(std::int32_t(insn) >> 20));
        const auto s_imm =
            std::uint64_t(std::int64_t((std::int32_t(insn) >> 25) * 32 + std::int32_t((insn >> 7) & 31)));
        switch (insn & 0x7f) {
            case 0x03:
                return x[rs1] + i_imm;  // loads
            case 0x23:
                return x[rs1] + s_imm;  // stores
            case 0x2f:
                return x[rs1];  // LR, SC, AMOs
            default:
                return std::nullopt;
        }
    }
    const unsigned funct3 = insn >> 13, rs1c = 8 + ((insn >> 7) & 7);
    if ((insn & 3) == 0) {  // quadrant 0: c.lw, c.sw, c.ld, c.sd
        const std::uint64_t word = ((insn >> 10) & 7) << 3 | ((insn >> 6) & 1) << 2 | ((insn >> 5) & 1) << 6;
        const std::uint64_t dword = ((insn >> 10) & 7) << 3 | ((insn >> 5) & 3) << 6;
        if (funct3 == 2 || funct3 == 6) return x[rs1c] + word;
        if (rv64 && (funct3 == 3 || funct3 == 7)) return x[rs1c] + dword;
    } else if ((insn & 3) == 2) {  // quadrant 2: the stack-pointer forms
        const std::uint64_t sp = x[2];
        if (funct3 == 2)
            return sp + (((insn >> 12) & 1) << 5 | ((insn >> 4) & 7) << 2 | ((insn >> 2) & 3) << 6);
        if (funct3 == 6) return sp + (((insn >> 9) & 15) << 2 | ((insn >> 7) & 3) << 6);
        if (rv64 && funct3 == 3)
            return sp + (((insn >> 12) & 1) << 5 | ((insn >> 5) & 3) << 3 | ((insn >> 2) & 7) << 6);
        if (rv64 && funct3 == 7) return sp + (((insn >> 10) & 7) << 3 | ((insn >> 7) & 7) << 6);
    }
    return std::nullopt;
}

}  // namespace

// Every callback catches what it calls: nothing may unwind through Unicorn's C frames.
struct hart_core::callbacks {
    static void block(uc_engine*, std::uint64_t address, std::uint32_t size, void* self) {
        auto& c = *static_cast<hart_core*>(self);
        // Called before the block's exit check: a stop asked for now means the block does not run,
        // so it is not counted. A stop asked for by a bus callback is made here, at the next block:
        // one asked for inside the access would leave the block at once and run it again from its
        // start, the instructions before the access (and the access) twice.
        if (c.m_stopping) return;
        if (c.m_stop_pending || c.m_interrupt_state || c.m_run_count >= c.m_budget) {
            c.m_stop = c.m_stop_pending      ? stop::requested
                       : c.m_interrupt_state ? stop::interrupt_state
                                             : stop::budget;
            c.stop_now();
            return;
        }
        c.m_block = address;
        c.m_block_size = size;
        const block_count& b = c.block_info(address, size);
        c.m_run_count += b.count;
        c.m_interrupt_state = b.interrupt_state;
    }

    static void exception(uc_engine*, std::uint32_t cause, void* self) {
        auto& c = *static_cast<hart_core*>(self);
        // Unicorn has moved the pc four bytes past the instruction, whatever its length.
        const std::uint64_t pc = c.mask(c.pc() - 4);
        // QEMU adds the privilege level to the U-mode ecall code when it takes the trap, which
        // Unicorn leaves to the host: the hart runs in machine mode.
        if (cause == 8) cause = 11;
        // QEMU's atomic path reports a misaligned AMO or LR as a misaligned load, with no
        // address the host can read. The privileged spec makes each a store/AMO address misaligned,
        // with the data address in mtval: rs1, which the faulting instruction has not changed.
        if (cause == 4 || cause == 6)
            if (const std::uint8_t* code = c.host_code(pc, 4)) {
                std::uint32_t insn;
                std::memcpy(&insn, code, sizeof insn);
                if (const std::string name = atomic_name(insn); !name.empty()) {
                    const std::uint64_t address = c.mask(c.reg((insn >> 15) & 31));
                    const unsigned bytes = ((insn >> 12) & 7) == 2 ? 4 : 8;
                    c.set_fault(pc, 6, address,
                                std::string(exception_name(6)) + ": " + std::to_string(bytes) + "-byte " +
                                    name + " at " + io::hex(address));
                    c.stop_now();
                    return;
                }
            }
        std::string what = exception_name(cause);
        if (cause == 2)
            if (const std::uint8_t* code = c.host_code(pc, 2)) {
                std::uint32_t insn = code[0] | code[1] << 8;
                if ((insn & 3) == 3 && c.host_code(pc, 4))
                    insn |= std::uint32_t(code[2]) << 16 | std::uint32_t(code[3]) << 24;
                what += " " + io::hex(insn);
            }
        c.set_fault(pc, cause, pc, what);
        c.stop_now();
    }

    // Unicorn's RISC-V target sends ebreak here rather than to the exception hook, with the pc exact.
    static bool invalid(uc_engine*, void* self) {
        auto& c = *static_cast<hart_core*>(self);
        const std::uint64_t pc = c.pc();
        c.set_fault(pc, 3, pc, exception_name(3));
        c.m_stopping = true;
        return false;
    }

    static bool unmapped(uc_engine*, uc_mem_type type, std::uint64_t address, int size, std::int64_t,
                         void* self) {
        auto& c = *static_cast<hart_core*>(self);
        address = c.mask(address);
        const std::string bytes = std::to_string(size) + "-byte ";
        if (type == UC_MEM_FETCH_PROT) {  // the engine executes from host memory only
            c.set_fault(
                address, 1, address,
                "instruction fetch from " + io::hex(address) +
                    ", which the hart reaches over the bus only (code runs from RAM mapped over DMI)");
        } else if (type == UC_MEM_FETCH_UNMAPPED) {
            c.set_fault(address, 1, address, "instruction fetch from unmapped address " + io::hex(address));
        } else {
            const bool store = type == UC_MEM_WRITE_UNMAPPED;
            c.set_fault(c.access_pc(address).value_or(c.m_block), store ? 7 : 5, address,
                        bytes + (store ? "store to" : "load from") + " unmapped address " + io::hex(address));
        }
        c.m_stopping = true;  // Unicorn stops at once
        return false;
    }

    static std::uint64_t bus_read(uc_engine*, std::uint64_t offset, unsigned size, void* r) {
        auto& range = *static_cast<bus_range*>(r);
        hart_core& c = *range.core;
        std::uint64_t value = 0;
        const std::uint64_t address = range.base + offset;
        bool ok = false;
        try {
            ok = c.m_bus.bus_read(address, &value, size);
        } catch (...) {
            c.m_error = std::current_exception();
        }
        if (!ok) c.bus_error(address, size, false);
        return value;
    }

    static void bus_write(uc_engine*, std::uint64_t offset, unsigned size, std::uint64_t value, void* r) {
        auto& range = *static_cast<bus_range*>(r);
        hart_core& c = *range.core;
        const std::uint64_t address = range.base + offset;
        bool ok = false;
        try {
            ok = c.m_bus.bus_write(address, &value, size);  // little-endian: the low bytes first
        } catch (...) {
            c.m_error = std::current_exception();
        }
        if (!ok) c.bus_error(address, size, true);
    }
};

hart_core::hart_core(isa arch, hart_bus& bus) : m_isa(arch), m_bus(bus) {
    check(uc_open(UC_ARCH_RISCV, arch == isa::rv32 ? UC_MODE_RISCV32 : UC_MODE_RISCV64, &m_uc), "uc_open");
    try {
        // SiFive's E31 and E51 are exactly RV32IMAC and RV64IMAC with machine and user modes, no MMU.
        check(uc_ctl_set_cpu_model(
                  m_uc, arch == isa::rv32 ? int(UC_CPU_RISCV32_SIFIVE_E31) : int(UC_CPU_RISCV64_SIFIVE_E51)),
              "cpu model");
        // No exit address: a run ends only by a stop, a wfi or a fault.
        check(uc_ctl_exits_enable(m_uc), "exits");
        uc_hook h;
        check(uc_hook_add(m_uc, &h, UC_HOOK_BLOCK, reinterpret_cast<void*>(&callbacks::block), this, 1, 0),
              "block hook");
        check(uc_hook_add(m_uc, &h, UC_HOOK_INTR, reinterpret_cast<void*>(&callbacks::exception), this, 1, 0),
              "exception hook");
        check(uc_hook_add(m_uc, &h, UC_HOOK_INSN_INVALID, reinterpret_cast<void*>(&callbacks::invalid), this,
                          1, 0),
              "invalid-instruction hook");
        check(uc_hook_add(m_uc, &h, UC_HOOK_MEM_UNMAPPED | UC_HOOK_MEM_FETCH_PROT,
                          reinterpret_cast<void*>(&callbacks::unmapped), this, 1, 0),
              "unmapped-memory hook");
    } catch (...) {
        uc_close(m_uc);
        throw;
    }
}

hart_core::~hart_core() {
    uc_close(m_uc);
}

void hart_core::map_memory(std::uint64_t base, std::uint64_t size, std::uint8_t* host) {
    check(uc_mem_map_ptr(m_uc, base, size, UC_PROT_ALL, host), "uc_mem_map_ptr");
    m_ram.push_back({base, size, host});
    forget_counts();
}

void hart_core::map_bus(std::uint64_t base, std::uint64_t size) {
    bus_range& r = m_bus_ranges.emplace_back(bus_range{this, base, size});
    const uc_err err = uc_mmio_map(m_uc, base, size, &callbacks::bus_read, &r, &callbacks::bus_write, &r);
    if (err != UC_ERR_OK) m_bus_ranges.pop_back();
    check(err, "uc_mmio_map");
}

void hart_core::unmap(std::uint64_t base, std::uint64_t size) {
    check(uc_mem_unmap(m_uc, base, size), "uc_mem_unmap");
    forget_counts();
    m_ram.erase(
        std::remove_if(m_ram.begin(), m_ram.end(), [&](const ram_range& r) { return r.base == base; }),
        m_ram.end());
    m_bus_ranges.remove_if([&](const bus_range& r) { return r.base == base; });
}

void hart_core::code_changed(std::uint64_t begin, std::uint64_t end) {
    check(uc_ctl_remove_cache(m_uc, begin, end), "remove cache");
    forget_counts();
}

void hart_core::forget_counts() {
    std::fill(m_counts.begin(), m_counts.end(), block_count{});
}

hart_core::stop hart_core::run(std::uint64_t budget) {
    m_fault.reset();
    m_error = nullptr;
    m_run_count = 0;
    m_budget = budget;
    m_stopping = m_stop_pending = m_interrupt_state = false;
    m_stop = stop::budget;
    if (budget == 0) return stop::budget;
    const uc_err err = uc_emu_start(m_uc, pc(), 0, 0, 0);
    m_retired += m_run_count;
    if (m_error) std::rethrow_exception(m_error);
    if (m_fault) return stop::fault;
    if (err != UC_ERR_OK) {
        set_fault(pc(), 0, pc(), std::string("the engine stopped: ") + uc_strerror(err));
        return stop::fault;
    }
    if (m_stopping) return m_stop;
    // Neither a stop nor a fault: Unicorn halts the CPU at a wfi, with the pc after it. (A stop
    // asked for in the wfi's block is then made by the wfi.)
    const std::uint8_t* before = host_code(mask(pc() - 4), 4);
    std::uint32_t insn = 0;
    if (before) std::memcpy(&insn, before, 4);
    if (insn != wfi_encoding) {
        set_fault(pc(), 0, pc(), "the engine stopped for no known reason");
        return stop::fault;
    }
    return stop::wfi;
}

void hart_core::request_stop() {
    m_stop_pending = true;
}

void hart_core::stop_now() {
    m_stopping = true;
    uc_emu_stop(m_uc);
}

void hart_core::bus_error(std::uint64_t address, unsigned size, bool write) {
    if (!m_fault)
        set_fault(m_block, write ? 7 : 5, address,
                  std::string("bus error: ") + std::to_string(size) + "-byte " +
                      (write ? "store to " : "load from ") + io::hex(address) + " refused by the device");
    stop_now();
}

void hart_core::set_fault(std::uint64_t pc, std::uint64_t cause, std::uint64_t address, std::string what) {
    m_fault = hart_fault{mask(pc), cause, mask(address), std::move(what)};
}

const std::uint8_t* hart_core::host_code(std::uint64_t address, std::uint64_t length) const {
    for (const ram_range& r : m_ram)
        if (address >= r.base && address - r.base < r.size && length <= r.size - (address - r.base))
            return r.host + (address - r.base);
    return nullptr;
}

const hart_core::block_count& hart_core::block_info(std::uint64_t address, std::uint32_t size) {
    // Counting a block's bytes costs several times what running it does: the count is kept by the
    // block's address and size, in a table indexed by the address.
    block_count& e = m_counts[(address >> 1) & (m_counts.size() - 1)];
    if (e.address == address && e.size == size) return e;
    static const block_count none;
    const std::uint8_t* code = host_code(address, size);
    if (!code) return none;  // not reached: the engine runs code from host memory only
    // Bits 1:0 of an instruction's first halfword are 11 for a 32-bit one, else it is 16-bit.
    std::uint32_t n = 0, last = 0;
    for (std::uint32_t off = 0; off < size; ++n) {
        last = off;
        off += (code[off] & 3) == 3 ? 4 : 2;
    }
    std::uint32_t insn = 0;
    if ((code[last] & 3) == 3 && last + 4 <= size) std::memcpy(&insn, code + last, 4);
    e = {address, size, n, changes_interrupt_state(insn)};
    return e;
}

std::optional<std::uint64_t> hart_core::access_pc(std::uint64_t address) const {
    const std::uint8_t* code = host_code(m_block, m_block_size);
    if (!code) return std::nullopt;
    std::uint64_t x[32];
    for (unsigned i = 0; i < 32; ++i)
        x[i] = reg(i);
    for (std::uint64_t off = 0; off + 2 <= m_block_size;) {
        std::uint32_t insn = code[off] | code[off + 1] << 8;
        const unsigned length = (insn & 3) == 3 ? 4 : 2;
        if (length == 4) {
            if (off + 4 > m_block_size) break;
            insn |= std::uint32_t(code[off + 2]) << 16 | std::uint32_t(code[off + 3]) << 24;
        }
        if (const auto ea = effective_address(insn, length, m_isa == isa::rv64, x);
            ea && mask(*ea) == address)
            return m_block + off;
        off += length;
    }
    return std::nullopt;
}

std::uint64_t hart_core::read_csr(int reg) const {
    std::uint64_t v = 0;  // Unicorn writes 4 bytes on RV32, the low half on this little-endian host
    check(uc_reg_read(m_uc, reg, &v), "uc_reg_read");
    return mask(v);
}

void hart_core::write_csr(int reg, std::uint64_t value) {
    check(uc_reg_write(m_uc, reg, &value), "uc_reg_write");
}

std::uint64_t hart_core::pc() const {
    return read_csr(UC_RISCV_REG_PC);
}
void hart_core::set_pc(std::uint64_t pc) {
    write_csr(UC_RISCV_REG_PC, pc);
}
std::uint64_t hart_core::reg(unsigned x) const {
    return x == 0 ? 0 : read_csr(UC_RISCV_REG_X0 + int(x));
}
void hart_core::set_reg(unsigned x, std::uint64_t value) {
    if (x != 0) write_csr(UC_RISCV_REG_X0 + int(x), value);
}
std::uint64_t hart_core::mstatus() const {
    return read_csr(UC_RISCV_REG_MSTATUS);
}
std::uint64_t hart_core::mie() const {
    return read_csr(UC_RISCV_REG_MIE);
}

int hart_core::take_interrupt(std::uint64_t pending) {
    const std::uint64_t status = mstatus();
    if (!(status & csr::mstatus_mie)) return -1;
    const std::uint64_t enabled = pending & mie();
    int cause = -1;
    for (const unsigned c : {csr::external_irq, csr::timer_irq})  // the privileged spec's priority
        if (enabled >> c & 1) {
            cause = int(c);
            break;
        }
    if (cause < 0) return -1;
    const std::uint64_t vector = read_csr(UC_RISCV_REG_MTVEC), here = pc();
    const std::uint64_t mcause = std::uint64_t(1) << (xlen() - 1) | unsigned(cause);
    if ((vector & ~std::uint64_t{3}) == 0) {
        set_fault(here, mcause, 0,
                  std::string(cause == int(csr::external_irq) ? "machine external" : "machine timer") +
                      " interrupt with no trap handler (mtvec = 0)");
        return -1;
    }
    write_csr(UC_RISCV_REG_MEPC, here);
    write_csr(UC_RISCV_REG_MCAUSE, mcause);
    write_csr(UC_RISCV_REG_MTVAL, 0);
    write_csr(UC_RISCV_REG_MSTATUS, (status & ~(csr::mstatus_mie | csr::mstatus_mpie | csr::mstatus_mpp)) |
                                        csr::mstatus_mpie | csr::mstatus_mpp);
    const std::uint64_t base = vector & ~std::uint64_t{3};
    set_pc((vector & 3) == 1 ? base + 4 * unsigned(cause) : base);
    return cause;
}

}  // namespace systolic::components
