// The register-programmed accelerator, driven as software drives it: through its registers, with the
// C names of <systolic/accelerator_regs.h> and the driver of <systolic/accelerator_driver.h>. The
// rig is elaborated once per process:
//   cpu : test_initiator -> reg_checker : protocol_checker -> accel.regs
//   accel.dma -> envs : verify::format_environments -> memory (at a non-zero base)
//   accel.irq -> irq signal
// Jobs are checked by the verification environment through the register DUT, over the same
// accessors; tests of register-level detail drive the registers themselves.
// plus a second accelerator whose block sits at a non-zero base on its socket, and a third with
// double-buffered scratchpads behind a narrow DRAM channel (docs/memory.md).
// sc_spawn, for the thread a job is checked from, is declared only with dynamic processes on.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <gtest/gtest.h>

#include <systolic/accelerator_driver.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <systemc>
#include <tlm>
#include <vector>

#include "driver_rig.h"
#include "systolic/accelerator.h"
#include "systolic/counting.h"
#include "systolic/energy/price.h"
#include "systolic/energy/table.h"
#include "systolic/memory.h"
#include "systolic/verify/format_environments.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/protocol_checker.h"
#include "systolic/verify/register_dut.h"
#include "test_initiator.h"
#include "tlm_expect.h"

namespace {

using namespace systolic;
using systolic::tb::test_initiator;
using systolic::verify::problem;
using systolic::verify::protocol_checker;

constexpr std::uint64_t k_mem_base = 0x80000000;
constexpr std::uint64_t k_mem_size = 0x40000;
constexpr std::size_t k_n = 4;
constexpr std::uint64_t k_other_base = 0x1000;

accelerator::config accel_config(std::uint64_t base = 0) {
    accelerator::config c;
    c.array_size = k_n;
    c.base = base;
    return c;
}

// Two bytes per clock: far less than a 4x4 array takes in, so the array waits for its operands.
accelerator::config buffered_config() {
    accelerator::config c = accel_config();
    c.memory.buffers = buffer_mode::double_buffered;
    c.memory.dram_bandwidth = 2;
    return c;
}
constexpr std::uint64_t k_buffered_mem_size = 0x2000;

// The ENERGY registers' table, read once for the priced accelerator and for the tests that price
// its jobs' counts again.
const energy::energy_table& horowitz45() {
    static const energy::energy_table t = energy::load_table("horowitz45");
    return t;
}

// An accelerator whose jobs are priced with horowitz45 (no scratchpads: nothing to size).
accelerator::config priced_config() {
    accelerator::config c = accel_config();
    c.price = [](const matmul_job&, const action_counts& counts) {
        return energy::price(counts, horowitz45(), 0).total_pj;
    };
    return c;
}

// When the interrupt line last rose.
struct irq_watch : sc_core::sc_module {
    sc_core::sc_in<bool> in{"in"};
    sc_core::sc_time last_rise = sc_core::SC_ZERO_TIME;
    SC_HAS_PROCESS(irq_watch);
    explicit irq_watch(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        SC_METHOD(rise);
        sensitive << in.pos();
        dont_initialize();
    }
    void rise() { last_rise = sc_core::sc_time_stamp(); }
};

struct rig {
    test_initiator cpu{"cpu"};
    protocol_checker reg_checker{"reg_checker"};
    accelerator accel{"accel", accel_config()};
    verify::format_environments envs{"envs", k_mem_base, k_mem_size};
    // The DMA path's first protocol checker: it sees every transaction of the accelerator's.
    protocol_checker& dma_checker = envs.first().checker;
    memory mem{"memory", memory::config{k_mem_base, k_mem_size}};
    sc_core::sc_signal<bool> irq{"irq"};
    irq_watch watch{"irq_watch"};

    test_initiator cpu2{"cpu2"};
    accelerator other{"other", accel_config(k_other_base)};
    memory mem2{"memory2", memory::config{0, 0x1000}};
    sc_core::sc_signal<bool> irq2{"irq2"};

    test_initiator cpu3{"cpu3"};
    accelerator buffered{"buffered", buffered_config()};
    memory mem3{"memory3", memory::config{0, k_buffered_mem_size}};
    sc_core::sc_signal<bool> irq3{"irq3"};

    test_initiator cpu4{"cpu4"};
    accelerator priced{"priced", priced_config()};
    memory mem4{"memory4", memory::config{0, k_buffered_mem_size}};
    sc_core::sc_signal<bool> irq4{"irq4"};

    rig() {
        tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
        cpu.initiator_socket.bind(reg_checker.target_socket);
        reg_checker.initiator_socket.bind(accel.regs);
        accel.dma.bind(envs.target_socket());
        envs.initiator_socket().bind(mem.target_socket);
        accel.irq.bind(irq);
        watch.in.bind(irq);
        cpu2.initiator_socket.bind(other.regs);
        other.dma.bind(mem2.target_socket);
        other.irq.bind(irq2);
        cpu3.initiator_socket.bind(buffered.regs);
        buffered.dma.bind(mem3.target_socket);
        buffered.irq.bind(irq3);
        cpu4.initiator_socket.bind(priced.regs);
        priced.dma.bind(mem4.target_socket);
        priced.irq.bind(irq4);
    }
};

constexpr auto bench = &tb::rig_environment<rig>::get;

systolic_dev device() {
    return tb::driver_device(bench().cpu);
}

std::uint32_t rd(std::uint32_t offset) {
    return tb::driver_read32(&bench().cpu, offset);
}
void wr(std::uint32_t offset, std::uint32_t v) {
    tb::driver_write32(&bench().cpu, offset, v);
}
// A 64-bit counter (its _LO offset) as software reads it from the accelerator behind `cpu`.
std::uint64_t rd64(test_initiator& cpu, std::uint32_t lo) {
    return tb::driver_read32(&cpu, lo) | std::uint64_t{tb::driver_read32(&cpu, lo + 4)} << 32;
}

using tb::settle;

// Every test starts from reset, with a zeroed memory and idle, low interrupt.
void fresh() {
    auto& b = bench();
    const auto dev = device();
    systolic_reset(&dev);
    settle();
    std::memset(b.mem.core().data(), 0, k_mem_size);
    ASSERT_FALSE(b.accel.busy());
    ASSERT_EQ(rd(SYSTOLIC_REG_STATUS), 0u);
    ASSERT_FALSE(b.irq.read());
}

std::vector<std::uint8_t> snapshot() {
    const auto& core = bench().mem.core();
    return {core.data(), core.data() + core.size()};
}

// The job options of the rig's jobs: K-splitting, partial sums, and int8 output at scale 0.25 and
// zero point -3.
verify::job_options job_options(std::uint32_t k_tile, bool partials, bool int8_out) {
    verify::job_options opt;
    opt.run.k_tile = k_tile;
    opt.run.policy = partials ? k_policy::partials : k_policy::preserve;
    if (int8_out) {
        opt.run.quant.enabled = true;
        opt.run.quant.scale = 0.25;
        opt.run.quant.zero_point = -3;
    }
    return opt;
}

// Operands placed in memory: A at +0x100, B after it, C after B, all with padded rows, and a guard
// pattern everywhere else so that a stray write shows.
template <class Format>
struct placed {
    problem<Format> pr;
    systolic_job job;
    std::vector<std::uint8_t> expected_c;  // C's bytes, row-major, packed
    std::uint64_t c_elem = 0;
};

template <class Format>
placed<Format> place(const problem_shape& s, std::uint32_t dtype, std::uint64_t seed, bool int8_out = false,
                     std::uint32_t k_tile = 0, bool partials = false) {
    auto& b = bench();
    placed<Format> p;
    p.pr = verify::random_problem<Format>(s, seed);
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    const std::uint64_t osz = sizeof(op_t), asz = sizeof(acc_t);
    p.c_elem = int8_out ? 1 : asz;
    systolic_job_init(&p.job);
    auto& j = p.job;
    j.m = static_cast<std::uint32_t>(s.m);
    j.k = static_cast<std::uint32_t>(s.k);
    j.p = static_cast<std::uint32_t>(s.p);
    j.dtype = dtype;
    j.a_stride = static_cast<std::uint32_t>(s.k * osz + 8);
    j.b_stride = static_cast<std::uint32_t>(s.p * osz + 8);
    j.c_stride = static_cast<std::uint32_t>(s.p * p.c_elem + 8);
    j.a_addr = k_mem_base + 0x100;
    j.b_addr = (j.a_addr + s.m * j.a_stride + 0x40 + 7) & ~std::uint64_t{7};
    j.c_addr = (j.b_addr + s.k * j.b_stride + 0x40 + 7) & ~std::uint64_t{7};
    const std::uint64_t c_end = j.c_addr + s.m * j.c_stride;
    if (int8_out) {
        j.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
        j.scale = 0.25f;
        j.zero_point = -3;
    }
    j.k_tile = k_tile;
    if (partials) {
        j.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
        j.partial_addr = (c_end + 0x40 + 7) & ~std::uint64_t{7};
    }
    auto& core = b.mem.core();
    for (std::uint64_t i = 0; i < k_mem_size; ++i)
        core.data()[i] = static_cast<std::uint8_t>(0xa5 ^ (i * 7));
    for (std::uint64_t r = 0; r < s.m; ++r)
        core.write(j.a_addr + r * j.a_stride, &p.pr.a[r * s.k], s.k * osz);
    for (std::uint64_t r = 0; r < s.k; ++r)
        core.write(j.b_addr + r * j.b_stride, &p.pr.b[r * s.p], s.p * osz);
    p.expected_c = verify::expected_c_bytes(p.pr, job_options(k_tile, partials, int8_out));
    return p;
}

// C as the accelerator left it (packed), and whether every byte outside C (and the partial-sum
// buffer) is what it was.
template <class Format>
std::vector<std::uint8_t> read_c(const placed<Format>& p) {
    std::vector<std::uint8_t> c(p.job.m * p.job.p * p.c_elem);
    for (std::uint64_t r = 0; r < p.job.m; ++r)
        bench().mem.core().read(p.job.c_addr + r * p.job.c_stride, &c[r * p.job.p * p.c_elem],
                                p.job.p * p.c_elem);
    return c;
}

bool inside(std::uint64_t addr, std::uint64_t base, std::uint32_t rows, std::uint32_t stride,
            std::uint64_t row_bytes) {
    if (addr < base || addr >= base + std::uint64_t{rows} * stride) return false;
    return (addr - base) % stride < row_bytes;
}

template <class Format>
std::uint64_t changed_outside(const placed<Format>& p, const std::vector<std::uint8_t>& before) {
    const auto& core = bench().mem.core();
    const std::uint64_t asz = sizeof(typename Format::accumulator_type);
    std::uint64_t changed = 0;
    for (std::uint64_t i = 0; i < k_mem_size; ++i) {
        const std::uint64_t addr = k_mem_base + i;
        if (inside(addr, p.job.c_addr, p.job.m, p.job.c_stride, p.job.p * p.c_elem)) continue;
        if (p.job.partial_addr && inside(addr, p.job.partial_addr, p.job.m, p.job.p * asz, p.job.p * asz))
            continue;
        changed += core.data()[i] != before[i];
    }
    return changed;
}

// ---- identity and register access rules ----------------------------------------------------------

// The DMA path holds one environment per format of the model's one list, named by it and chained
// in its order (format_environments derives them from the list: a new format needs no edit there).
TEST(Environments, OneForEachFormatOfTheListInItsOrder) {
    std::vector<std::string> chain, list;
    bench().envs.each([&](auto& e) { chain.push_back(e.basename()); });
    for_each_format([&](auto format) { list.push_back(decltype(format)::name); });
    EXPECT_EQ(chain, list);
    EXPECT_EQ(chain.size(), std::size(dtype_names));
    EXPECT_EQ(&bench().envs.first(), &bench().envs.of<int8_format>());
}

TEST(Registers, IdentityAndResetValuesFollowTheMap) {
    fresh();
    const auto dev = device();
    std::uint32_t n = 0;
    EXPECT_EQ(systolic_probe(&dev, &n), 0);
    EXPECT_EQ(n, k_n);
    EXPECT_EQ(rd(SYSTOLIC_REG_ID), 0x53594143u);
    EXPECT_EQ(rd(SYSTOLIC_REG_VERSION), SYSTOLIC_VERSION_VALUE);
    for (const auto& r : regmap::registers) {
        const std::uint32_t expected = r.reset_doc ? k_n : r.reset;
        EXPECT_EQ(rd(r.offset), expected) << r.name;
    }
    EXPECT_EQ(rd(SYSTOLIC_REG_SCALE), 0x3f800000u);  // 1.0f
}

TEST(Registers, ReadWriteRegistersKeepWhatIsWritten) {
    fresh();
    for (const auto& r : regmap::registers) {
        if (r.rule != regmap::access::rw || r.offset == SYSTOLIC_REG_CTRL) continue;
        wr(r.offset, 0x12345678u ^ r.offset);
        EXPECT_EQ(rd(r.offset), 0x12345678u ^ r.offset) << r.name;
    }
    wr(SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_IRQ_EN);
    EXPECT_EQ(rd(SYSTOLIC_REG_CTRL), SYSTOLIC_CTRL_IRQ_EN);
    fresh();  // soft reset restores every reset value
    EXPECT_EQ(rd(SYSTOLIC_REG_M), 0u);
    EXPECT_EQ(rd(SYSTOLIC_REG_CTRL), 0u);
}

// DATAFLOW keeps any code written (START refuses the unknown ones) and resets to output stationary.
TEST(Registers, DataflowReadsBackAndResetsToOutputStationary) {
    fresh();
    EXPECT_EQ(rd(SYSTOLIC_REG_DATAFLOW), std::uint32_t{SYSTOLIC_DATAFLOW_OS});
    for (const std::uint32_t code : {SYSTOLIC_DATAFLOW_WS, SYSTOLIC_DATAFLOW_IS, 7u}) {
        wr(SYSTOLIC_REG_DATAFLOW, code);
        EXPECT_EQ(rd(SYSTOLIC_REG_DATAFLOW), code);
    }
    fresh();
    EXPECT_EQ(rd(SYSTOLIC_REG_DATAFLOW), std::uint32_t{SYSTOLIC_DATAFLOW_OS});
}

TEST(Registers, WritesToReadOnlyRegistersGetCommandError) {
    fresh();
    auto& cpu = bench().cpu;
    int ro = 0;
    for (const auto& r : regmap::registers) {
        if (r.rule != regmap::access::ro) continue;
        ++ro;
        const std::uint32_t before = rd(r.offset);
        EXPECT_TLM_RESPONSE(tlm::TLM_COMMAND_ERROR_RESPONSE, cpu.write<std::uint32_t>(r.offset, ~before))
            << r.name;
        EXPECT_EQ(rd(r.offset), before) << r.name;
    }
    EXPECT_GE(ro, 15);
}

TEST(Registers, BadAccessesGetTheirErrorResponses) {
    fresh();
    auto& cpu = bench().cpu;
    std::uint32_t v = 0;
    EXPECT_TLM_ADDRESS_ERROR(cpu.read(SYSTOLIC_REGS_SIZE, v));        // past the block
    EXPECT_TLM_ADDRESS_ERROR(cpu.write<std::uint32_t>(0x10000, 1u));  // far outside
    EXPECT_TLM_ADDRESS_ERROR(cpu.read(0x1c, v));                      // a hole between registers
    EXPECT_TLM_ADDRESS_ERROR(cpu.read(SYSTOLIC_REG_M + 2, v));        // misaligned
    std::uint16_t half = 0;
    EXPECT_TLM_BURST_ERROR(cpu.read(SYSTOLIC_REG_M, half));  // 16-bit
    std::uint64_t wide = 0;
    EXPECT_TLM_BURST_ERROR(cpu.read(SYSTOLIC_REG_M, wide));  // 64-bit
    EXPECT_TLM_BURST_ERROR(cpu.write(SYSTOLIC_REG_M, wide));

    tlm::tlm_generic_payload t;
    std::uint32_t data = 7;
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    t.set_command(tlm::TLM_WRITE_COMMAND);
    t.set_address(SYSTOLIC_REG_M);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(&data));
    t.set_data_length(4);
    t.set_streaming_width(2);  // streaming
    EXPECT_TLM_BURST_ERROR(cpu.transport(t, delay));
    unsigned char be[4] = {0xff, 0xff, 0, 0};
    t.set_streaming_width(4);
    t.set_byte_enable_ptr(be);
    t.set_byte_enable_length(4);
    EXPECT_TLM_BYTE_ENABLE_ERROR(cpu.transport(t, delay));
    t.set_byte_enable_ptr(nullptr);
    t.set_byte_enable_length(0);
    t.set_command(tlm::TLM_IGNORE_COMMAND);
    EXPECT_TLM_OK(cpu.transport(t, delay));
    EXPECT_EQ(rd(SYSTOLIC_REG_M), 0u);        // none of them wrote
    EXPECT_GT(delay, sc_core::SC_ZERO_TIME);  // accesses take time
    EXPECT_TRUE(bench().reg_checker.violations().empty());
}

TEST(Registers, DebugReadsHaveNoSideEffectsAndDebugWritesAreRefused) {
    fresh();
    auto& cpu = bench().cpu;
    wr(SYSTOLIC_REG_K, 5);
    std::uint32_t regs[SYSTOLIC_REGS_SIZE / 4] = {};
    EXPECT_EQ(cpu.debug_read(0, regs, sizeof regs), sizeof regs);
    EXPECT_EQ(regs[SYSTOLIC_REG_ID / 4], SYSTOLIC_ID_MAGIC);
    EXPECT_EQ(regs[SYSTOLIC_REG_K / 4], 5u);
    const std::uint32_t start = SYSTOLIC_CTRL_START;
    EXPECT_EQ(cpu.debug_write(SYSTOLIC_REG_CTRL, &start, 4), 0u);
    settle();
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), 0u);  // nothing started, nothing refused
    std::uint32_t v = 0;
    EXPECT_EQ(cpu.debug_read(SYSTOLIC_REGS_SIZE, &v, 4), 0u);
    EXPECT_TRUE(bench().reg_checker.violations().empty());
}

TEST(Registers, DirectMemoryAccessIsRefusedForTheWholeBlock) {
    fresh();
    tlm::tlm_dmi dmi;
    EXPECT_FALSE(bench().cpu.get_dmi(SYSTOLIC_REG_M, dmi));
    EXPECT_FALSE(dmi.is_read_allowed());
    EXPECT_EQ(dmi.get_start_address(), 0u);
    EXPECT_EQ(dmi.get_end_address(), SYSTOLIC_REGS_SIZE - 1u);
}

TEST(Registers, ABlockAtANonZeroBaseDecodesFromThere) {
    auto& cpu2 = bench().cpu2;
    std::uint32_t v = 0;
    EXPECT_TLM_OK(cpu2.read(k_other_base + SYSTOLIC_REG_ID, v));
    EXPECT_EQ(v, SYSTOLIC_ID_MAGIC);
    EXPECT_TLM_ADDRESS_ERROR(cpu2.read(SYSTOLIC_REG_ID, v));
    EXPECT_TLM_ADDRESS_ERROR(cpu2.read(k_other_base + SYSTOLIC_REGS_SIZE, v));
}

// ---- jobs ----------------------------------------------------------------------------------------

// The seeds' example through the registers: C, counters, cycles, and the interrupt at the job's end.
TEST(Jobs, SeedExampleRaisesTheInterruptAtItsEnd) {
    fresh();
    auto& b = bench();
    auto p = place<int32_format>({3, 3, 3}, SYSTOLIC_DTYPE_INT32, 1);
    p.pr = verify::seed_example<int32_format>();
    for (std::uint64_t r = 0; r < 3; ++r) {
        b.mem.core().write(p.job.a_addr + r * p.job.a_stride, &p.pr.a[r * 3], 12);
        b.mem.core().write(p.job.b_addr + r * p.job.b_stride, &p.pr.b[r * 3], 12);
    }
    const auto before = snapshot();
    const auto dev = device();
    systolic_program(&dev, &p.job);
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    systolic_start(&dev, 1);
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_BUSY});
    EXPECT_EQ(rd(SYSTOLIC_REG_CTRL), std::uint32_t{SYSTOLIC_CTRL_IRQ_EN});  // START reads as 0
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_NS));
    EXPECT_FALSE(b.irq.read());
    settle();
    ASSERT_TRUE(b.irq.read());
    const sc_core::sc_time irq_time = b.watch.last_rise;
    EXPECT_EQ(b.accel.last_result().end, irq_time);  // the interrupt rises at the job's simulated end
    EXPECT_EQ(systolic_outcome(&dev), 1);
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_DONE});
    EXPECT_EQ(rd(SYSTOLIC_REG_IRQ_STATUS), std::uint32_t{SYSTOLIC_IRQ_DONE});
    const std::vector<std::int64_t> expected = {7, 2, 5, 16, 5, 14, 25, 8, 23};
    std::vector<std::int64_t> c(9);
    const auto bytes = read_c(p);
    std::memcpy(c.data(), bytes.data(), bytes.size());
    EXPECT_EQ(c, expected);
    EXPECT_EQ(changed_outside(p, before), 0u);

    systolic_counters cnt{};
    systolic_read_counters(&dev, &cnt);
    const auto e = count_job({3, 3, 3}, k_n);
    EXPECT_EQ(cnt.edges, e.advance_edges);
    EXPECT_EQ(cnt.macs, e.macs_padded);
    EXPECT_EQ(cnt.macs_real, 27u);
    // One tile on a 4x4 array: clear, 3 + 2(4-1) edges, 3 + 3 reads and 3 writes of 10 ns each.
    EXPECT_EQ(cnt.cycles, 1u + 9u + 60u + 30u);
    EXPECT_EQ(cnt.stall_cycles, 0u);  // no scratchpads: nothing overlaps, nothing waits
    EXPECT_EQ(irq_time - t0, sc_core::sc_time(100, sc_core::SC_NS));

    EXPECT_EQ(systolic_irq_ack(&dev), std::uint32_t{SYSTOLIC_IRQ_DONE});
    settle();
    EXPECT_FALSE(b.irq.read());
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_DONE});
}

// A random job checked by the environment through the register DUT: every write of C once, with the
// reference's value, nothing else in memory changed, EDGES, PRELOAD_EDGES, MACS and MACS_REAL by the
// counting rules of the job's dataflow, no protocol violation; and the interrupt rose at the job's
// end. Gives the check (none when it did not end).
template <class Format>
std::optional<verify::job_check<Format>> run_and_check(std::uint32_t dtype, const problem_shape& s,
                                                       std::uint64_t seed, bool int8_out = false,
                                                       std::uint32_t k_tile = 0, bool partials = false,
                                                       std::uint32_t order = SYSTOLIC_ORDER_ROW,
                                                       dataflow_kind df = dataflow_kind::os) {
    fresh();
    auto& b = bench();
    verify::job_options opt = job_options(k_tile, partials, int8_out);
    static const tile_order orders[] = {tile_order::row_major, tile_order::col_major, tile_order::serpentine};
    opt.run.order = orders[order];
    opt.run.dataflow = df;
    opt.guard = k_mem_size;  // the whole memory, not only the job's span
    verify::register_dut::config cfg;
    cfg.array_size = k_n;
    cfg.irq = &b.irq;
    verify::register_dut dut(device(), *regmap::from_code(regmap::dtype_values, dtype_names, dtype), cfg);
    const verify::problem<Format> pr = verify::random_problem<Format>(s, seed);
    const std::uint64_t checked_before = b.dma_checker.checked();
    std::optional<verify::job_check<Format>> out;
    sc_core::sc_spawn([&] { out = b.envs.of<Format>().check(dut, pr, opt); });
    settle();
    EXPECT_TRUE(out.has_value()) << "the check did not end";
    if (!out) return out;
    std::string errors;
    for (const auto& e : out->scoreboard.errors)
        errors += e + "\n";
    EXPECT_TRUE(out->pass()) << Format::name << " M=" << s.m << " K=" << s.k << " P=" << s.p << "\n"
                             << errors;
    EXPECT_EQ(out->result.status, job_status::completed) << out->result.error;
    EXPECT_EQ(out->scoreboard.checked, s.m * s.p);
    EXPECT_EQ(b.watch.last_rise, out->result.end);  // the job ended by its interrupt
    EXPECT_GT(dut.cycles(), out->result.advance_edges);
    EXPECT_GT(b.dma_checker.checked(), checked_before);
    EXPECT_EQ(b.accel.last_result().dataflow, df);
    return out;
}

TEST(Jobs, EveryNumberFormatAtRunTime) {
    run_and_check<int8_format>(SYSTOLIC_DTYPE_INT8, {9, 7, 6}, 3);
    run_and_check<int32_format>(SYSTOLIC_DTYPE_INT32, {5, 11, 10}, 4);
    run_and_check<fp32_format>(SYSTOLIC_DTYPE_FP32, {6, 5, 9}, 5);
    run_and_check<bf16_format>(SYSTOLIC_DTYPE_BF16, {8, 13, 4}, 6);
}

TEST(Jobs, KSplittingInt8OutputAndTileOrders) {
    run_and_check<int8_format>(SYSTOLIC_DTYPE_INT8, {7, 10, 9}, 7, true, 3, true, SYSTOLIC_ORDER_SNAKE);
    run_and_check<int32_format>(SYSTOLIC_DTYPE_INT32, {6, 9, 6}, 8, false, 4, false, SYSTOLIC_ORDER_COL);
    run_and_check<fp32_format>(SYSTOLIC_DTYPE_FP32, {5, 8, 5}, 9, false, 3, true);
}

// DATAFLOW through the registers: ws and is jobs (one fold and three, with K_TILE) pass the
// scoreboard, their integer C under wrap is os's to the bit, and EDGES and PRELOAD_EDGES read what
// the counting rules of the dataflow say; os preloads nothing.
TEST(Jobs, TheDataflowRegisterRunsWeightAndInputStationary) {
    const auto dev = device();
    const problem_shape s{6, 9, 7};
    for (const std::uint32_t k_tile : {0u, 3u}) {
        const auto os = run_and_check<int32_format>(SYSTOLIC_DTYPE_INT32, s, 31, false, k_tile);
        ASSERT_TRUE(os.has_value());
        systolic_counters cnt{};
        systolic_read_counters(&dev, &cnt);
        EXPECT_EQ(cnt.preload_edges, 0u);
        for (const dataflow_kind df : {dataflow_kind::ws, dataflow_kind::is}) {
            const auto st = run_and_check<int32_format>(SYSTOLIC_DTYPE_INT32, s, 31, false, k_tile, false,
                                                        SYSTOLIC_ORDER_ROW, df);
            ASSERT_TRUE(st.has_value());
            EXPECT_TRUE(st->c == os->c) << to_string(df) << " K_TILE " << k_tile << ": C differs from os";
            EXPECT_EQ(rd(SYSTOLIC_REG_DATAFLOW),
                      *regmap::code_for(regmap::dataflow_values, dataflow_kind_names, df));
            systolic_read_counters(&dev, &cnt);
            const expected_counts e = count_job(s, array_shape{k_n, k_n}, k_tile, df);
            EXPECT_GT(e.preload_edges, 0u);
            EXPECT_EQ(cnt.preload_edges, e.preload_edges) << to_string(df) << " K_TILE " << k_tile;
            EXPECT_EQ(cnt.edges, e.advance_edges) << to_string(df) << " K_TILE " << k_tile;
            EXPECT_EQ(cnt.macs, e.macs_padded) << to_string(df) << " K_TILE " << k_tile;
            EXPECT_EQ(bench().accel.last_result().preload_edges, cnt.preload_edges);
        }
    }
    // Other formats sum each fold from zero (fp32 rounds differently from os): the scoreboard's
    // reference sums in the same folds.
    run_and_check<fp32_format>(SYSTOLIC_DTYPE_FP32, {5, 10, 6}, 32, false, 0, false, SYSTOLIC_ORDER_ROW,
                               dataflow_kind::ws);
    run_and_check<int8_format>(SYSTOLIC_DTYPE_INT8, {7, 9, 5}, 33, true, 4, false, SYSTOLIC_ORDER_SNAKE,
                               dataflow_kind::is);
}

// Reads go through DMI once the platform's memory grants it: far fewer transactions than rows.
TEST(Jobs, OperandReadsUseDmiWhenTheMemoryGrantsIt) {
    const std::uint64_t before = bench().mem.transactions();
    run_and_check<int32_format>(SYSTOLIC_DTYPE_INT32, {16, 16, 16}, 10);
    const std::uint64_t transactions = bench().mem.transactions() - before;
    // 16 tiles x (4 A rows + 16 B rows) reads and 16 x 4 C writes without DMI.
    EXPECT_LT(transactions, 16u * 20u / 4u);
}

// ---- errors --------------------------------------------------------------------------------------

struct bad_case {
    const char* what;
    std::uint32_t error;
    void (*spoil)(systolic_job&);
};

TEST(Errors, EachBadConfigurationHasItsCodeRaisesTheErrorInterruptAndTouchesNoMemory) {
    const bad_case cases[] = {
        {"zero M", SYSTOLIC_ERR_ZERO_DIM, [](systolic_job& j) { j.m = 0; }},
        {"zero K", SYSTOLIC_ERR_ZERO_DIM, [](systolic_job& j) { j.k = 0; }},
        {"zero P", SYSTOLIC_ERR_ZERO_DIM, [](systolic_job& j) { j.p = 0; }},
        {"unknown dtype", SYSTOLIC_ERR_DTYPE, [](systolic_job& j) { j.dtype = 4; }},
        {"unknown out dtype", SYSTOLIC_ERR_DTYPE, [](systolic_job& j) { j.out_dtype = 2; }},
        {"unknown order", SYSTOLIC_ERR_OPTION, [](systolic_job& j) { j.order = 3; }},
        {"unknown k policy", SYSTOLIC_ERR_OPTION, [](systolic_job& j) { j.k_policy = 2; }},
        {"unknown overflow", SYSTOLIC_ERR_OPTION, [](systolic_job& j) { j.overflow = 2; }},
        {"unknown rounding", SYSTOLIC_ERR_OPTION, [](systolic_job& j) { j.rounding = 3; }},
        {"unknown dataflow", SYSTOLIC_ERR_OPTION, [](systolic_job& j) { j.dataflow = 3; }},
        // ws and is combine their folds in the accumulators: partial sums are refused as an
        // option, before the missing buffer that os would be refused for.
        {"ws with partial sums", SYSTOLIC_ERR_OPTION,
         [](systolic_job& j) {
             j.dataflow = SYSTOLIC_DATAFLOW_WS;
             j.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
             j.k_tile = 2;
         }},
        {"is with partial sums and a buffer", SYSTOLIC_ERR_OPTION,
         [](systolic_job& j) {
             j.dataflow = SYSTOLIC_DATAFLOW_IS;
             j.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
             j.k_tile = 2;
             j.partial_addr = j.c_addr + 0x1000;
         }},
        {"zero scale", SYSTOLIC_ERR_OPTION,
         [](systolic_job& j) {
             j.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
             j.scale = 0;
         }},
        {"no partial buffer", SYSTOLIC_ERR_PARTIAL,
         [](systolic_job& j) {
             j.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
             j.k_tile = 2;
         }},
        {"misaligned A", SYSTOLIC_ERR_ALIGN, [](systolic_job& j) { j.a_addr += 2; }},
        {"misaligned C", SYSTOLIC_ERR_ALIGN, [](systolic_job& j) { j.c_addr += 4; }},
        {"misaligned stride", SYSTOLIC_ERR_ALIGN, [](systolic_job& j) { j.b_stride += 1; }},
        {"A stride below a row", SYSTOLIC_ERR_STRIDE, [](systolic_job& j) { j.a_stride = 4 * (j.k - 1); }},
        {"C stride below a row", SYSTOLIC_ERR_STRIDE, [](systolic_job& j) { j.c_stride = 8; }},
        {"C past 2^64", SYSTOLIC_ERR_RANGE, [](systolic_job& j) { j.c_addr = ~std::uint64_t{0} - 15; }},
        {"a job too large for the model", SYSTOLIC_ERR_SIZE,
         [](systolic_job& j) {
             j.m = 1u << 20;
             j.p = 1u << 20;
             j.a_stride = j.b_stride = j.c_stride = 0;
             j.c_addr = 0x100000000ull;
         }},
        {"C overlaps A", SYSTOLIC_ERR_OVERLAP, [](systolic_job& j) { j.c_addr = j.a_addr + 8; }},
        {"C overlaps B", SYSTOLIC_ERR_OVERLAP, [](systolic_job& j) { j.c_addr = j.b_addr; }},
        // A ends exactly at 2^64 (5 rows of 6 int32, 256 bytes apart), C lies inside it: an
        // overlap, not a bad option.
        {"C inside A at the top of the address space", SYSTOLIC_ERR_OVERLAP,
         [](systolic_job& j) {
             j.a_stride = 256;
             j.a_addr = std::uint64_t{0} - (4 * 256 + 24);
             j.c_stride = 0;
             j.c_addr = j.a_addr + 8;
         }},
    };
    for (const auto& c : cases) {
        fresh();
        auto& b = bench();
        auto p = place<int32_format>({5, 6, 7}, SYSTOLIC_DTYPE_INT32, 2);
        c.spoil(p.job);
        const auto before = snapshot();
        const std::uint64_t dma_before = b.dma_checker.checked();
        const auto dev = device();
        systolic_program(&dev, &p.job);
        systolic_start(&dev, 1);
        settle();
        EXPECT_EQ(systolic_error(&dev), c.error) << c.what;
        EXPECT_EQ(systolic_outcome(&dev), -1) << c.what;
        EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_ERROR}) << c.what;
        EXPECT_EQ(rd(SYSTOLIC_REG_IRQ_STATUS), std::uint32_t{SYSTOLIC_IRQ_ERROR}) << c.what;
        EXPECT_TRUE(b.irq.read()) << c.what;
        EXPECT_EQ(b.dma_checker.checked(), dma_before) << c.what << ": a refused job made a bus access";
        EXPECT_TRUE(snapshot() == before) << c.what << ": memory changed";
    }
}

TEST(Errors, WithoutIrqEnableTheErrorIsLatchedButTheLineStaysLow) {
    fresh();
    wr(SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_START);  // M = K = P = 0
    settle();
    EXPECT_EQ(rd(SYSTOLIC_REG_ERROR), std::uint32_t{SYSTOLIC_ERR_ZERO_DIM});
    EXPECT_EQ(rd(SYSTOLIC_REG_IRQ_STATUS), std::uint32_t{SYSTOLIC_IRQ_ERROR});
    EXPECT_FALSE(bench().irq.read());
    wr(SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_IRQ_EN);  // enabling shows the pending cause
    settle();
    EXPECT_TRUE(bench().irq.read());
    wr(SYSTOLIC_REG_IRQ_STATUS, SYSTOLIC_IRQ_DONE);  // clearing another cause changes nothing
    settle();
    EXPECT_TRUE(bench().irq.read());
    wr(SYSTOLIC_REG_IRQ_STATUS, SYSTOLIC_IRQ_ERROR);
    settle();
    EXPECT_FALSE(bench().irq.read());
    EXPECT_EQ(rd(SYSTOLIC_REG_ERROR), std::uint32_t{SYSTOLIC_ERR_ZERO_DIM});  // the code stays until START
}

TEST(Errors, StartWhileBusyIsRefusedAndTheRunningJobCompletes) {
    fresh();
    auto p = place<int32_format>({12, 20, 12}, SYSTOLIC_DTYPE_INT32, 11);
    const auto dev = device();
    systolic_program(&dev, &p.job);
    systolic_start(&dev, 1);
    sc_core::sc_start(sc_core::sc_time(50, sc_core::SC_NS));
    ASSERT_TRUE(bench().accel.busy());
    systolic_start(&dev, 1);
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_NS));
    EXPECT_EQ(systolic_error(&dev), std::uint32_t{SYSTOLIC_ERR_BUSY});
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_BUSY | SYSTOLIC_STATUS_ERROR});
    EXPECT_TRUE(bench().irq.read());
    settle();
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_DONE | SYSTOLIC_STATUS_ERROR});
    EXPECT_EQ(rd(SYSTOLIC_REG_IRQ_STATUS), std::uint32_t{SYSTOLIC_IRQ_DONE | SYSTOLIC_IRQ_ERROR});
    EXPECT_EQ(read_c(p), p.expected_c);
}

// C's last rows lie past the end of the platform's memory: the bus answers with an error, the job
// stops, the failing address is readable, and every write made stays inside C.
TEST(Errors, ABusErrorAbortsTheJobWithTheFailingAddress) {
    fresh();
    auto p = place<int32_format>({9, 4, 5}, SYSTOLIC_DTYPE_INT32, 12);
    p.job.c_stride = 0x40;
    p.job.c_addr = k_mem_base + k_mem_size - 5 * 0x40;  // rows 0-4 fit, rows 5-8 do not
    const auto before = snapshot();
    const auto dev = device();
    systolic_program(&dev, &p.job);
    systolic_start(&dev, 1);
    settle();
    EXPECT_EQ(systolic_outcome(&dev), -1);
    EXPECT_EQ(systolic_error(&dev), std::uint32_t{SYSTOLIC_ERR_DMA});
    EXPECT_EQ(systolic_error_address(&dev), k_mem_base + k_mem_size);  // row 5, the first outside
    EXPECT_EQ(rd(SYSTOLIC_REG_IRQ_STATUS), std::uint32_t{SYSTOLIC_IRQ_ERROR});
    EXPECT_TRUE(bench().irq.read());
    EXPECT_FALSE(rd(SYSTOLIC_REG_STATUS) & SYSTOLIC_STATUS_DONE);
    // Nothing outside C's rows changed; C's first rows were written.
    const auto& core = bench().mem.core();
    std::uint64_t outside = 0, inside_c = 0;
    for (std::uint64_t i = 0; i < k_mem_size; ++i) {
        const bool in_c = inside(k_mem_base + i, p.job.c_addr, 5, 0x40, 5 * 8);
        if (core.data()[i] != before[i]) (in_c ? inside_c : outside) += 1;
    }
    EXPECT_EQ(outside, 0u);
    EXPECT_GT(inside_c, 0u);
    EXPECT_TRUE(bench().dma_checker.violations().empty());

    // A on the far side of memory: the first read fails, and C is never written.
    fresh();
    auto q = place<int32_format>({4, 4, 4}, SYSTOLIC_DTYPE_INT32, 13);
    q.job.a_addr = 0x1000;
    const auto before_q = snapshot();
    systolic_program(&dev, &q.job);
    systolic_start(&dev, 1);
    settle();
    EXPECT_EQ(systolic_error(&dev), std::uint32_t{SYSTOLIC_ERR_DMA});
    EXPECT_EQ(systolic_error_address(&dev), 0x1000u);
    EXPECT_TRUE(snapshot() == before_q);
}

// C's last byte is the last byte of the address space: the job is valid and starts, and the bus
// refuses the first write to C (nothing is mapped there), at C's address.
TEST(Errors, AMatrixEndingExactlyAtTheTopOfTheAddressSpaceIsAccepted) {
    fresh();
    auto p = place<int32_format>({5, 6, 7}, SYSTOLIC_DTYPE_INT32, 14);
    p.job.c_stride = 0;
    p.job.c_addr = std::uint64_t{0} - 5 * 7 * 8;
    const auto dev = device();
    systolic_program(&dev, &p.job);
    systolic_start(&dev, 1);
    settle();
    EXPECT_EQ(systolic_error(&dev), std::uint32_t{SYSTOLIC_ERR_DMA});
    EXPECT_GE(systolic_error_address(&dev), p.job.c_addr);
    EXPECT_TRUE(bench().dma_checker.violations().empty());
}

// ---- soft reset ----------------------------------------------------------------------------------

TEST(SoftReset, StopsARunningJobWithinOneChunkAndANewJobThenRuns) {
    fresh();
    auto& b = bench();
    // 64 tiles of K = 64 in chunks of 16: the job takes far longer than one chunk.
    auto big = place<int32_format>({32, 64, 32}, SYSTOLIC_DTYPE_INT32, 14, false, 16);
    const auto dev = device();
    systolic_program(&dev, &big.job);
    systolic_start(&dev, 1);
    sc_core::sc_start(sc_core::sc_time(3, sc_core::SC_US));
    ASSERT_TRUE(b.accel.busy());
    const sc_core::sc_time reset_at = sc_core::sc_time_stamp();
    systolic_reset(&dev);
    for (const auto& r : regmap::registers) {  // back to reset values at once
        if (r.offset != SYSTOLIC_REG_STATUS) {
            EXPECT_EQ(rd(r.offset), r.reset_doc ? k_n : r.reset) << r.name;
        }
    }
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), std::uint32_t{SYSTOLIC_STATUS_BUSY});  // still stopping
    settle();
    EXPECT_FALSE(b.accel.busy());
    EXPECT_EQ(b.accel.last_result().status, job_status::aborted);
    // One chunk: clear, load (4 + 16 reads at 10 ns), 16 + 6 edges and a drain (4 writes), plus the
    // quantum the controller may have run ahead of the reset.
    const sc_core::sc_time chunk = sc_core::sc_time(1 + 20 * 10 + 22 + 4 * 10, sc_core::SC_NS);
    EXPECT_LE(b.accel.last_result().end - reset_at, chunk + tlm::tlm_global_quantum::instance().get());
    EXPECT_LT(b.accel.last_result().macs_padded, count_job({32, 64, 32}, k_n, 16).macs_padded);
    // No stale report: no interrupt, no DONE, no error, nothing left scheduled.
    EXPECT_FALSE(b.irq.read());
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), 0u);
    EXPECT_EQ(rd(SYSTOLIC_REG_IRQ_STATUS), 0u);
    EXPECT_FALSE(sc_core::sc_pending_activity());

    // A new job runs correctly on the same accelerator.
    run_and_check<int32_format>(SYSTOLIC_DTYPE_INT32, {6, 5, 7}, 15);
}

TEST(SoftReset, BeforeTheJobReachesTheArrayNothingRuns) {
    fresh();
    auto p = place<int32_format>({4, 4, 4}, SYSTOLIC_DTYPE_INT32, 16);
    const auto before = snapshot();
    const std::uint64_t dma_before = bench().dma_checker.checked();
    const auto dev = device();
    systolic_program(&dev, &p.job);
    systolic_start(&dev, 1);
    systolic_reset(&dev);  // in the same instant
    settle();
    EXPECT_EQ(rd(SYSTOLIC_REG_STATUS), 0u);
    EXPECT_FALSE(bench().irq.read());
    EXPECT_EQ(bench().dma_checker.checked(), dma_before);
    EXPECT_TRUE(snapshot() == before);
}

// ---- the memory system ---------------------------------------------------------------------------

// An 8 x 8 x 8 int32 job for the accelerator with scratchpads (four 4 x 4 tiles): its operands
// written at 0x100 and 0x200 of its memory, C at 0x400.
systolic_job buffered_job(rig& b, const verify::problem<int32_format>& pr) {
    systolic_job job;
    systolic_job_init(&job);
    job.m = job.k = job.p = 8;
    job.a_addr = 0x100;
    job.b_addr = 0x200;
    job.c_addr = 0x400;  // 8 x 8 int64
    for (std::uint64_t i = 0; i < 64; ++i) {
        b.mem3.core().write(job.a_addr + 4 * i, &pr.a[i], 4);
        b.mem3.core().write(job.b_addr + 4 * i, &pr.b[i], 4);
    }
    return job;
}

// The accelerator built with scratchpads runs every job double-buffered: C is right, and
// STALL_CYCLES holds the cycles its controller counted the array waiting for the narrow DRAM
// channel, which the job's time (CYCLES) includes.
TEST(MemorySystem, StallCyclesOfADoubleBufferedJobAreInTheirRegister) {
    auto& b = bench();
    const auto dev = tb::driver_device(b.cpu3);
    const problem_shape s{8, 8, 8};  // four 4x4 tiles
    const auto pr = verify::random_problem<int32_format>(s, 21);
    systolic_job job = buffered_job(b, pr);
    systolic_program(&dev, &job);
    systolic_start(&dev, 0);
    settle();
    ASSERT_EQ(systolic_outcome(&dev), 1) << b.buffered.last_result().error;
    // C against a plain triple loop of its own.
    for (std::uint64_t i = 0; i < 8; ++i)
        for (std::uint64_t j = 0; j < 8; ++j) {
            std::int64_t want = 0, got = 0;
            for (std::uint64_t k = 0; k < 8; ++k)
                want += std::int64_t(pr.a[i * 8 + k]) * pr.b[k * 8 + j];
            b.mem3.core().read(job.c_addr + 8 * (i * 8 + j), &got, 8);
            EXPECT_EQ(got, want) << "C(" << i << "," << j << ")";
        }
    systolic_counters cnt{};
    systolic_read_counters(&dev, &cnt);
    const job_result& r = b.buffered.last_result();
    EXPECT_EQ(r.memory.stall_cycles, cnt.stall_cycles);
    EXPECT_GT(cnt.stall_cycles, 0u);
    EXPECT_EQ(cnt.edges, 4u * (8u + 4u + 4u - 2u));
    EXPECT_GE(cnt.cycles, cnt.edges + cnt.stall_cycles);
    // A, B read and C written through the channel at two bytes a cycle: the job takes at least that.
    EXPECT_GE(cnt.cycles, (r.memory.a.dram + r.memory.b.dram + r.memory.c.dram) / 2);
}

// ws and is run double-buffered too (a fold is the scratchpads' unit): C is right, and the job's
// time holds its preload and advance edges and the stalls behind the narrow channel.
TEST(MemorySystem, StationaryDataflowsRunDoubleBuffered) {
    auto& b = bench();
    const auto dev = tb::driver_device(b.cpu3);
    systolic_reset(&dev);
    settle();
    const problem_shape s{8, 8, 8};
    const auto pr = verify::random_problem<int32_format>(s, 22);
    systolic_job job = buffered_job(b, pr);
    for (const dataflow_kind df : {dataflow_kind::ws, dataflow_kind::is}) {
        job.dataflow = *regmap::code_for(regmap::dataflow_values, dataflow_kind_names, df);
        const std::int64_t stale = -1;
        for (std::uint64_t i = 0; i < 64; ++i)
            b.mem3.core().write(job.c_addr + 8 * i, &stale, 8);
        systolic_program(&dev, &job);
        systolic_start(&dev, 0);
        settle();
        ASSERT_EQ(systolic_outcome(&dev), 1) << to_string(df) << ": " << b.buffered.last_result().error;
        for (std::uint64_t i = 0; i < 8; ++i)
            for (std::uint64_t j = 0; j < 8; ++j) {
                std::int64_t want = 0, got = 0;
                for (std::uint64_t k = 0; k < 8; ++k)
                    want += std::int64_t(pr.a[i * 8 + k]) * pr.b[k * 8 + j];
                b.mem3.core().read(job.c_addr + 8 * (i * 8 + j), &got, 8);
                EXPECT_EQ(got, want) << to_string(df) << " C(" << i << "," << j << ")";
            }
        systolic_counters cnt{};
        systolic_read_counters(&dev, &cnt);
        const expected_counts e = count_job(s, array_shape{k_n, k_n}, 0, df);
        EXPECT_EQ(cnt.edges, e.advance_edges) << to_string(df);
        EXPECT_EQ(cnt.preload_edges, e.preload_edges) << to_string(df);
        EXPECT_EQ(cnt.stall_cycles, b.buffered.last_result().memory.stall_cycles) << to_string(df);
        EXPECT_GT(cnt.stall_cycles, 0u) << to_string(df);
        EXPECT_GE(cnt.cycles, cnt.edges + cnt.preload_edges + cnt.stall_cycles) << to_string(df);
    }
}

// ---- the ENERGY registers --------------------------------------------------------------------------

// An 8 x 8 x 8 int32 job for an accelerator behind `mem`, as buffered_job places it, with every
// third element of A zero, so that some MACs are gated.
systolic_job energy_job(memory& mem, const verify::problem<int32_format>& pr) {
    systolic_job job;
    systolic_job_init(&job);
    job.m = job.k = job.p = 8;
    job.a_addr = 0x100;
    job.b_addr = 0x200;
    job.c_addr = 0x400;
    for (std::uint64_t i = 0; i < 64; ++i) {
        const std::int32_t a = i % 3 == 0 ? 0 : pr.a[i];
        mem.core().write(job.a_addr + 4 * i, &a, 4);
        mem.core().write(job.b_addr + 4 * i, &pr.b[i], 4);
    }
    return job;
}

// With a pricing function in its configuration the accelerator counts its jobs' actions and ENERGY
// holds the rounded price of what the job counted: here priced again, in the test, from the job's
// own result with the same table. The counts are the job's (a nonzero, complete set of PE actions:
// one per PE and edge), and ENERGY is 0 again after a soft reset.
TEST(Energy, APricedAcceleratorHoldsItsLastJobsEnergyUntilASoftReset) {
    auto& b = bench();
    const auto dev = tb::driver_device(b.cpu4);
    systolic_reset(&dev);
    settle();
    EXPECT_EQ(rd64(b.cpu4, SYSTOLIC_REG_ENERGY_LO), 0u);
    const auto pr = verify::random_problem<int32_format>({8, 8, 8}, 31);
    systolic_job job = energy_job(b.mem4, pr);
    systolic_program(&dev, &job);
    systolic_start(&dev, 0);
    settle();
    ASSERT_EQ(systolic_outcome(&dev), 1) << b.priced.last_result().error;
    const job_result& r = b.priced.last_result();
    const action_counts& a = r.actions;
    EXPECT_EQ(a.pe.total(), k_n * k_n * (r.advance_edges + r.preload_edges));
    EXPECT_GT(a.pe.mac_random, 0u);
    EXPECT_GT(a.pe.mac_gated, 0u);
    const double pj = energy::price(a, horowitz45(), 0).total_pj;
    ASSERT_GT(pj, 1.0);
    EXPECT_EQ(systolic_read_energy(&dev), static_cast<std::uint64_t>(std::llround(pj)));
    EXPECT_EQ(rd64(b.cpu4, SYSTOLIC_REG_ENERGY_LO), static_cast<std::uint64_t>(std::llround(pj)));

    systolic_reset(&dev);
    settle();
    EXPECT_EQ(rd64(b.cpu4, SYSTOLIC_REG_ENERGY_LO), 0u);
}

// Without a pricing function nothing is counted and ENERGY stays 0 after a completed job.
TEST(Energy, WithoutPricingEnergyReadsZeroAndNothingIsCounted) {
    fresh();
    auto p = place<int32_format>({6, 5, 7}, SYSTOLIC_DTYPE_INT32, 32);
    const auto dev = device();
    systolic_program(&dev, &p.job);
    systolic_start(&dev, 0);
    settle();
    ASSERT_EQ(systolic_outcome(&dev), 1) << bench().accel.last_result().error;
    EXPECT_GT(rd(SYSTOLIC_REG_EDGES_LO), 0u);
    EXPECT_EQ(bench().accel.last_result().actions.pe.total(), 0u);
    EXPECT_EQ(systolic_read_energy(&dev), 0u);
}

}  // namespace
