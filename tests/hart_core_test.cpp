// The hart's plain core (components/hart_core.h) on hand-written programs, for RV32 and RV64: how it
// counts instructions and ends runs, its bus, the faults and their pcs, and interrupt delivery
// through the trap CSRs.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "hart_core.h"
#include "rv_asm.h"

namespace {

using namespace systolic::components;
using namespace systolic::components::testing;

constexpr std::uint64_t ram_base = 0x80000000, ram_size = 0x10000, io_base = 0x10000000;

struct access {
    bool write;
    std::uint64_t address;
    unsigned length;
    std::uint64_t value;
};

struct fake_bus : hart_bus {
    std::vector<access> log;
    bool fail = false;
    std::uint64_t answer = 0x55;
    std::function<void()> on_access;
    bool bus_read(std::uint64_t address, void* data, unsigned length) override {
        log.push_back({false, address, length, 0});
        if (on_access) on_access();
        std::memcpy(data, &answer, length);
        return !fail;
    }
    bool bus_write(std::uint64_t address, const void* data, unsigned length) override {
        std::uint64_t v = 0;
        std::memcpy(&v, data, length);
        log.push_back({true, address, length, v});
        return !fail;
    }
};

class HartCore : public ::testing::TestWithParam<isa> {
protected:
    HartCore() : m_ram(ram_size), core(GetParam(), bus) {
        core.map_memory(ram_base, ram_size, m_ram.data());
        core.map_bus(io_base, 0x1000);
        core.set_pc(ram_base);
    }
    // New code behind the engine's back: what it translated before is dropped.
    void load(const program& p) {
        p.copy_to(m_ram.data());
        core.code_changed(ram_base, ram_base + ram_size);
    }
    std::uint64_t interrupt_bit() const { return std::uint64_t(1) << (core.xlen() - 1); }
    // Runs on past the stops after writes of mstatus and mie (where the shell looks at its
    // interrupts again), to the next stop of another kind.
    hart_core::stop run_on(std::uint64_t budget) {
        hart_core::stop why;
        while ((why = core.run(budget)) == hart_core::stop::interrupt_state) {
        }
        return why;
    }

    std::vector<std::uint8_t> m_ram;
    fake_bus bus;
    hart_core core;
};

INSTANTIATE_TEST_SUITE_P(Isa, HartCore, ::testing::Values(isa::rv32, isa::rv64),
                         [](const auto& info) { return info.param == isa::rv32 ? "rv32" : "rv64"; });

TEST_P(HartCore, CountsSixteenAndThirtyTwoBitInstructionsAndStopsAtWfi) {
    program p(ram_base);
    for (int i = 0; i < 5; ++i)
        p.op(rv::addi(rv::a0, rv::a0, 1));
    for (int i = 0; i < 3; ++i)
        p.c(rv::c_addi_a0_1);
    const std::uint64_t wfi_at = p.here();
    p.op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::wfi);
    EXPECT_EQ(core.retired(), 9u);
    EXPECT_EQ(core.reg(rv::a0), 8u);
    EXPECT_EQ(core.pc(), wfi_at + 4);  // wfi has completed
    EXPECT_FALSE(core.fault());
}

TEST_P(HartCore, ABudgetEndsTheRunAtTheFirstBlockBoundaryPastIt) {
    program p(ram_base);
    p.op(rv::addi(rv::a0, rv::a0, 1)).op(rv::jal(rv::zero, -4));  // one block of two, for ever
    load(p);
    EXPECT_EQ(core.run(100), hart_core::stop::budget);
    EXPECT_EQ(core.retired(), 100u);
    EXPECT_EQ(core.run(7), hart_core::stop::budget);
    EXPECT_EQ(core.retired(), 108u);   // four blocks: the one that crosses the budget finishes
    EXPECT_EQ(core.reg(rv::a0), 54u);  // every instruction counted ran, and no other
    EXPECT_EQ(core.pc(), ram_base);
}

TEST_P(HartCore, AccessesOutsideRamGoToTheBus) {
    program p(ram_base);
    p.op(rv::lui(rv::t0, io_base >> 12))
        .op(rv::addi(rv::t1, rv::zero, 0x41))
        .op(rv::sw(rv::t1, rv::t0, 0))
        .op(rv::lw(rv::t2, rv::t0, 4))
        .op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::wfi);
    ASSERT_EQ(bus.log.size(), 2u);
    EXPECT_TRUE(bus.log[0].write);
    EXPECT_EQ(bus.log[0].address, io_base);
    EXPECT_EQ(bus.log[0].length, 4u);
    EXPECT_EQ(bus.log[0].value, 0x41u);
    EXPECT_FALSE(bus.log[1].write);
    EXPECT_EQ(bus.log[1].address, io_base + 4);
    EXPECT_EQ(core.reg(rv::t2), 0x55u);
}

TEST_P(HartCore, AStopAskedForByTheBusEndsTheRunAfterTheCurrentBlock) {
    program p(ram_base);
    p.op(rv::lui(rv::t0, io_base >> 12));
    p.op(rv::lw(rv::t2, rv::t0, 4)).op(rv::addi(rv::a0, rv::a0, 1)).op(rv::jal(rv::zero, -8));
    load(p);
    bus.on_access = [&] { core.request_stop(); };
    for (int i = 0; i < 5; ++i) {
        EXPECT_EQ(core.run(1000), hart_core::stop::requested);
        EXPECT_EQ(core.reg(rv::a0), unsigned(i + 1));
    }
    EXPECT_EQ(bus.log.size(), 5u);
    EXPECT_EQ(core.retired(), 1 + 3 * 5u);  // every instruction counted ran, and no other
}

TEST_P(HartCore, ARefusedBusAccessIsAFault) {
    bus.fail = true;
    program p(ram_base);
    p.op(rv::lui(rv::t0, io_base >> 12)).op(rv::lw(rv::t2, rv::t0, 8)).op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::fault);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->cause, 5u);
    EXPECT_EQ(core.fault()->address, io_base + 8);
    EXPECT_NE(core.fault()->what.find("bus error: 4-byte load from 0x10000008"), std::string::npos)
        << core.fault()->what;
}

TEST_P(HartCore, AnUnmappedLoadFaultsAtItsPcWithItsAddress) {
    program p(ram_base);
    p.op(rv::addi(rv::a0, rv::zero, 1)).op(rv::lui(rv::t0, 0x20000)).op(rv::addi(rv::t0, rv::t0, 16));
    const std::uint64_t load_at = p.here();
    p.op(rv::lw(rv::t1, rv::t0, 0x10)).op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::fault);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->pc, load_at);
    EXPECT_EQ(core.fault()->cause, 5u);
    EXPECT_EQ(core.fault()->address, 0x20000020u);
    EXPECT_EQ(core.fault()->what, "4-byte load from unmapped address 0x20000020");
}

TEST_P(HartCore, ACompressedStoreOrLoadIsFoundToo) {
    program p(ram_base);
    p.op(rv::lui(rv::a0, 0x30000)).c(rv::c_nop);
    const std::uint64_t load_at = p.here();
    p.c(rv::c_lw_a1_a0).op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::fault);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->pc, load_at);
    EXPECT_EQ(core.fault()->address, 0x30000000u);
}

TEST_P(HartCore, AnUnmappedStoreAndAFetchAreFaultsToo) {
    program p(ram_base);
    p.op(rv::lui(rv::t0, 0x20000));
    const std::uint64_t store_at = p.here();
    p.op(rv::sw(rv::t0, rv::t0, 4)).op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::fault);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->pc, store_at);
    EXPECT_EQ(core.fault()->cause, 7u);
    EXPECT_EQ(core.fault()->address, 0x20000004u);

    program q(ram_base);
    q.op(rv::lui(rv::t0, 0x30000)).op(rv::i_type(0, rv::t0, 0, rv::zero, 0x67));  // jalr zero, 0(t0)
    load(q);
    core.set_pc(ram_base);
    EXPECT_EQ(core.run(1000), hart_core::stop::fault);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->pc, 0x30000000u);
    EXPECT_EQ(core.fault()->cause, 1u);
    EXPECT_EQ(core.fault()->what, "instruction fetch from unmapped address 0x30000000");
}

TEST_P(HartCore, CodeOnlyRunsFromHostMemory) {
    program p(ram_base);
    p.op(rv::lui(rv::t0, io_base >> 12)).op(rv::i_type(0, rv::t0, 0, rv::zero, 0x67));  // jalr zero, 0(t0)
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::fault);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->pc, io_base);
    EXPECT_EQ(core.fault()->what,
              "instruction fetch from 0x10000000, which the hart reaches over the bus only "
              "(code runs from RAM mapped over DMI)");
    EXPECT_TRUE(bus.log.empty());
}

TEST_P(HartCore, ExceptionsAreFaultsAtTheirExactPc) {
    const struct {
        std::uint32_t insn;
        bool compressed;
        std::uint64_t cause;
        const char* what;
    } cases[] = {
        {rv::c_illegal, true, 2, "illegal instruction 0x0"},
        {rv::ecall, false, 11, "environment call (ecall) from M-mode"},
        {rv::ebreak, false, 3, "breakpoint (ebreak)"},
    };
    for (const auto& c : cases) {
        program p(ram_base);
        p.c(rv::c_nop).op(rv::addi(rv::a0, rv::a0, 1));
        const std::uint64_t at = p.here();
        if (c.compressed)
            p.c(std::uint16_t(c.insn));
        else
            p.op(c.insn);
        p.op(rv::wfi);
        load(p);
        core.set_pc(ram_base);
        EXPECT_EQ(core.run(1000), hart_core::stop::fault) << c.what;
        ASSERT_TRUE(core.fault()) << c.what;
        EXPECT_EQ(core.fault()->pc, at) << c.what;
        EXPECT_EQ(core.fault()->cause, c.cause) << c.what;
        EXPECT_EQ(core.fault()->what, c.what);
    }
}

// A misaligned AMO or LR is the privileged spec's store/AMO address misaligned (cause 6), at the
// instruction's pc, with the data address (what mtval would hold) as the fault's address. (An SC
// without a reservation at its address fails in the engine without an access, and so no fault.)
TEST_P(HartCore, AMisalignedAtomicIsAStoreAmoMisalignedFaultWithItsDataAddress) {
    const bool rv64 = GetParam() == isa::rv64;
    const struct {
        unsigned funct5, width;
        const char* what;
    } cases[] = {{0, 2, "4-byte amoadd.w"}, {1, 2, "4-byte amoswap.w"}, {0x1c, 2, "4-byte amomaxu.w"},
                 {2, 2, "4-byte lr.w"},     {0, 3, "8-byte amoadd.d"},  {2, 3, "8-byte lr.d"}};
    for (const auto& c : cases) {
        if (c.width == 3 && !rv64) continue;
        const std::uint64_t data = ram_base + 0x702;
        program p(ram_base);
        p.op(rv::auipc(rv::a0, 0)).op(rv::addi(rv::a0, rv::a0, 0x702));  // a0 = data
        p.op(rv::addi(rv::a2, rv::zero, 1));
        const std::uint64_t at = p.here();
        const unsigned rs2 = c.funct5 == 2 ? rv::zero : rv::a2;  // lr's rs2 is 0
        p.op(rv::amo(c.funct5, c.width, rv::a1, rv::a0, rs2)).op(rv::wfi);
        load(p);
        core.set_pc(ram_base);
        EXPECT_EQ(core.run(1000), hart_core::stop::fault) << c.what;
        ASSERT_TRUE(core.fault()) << c.what;
        EXPECT_EQ(core.fault()->pc, at) << c.what;
        EXPECT_EQ(core.fault()->cause, 6u) << c.what;
        EXPECT_EQ(core.fault()->address, data) << c.what;
        EXPECT_EQ(core.fault()->what,
                  std::string("store/AMO address misaligned: ") + c.what + " at 0x80000702");
    }
}

// The privileged spec has the interrupt conditions evaluated again right after a write of mstatus
// or mie and after an mret: the run ends there, and only there (not after a read of them).
TEST_P(HartCore, AWriteOfMstatusOrMieOrAnMretEndsTheRunRightAfterIt) {
    program p(ram_base);
    p.op(rv::addi(rv::t1, rv::zero, 8))
        .op(rv::csrrs(rv::zero, rv::mstatus, rv::zero))  // reads
        .op(rv::csrrs(rv::a0, rv::mie, rv::zero))
        .op(rv::csrrs(rv::zero, rv::mstatus, rv::t1));  // writes
    const std::uint64_t after_mstatus = p.here();
    p.op(rv::csrrw(rv::zero, rv::mie, rv::t1));
    const std::uint64_t after_mie = p.here();
    p.op(rv::lui(rv::t2, 2)).op(rv::addi(rv::t2, rv::t2, -2048));  // MPP = machine mode, for the mret
    p.op(rv::csrrw(rv::zero, rv::mepc, rv::zero)).op(rv::csrrs(rv::zero, rv::mstatus, rv::t2));
    const std::uint64_t mepc_at = p.here();
    p.op(rv::auipc(rv::t0, 0)).op(rv::addi(rv::t0, rv::t0, 16)).op(rv::csrrw(rv::zero, rv::mepc, rv::t0));
    p.op(rv::mret);
    const std::uint64_t returned_to = p.here();
    ASSERT_EQ(returned_to, mepc_at + 16);
    p.op(rv::wfi);
    load(p);
    EXPECT_EQ(core.run(1000), hart_core::stop::interrupt_state);
    EXPECT_EQ(core.pc(), after_mstatus);
    EXPECT_EQ(core.retired(), 4u);
    EXPECT_EQ(core.run(1000), hart_core::stop::interrupt_state);
    EXPECT_EQ(core.pc(), after_mie);
    EXPECT_EQ(core.mie(), 8u);
    EXPECT_EQ(core.run(1000), hart_core::stop::interrupt_state);  // the write of mstatus, not of mepc
    EXPECT_EQ(core.pc(), mepc_at);
    EXPECT_EQ(core.run(1000), hart_core::stop::interrupt_state);  // the mret
    EXPECT_EQ(core.pc(), returned_to);
    EXPECT_EQ(core.run(1000), hart_core::stop::wfi);
    EXPECT_EQ(core.retired(), 14u);
}

// A program that sets mtvec (to `handler`, plus `mode`), mie and mstatus.MIE, then sleeps.
std::uint64_t arm(program& p, std::uint64_t handler, unsigned mode, std::uint32_t mie) {
    const std::uint64_t here = p.here();
    p.op(rv::auipc(rv::t0, 0))
        .op(rv::addi(rv::t0, rv::t0, std::int32_t(handler - here) + int(mode)))
        .op(rv::csrrw(rv::zero, rv::mtvec, rv::t0))
        .op(rv::addi(rv::t1, rv::zero, std::int32_t(mie)))
        .op(rv::csrrs(rv::zero, rv::mie, rv::t1))
        .op(rv::addi(rv::t1, rv::zero, 8))
        .op(rv::csrrs(rv::zero, rv::mstatus, rv::t1))
        .op(rv::wfi);
    return p.here();
}

TEST_P(HartCore, AnInterruptIsTakenThroughTheTrapCsrsAndMretReturns) {
    const std::uint64_t handler = ram_base + 0x400;
    program p(ram_base);
    const std::uint64_t after_wfi = arm(p, handler, 0, 1u << csr::timer_irq);
    p.op(rv::csrrs(rv::a3, rv::mstatus, rv::zero)).op(rv::wfi);
    p.at(handler)
        .op(rv::csrrs(rv::a0, rv::mcause, rv::zero))
        .op(rv::csrrs(rv::a1, rv::mepc, rv::zero))
        .op(rv::csrrs(rv::a2, rv::mstatus, rv::zero))
        .op(rv::mret);
    load(p);
    EXPECT_EQ(run_on(1000), hart_core::stop::wfi);
    const std::uint64_t timer = std::uint64_t(1) << csr::timer_irq;
    EXPECT_FALSE(core.wakes(1u << csr::external_irq));  // not enabled in mie
    EXPECT_TRUE(core.wakes(timer));
    EXPECT_EQ(core.take_interrupt(0), -1);
    EXPECT_EQ(core.take_interrupt(timer), int(csr::timer_irq));
    EXPECT_EQ(core.pc(), handler);
    EXPECT_EQ(run_on(1000), hart_core::stop::wfi);
    EXPECT_EQ(core.reg(rv::a0), interrupt_bit() | csr::timer_irq);
    EXPECT_EQ(core.reg(rv::a1), after_wfi);
    const std::uint64_t in_handler = core.reg(rv::a2);
    EXPECT_EQ(in_handler & csr::mstatus_mie, 0u);
    EXPECT_EQ(in_handler & csr::mstatus_mpie, csr::mstatus_mpie);
    EXPECT_EQ(in_handler & csr::mstatus_mpp, csr::mstatus_mpp);
    EXPECT_EQ(core.reg(rv::a3) & csr::mstatus_mie, csr::mstatus_mie);  // mret set it again
    EXPECT_EQ(core.pc(), after_wfi + 8);
}

TEST_P(HartCore, ExternalComesBeforeTimerAndVectoredModeOffsetsByTheCause) {
    const std::uint64_t vectors = ram_base + 0x400;
    program p(ram_base);
    arm(p, vectors, 1, 1u << csr::timer_irq | 1u << csr::external_irq);
    load(p);
    EXPECT_EQ(run_on(1000), hart_core::stop::wfi);
    EXPECT_EQ(core.take_interrupt(1u << csr::timer_irq | 1u << csr::external_irq), int(csr::external_irq));
    EXPECT_EQ(core.pc(), vectors + 4 * csr::external_irq);
    EXPECT_EQ(core.take_interrupt(1u << csr::timer_irq), -1);  // MIE is clear in the handler
}

TEST_P(HartCore, AnInterruptWithMtvecZeroIsAFault) {
    program p(ram_base);
    arm(p, ram_base, 0, 1u << csr::timer_irq);
    load(p);
    EXPECT_EQ(run_on(1000), hart_core::stop::wfi);
    program q(p.here());
    q.op(rv::csrrw(rv::zero, rv::mtvec, rv::zero)).op(rv::wfi);
    q.copy_to(m_ram.data() + (p.here() - ram_base));
    core.code_changed(p.here(), p.here() + 8);
    EXPECT_EQ(run_on(1000), hart_core::stop::wfi);
    EXPECT_EQ(core.take_interrupt(1u << csr::timer_irq), -1);
    ASSERT_TRUE(core.fault());
    EXPECT_EQ(core.fault()->cause, interrupt_bit() | csr::timer_irq);
    EXPECT_EQ(core.fault()->what, "machine timer interrupt with no trap handler (mtvec = 0)");
}

}  // namespace
