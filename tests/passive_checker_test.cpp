// The passive checker in front of the accelerator: software (a test initiator, through the driver
// of <systolic/accelerator_driver.h>) programs and starts every job itself, and the checker checks
// each one it sees start. The rig is elaborated once per process:
//   cpu : test_initiator -> checker.target_socket [passive_checker] initiator_socket -> accel.regs
//   accel.dma -> checker.dma_target_socket [dma_monitor -> environments] -> bus -> ram
//   rogue : test_initiator ------------------------------------------------> bus -> ram
// Jobs of every format, K-split, with int8 output, refused, outside memory and stopped by a soft
// reset pass; a rogue initiator that changes C or the memory around it while a job runs fails it.
#include <gtest/gtest.h>

#include <systolic/accelerator_driver.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <systemc>
#include <vector>

#include "driver_rig.h"
#include "format_types.h"
#include "systolic/accelerator.h"
#include "systolic/memory.h"
#include "systolic/number_format.h"
#include "systolic/verify/memory_access.h"
#include "systolic/verify/memory_plan.h"
#include "systolic/verify/passive_checker.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/register_dut.h"
#include "test_initiator.h"
#include "tlm_expect.h"

namespace {

using namespace systolic;
using namespace systolic::verify;
using systolic::tb::test_initiator;
using outcome = passive_checker::outcome;

constexpr std::uint64_t ram_base = 0x80000000, ram_size = 0x40000;
constexpr std::size_t n = 3;

// Two initiators into one RAM: the DMA path and the rogue.
struct bus : sc_core::sc_module {
    tlm_utils::simple_target_socket_tagged<bus> dma_side{"dma_side"}, rogue_side{"rogue_side"};
    tlm_utils::simple_initiator_socket<bus> initiator_socket{"initiator_socket"};
    explicit bus(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        int id = 0;
        for (auto* s : {&dma_side, &rogue_side}) {
            s->register_b_transport(this, &bus::b_transport, id);
            s->register_transport_dbg(this, &bus::transport_dbg, id);
            s->register_get_direct_mem_ptr(this, &bus::get_direct_mem_ptr, id++);
        }
        initiator_socket.register_invalidate_direct_mem_ptr(this, &bus::invalidate_direct_mem_ptr);
    }
    void b_transport(int, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        initiator_socket->b_transport(t, delay);
    }
    unsigned int transport_dbg(int, tlm::tlm_generic_payload& t) {
        return initiator_socket->transport_dbg(t);
    }
    bool get_direct_mem_ptr(int, tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
        return initiator_socket->get_direct_mem_ptr(t, dmi);
    }
    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
        dma_side->invalidate_direct_mem_ptr(start, end);
        rogue_side->invalidate_direct_mem_ptr(start, end);
    }
};

accelerator::config accel_config() {
    accelerator::config c;
    c.array_size = n;
    return c;
}

struct rig {
    test_initiator cpu{"cpu"};
    accelerator accel{"accel", accel_config()};
    passive_checker checker{"checker", accel, ram_base, ram_size};
    bus interconnect{"bus"};
    memory ram{"ram", memory::config{ram_base, ram_size}};
    test_initiator rogue{"rogue"};
    sc_core::sc_signal<bool> irq{"irq"};
    // The software's loader: debug transport into the RAM, beside the DMA path.
    debug_memory_access loader{rogue.initiator_socket, ram_base, ram_size};

    rig() {
        cpu.initiator_socket.bind(checker.target_socket);
        checker.initiator_socket.bind(accel.regs);
        accel.dma.bind(checker.dma_target_socket);
        checker.dma_initiator_socket.bind(interconnect.dma_side);
        rogue.initiator_socket.bind(interconnect.rogue_side);
        interconnect.initiator_socket.bind(ram.target_socket);
        accel.irq.bind(irq);
    }
};

constexpr auto bench = &tb::rig_environment<rig>::get;

systolic_dev device() {
    return tb::driver_device(bench().cpu);
}

using tb::settle;

// A job placed in RAM as the software's loader puts it: A and B among a seeded pattern, padded
// rows and guard bytes, so that any stray byte shows.
template <class Format>
matmul_job load(const problem_shape& s, std::uint64_t seed, const job_options& opt = {}) {
    const auto pr = random_problem<Format>(s, seed);
    const std::uint64_t osz = sizeof(typename Format::operand_type),
                        asz = sizeof(typename Format::accumulator_type);
    const matmul_job job = plan_memory(s, opt, ram_base, osz, asz);
    fill_memory(bench().loader, memory_extent(job, ram_base, false), job, pr.a.data(), pr.b.data(), osz,
                seed);
    return job;
}

// Programs and starts the job as software does, interrupt enabled.
void start(const matmul_job& job, dtype format) {
    const auto dev = device();
    const systolic_job j = driver_job(job, format);
    systolic_program(&dev, &j);
    systolic_start(&dev, 1);
}

// The reports of the starts since `from` (an index into jobs()).
std::vector<passive_checker::job_report> since(std::size_t from) {
    const auto& all = bench().checker.jobs();
    return {all.begin() + static_cast<std::ptrdiff_t>(from), all.end()};
}

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines)
        s += l + "\n";
    return s;
}

// Every test starts idle, with the interrupt acknowledged and every register at reset.
std::size_t fresh() {
    const auto dev = device();
    systolic_reset(&dev);
    settle();
    EXPECT_FALSE(bench().accel.busy());
    return bench().checker.jobs().size();
}

void expect_checked(const passive_checker::job_report& r, std::uint64_t elements) {
    EXPECT_EQ(r.what, outcome::completed) << r.line();
    EXPECT_TRUE(r.pass) << joined(r.errors);
    EXPECT_EQ(r.elements, elements) << r.line();
    EXPECT_GT(r.end, r.start) << r.line();
}

template <class Format>
void run_one(const problem_shape& s, std::uint64_t seed, const job_options& opt = {}) {
    const std::size_t from = fresh();
    start(load<Format>(s, seed, opt), dtype_of<Format>);
    settle();
    const auto got = since(from);
    ASSERT_EQ(got.size(), 1u);
    expect_checked(got[0], s.m * s.p);
    const auto dev = device();
    EXPECT_EQ(systolic_outcome(&dev), 1);
}

TEST(PassiveChecker, ChecksAJobOfEveryFormat) {
    const std::uint64_t before = bench().checker.transactions_checked();
    const std::size_t failures = bench().checker.failures().size();
    for_each_format([](auto format) {
        using Format = decltype(format);
        const std::uint64_t i = systolic::test::format_index<Format>;
        run_one<Format>({5 + i, 4 + 2 * i, 6 + i % 2}, i + 1);  // a shape of its own for each format
    });
    EXPECT_GT(bench().checker.transactions_checked(), before);
    EXPECT_EQ(bench().checker.failures().size(), failures) << joined(bench().checker.failures());
}

TEST(PassiveChecker, ChecksKSplitJobs) {
    job_options preserve;
    preserve.run.k_tile = 3;
    run_one<int32_format>({5, 11, 4}, 5, preserve);
    job_options partials = preserve;
    partials.run.policy = k_policy::partials;
    run_one<int32_format>({5, 11, 4}, 6, partials);
    run_one<fp32_format>({4, 10, 6}, 7, partials);
}

TEST(PassiveChecker, ChecksInt8Output) {
    job_options requant;
    requant.run.quant.enabled = true;
    requant.run.quant.scale = 0.01;
    requant.run.quant.zero_point = -3;
    run_one<int8_format>({8, 20, 7}, 8, requant);
    requant.run.k_tile = 6;
    requant.run.policy = k_policy::partials;
    run_one<int8_format>({8, 20, 7}, 9, requant);
}

// SCALE_VEC_ADDR and ZERO_POINT_VEC come through the shadow registers too: the checker takes the
// vectors from memory with A and B, and checks every code against the per-column reference.
TEST(PassiveChecker, ChecksPerColumnInt8Output) {
    job_options opt;
    opt.run.quant.enabled = true;
    opt.run.quant.columns = column_vectors{0, true};
    const problem_shape s{6, 9, 5};
    std::vector<double> scales;
    std::vector<std::int32_t> zero_points;
    for (std::int32_t j = 0; j < 5; ++j) {
        scales.push_back(1.0 / (30 + 20 * j));
        zero_points.push_back(j * 7 - 14);
    }
    for (const dataflow_kind df : {dataflow_kind::os, dataflow_kind::ws}) {
        opt.run.dataflow = df;
        const std::size_t from = fresh();
        const matmul_job job = load<int8_format>(s, 10, opt);
        write_columns(bench().loader, job, scales, zero_points);
        start(job, dtype::int8);
        settle();
        const auto got = since(from);
        ASSERT_EQ(got.size(), 1u);
        expect_checked(got[0], s.m * s.p);
    }
}

// DATAFLOW comes through the shadow registers into the checker's decoder: ws and is jobs are
// checked against their dataflow's reference and counting rules (PRELOAD_EDGES among them), and ws
// with partial sums is a refusal the checker expects.
TEST(PassiveChecker, ChecksStationaryDataflows) {
    for (const dataflow_kind df : {dataflow_kind::ws, dataflow_kind::is}) {
        job_options opt;
        opt.run.dataflow = df;
        run_one<int32_format>({7, 5, 4}, 22, opt);
        opt.run.k_tile = 2;
        run_one<fp32_format>({5, 7, 6}, 23, opt);
    }
    const std::size_t from = fresh();
    job_options ws_split;
    ws_split.run.dataflow = dataflow_kind::ws;
    ws_split.run.k_tile = 2;
    ws_split.run.policy = k_policy::partials;
    start(load<int32_format>({4, 5, 4}, 24, ws_split), dtype::int32);
    settle();
    const auto got = since(from);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].what, outcome::refused) << got[0].line();
    EXPECT_TRUE(got[0].pass) << got[0].line();
    const auto dev = device();
    EXPECT_EQ(systolic_error(&dev), SYSTOLIC_ERR_OPTION);
    run_one<int32_format>({4, 4, 4}, 25);
}

// Each refusal the decoder gives is the accelerator's too, with no memory touched; the next job
// is checked as usual.
TEST(PassiveChecker, ChecksRefusedStartsAsRefusals) {
    const std::size_t from = fresh();
    const auto dev = device();
    matmul_job overlap = load<int32_format>({4, 4, 4}, 10);
    overlap.c.base = overlap.a.base + 8;
    start(overlap, dtype::int32);
    systolic_job bad_dtype = driver_job(load<int32_format>({4, 4, 4}, 11), dtype::int32);
    bad_dtype.dtype = 9;
    systolic_program(&dev, &bad_dtype);
    systolic_start(&dev, 0);
    systolic_job zero = bad_dtype;
    zero.dtype = SYSTOLIC_DTYPE_INT32;
    zero.k = 0;
    systolic_program(&dev, &zero);
    systolic_start(&dev, 0);
    job_options split;
    split.run.k_tile = 2;
    split.run.policy = k_policy::partials;
    systolic_job no_partial = driver_job(load<int32_format>({4, 5, 4}, 12, split), dtype::int32);
    no_partial.partial_addr = 0;
    systolic_program(&dev, &no_partial);
    systolic_start(&dev, 0);
    settle();
    const auto got = since(from);
    ASSERT_EQ(got.size(), 4u);
    for (const auto& r : got) {
        EXPECT_EQ(r.what, outcome::refused) << r.line();
        EXPECT_TRUE(r.pass) << r.line();
    }
    EXPECT_EQ(systolic_error(&dev), SYSTOLIC_ERR_PARTIAL);
    EXPECT_NE(got[0].job.find("C overlaps A"), std::string::npos) << got[0].job;
    EXPECT_NE(got[1].job.find("unknown DTYPE 9"), std::string::npos) << got[1].job;
    EXPECT_EQ(bench().checker.counts().stray_writes, 0u);
    run_one<int32_format>({4, 4, 4}, 13);
}

// A START while a job runs is refused with ERR_BUSY; the running job goes on and is checked, its
// DONE standing beside the refusal's ERROR.
TEST(PassiveChecker, StartWhileBusyIsARefusalAndTheJobGoesOn) {
    const std::size_t from = fresh();
    const auto dev = device();
    start(load<int32_format>({9, 6, 9}, 14), dtype::int32);
    systolic_start(&dev, 1);
    settle();
    const auto got = since(from);
    ASSERT_EQ(got.size(), 2u);
    EXPECT_EQ(got[0].what, outcome::refused);
    EXPECT_TRUE(got[0].pass) << got[0].line();
    EXPECT_EQ(got[0].index, got[1].index + 1);  // reported at once, the job at its end
    EXPECT_EQ(got[0].job, "START while job " + std::to_string(got[1].index) + " runs");
    expect_checked(got[1], 9 * 9);
    EXPECT_EQ(systolic_status(&dev), SYSTOLIC_STATUS_DONE | SYSTOLIC_STATUS_ERROR);
}

// Starts an int32 job whose DMA must fail (the checker's reports counted from `from`): it ends
// with ERR_DMA, and the checker passes it as a bus error.
void expect_a_dma_error_passes(std::size_t from, const matmul_job& job) {
    start(job, dtype::int32);
    settle();
    const auto got = since(from);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].what, outcome::bus_error);
    EXPECT_TRUE(got[0].pass) << joined(got[0].errors);
    const auto dev = device();
    EXPECT_EQ(systolic_error(&dev), SYSTOLIC_ERR_DMA);
}

// C outside the RAM: the accelerator accepts the job and its DMA fails, as the checker demands.
TEST(PassiveChecker, AJobOutsideMemoryMustFailWithADmaError) {
    const std::size_t from = fresh();
    matmul_job job = load<int32_format>({4, 4, 4}, 15);
    job.c.base = 0x1000;
    expect_a_dma_error_passes(from, job);
}

// A, packed, starting 16 bytes before the RAM's end: its first row is in memory, its second starts
// inside and runs past the end. ERROR_ADDR is the failing transaction's first byte, which the memory
// answers; the transaction's last bytes it does not, and the checker accepts that.
TEST(PassiveChecker, ADmaErrorOnATransferThatRunsPastTheEndOfMemoryPasses) {
    const std::size_t from = fresh();
    matmul_job job = load<int32_format>({3, 3, 3}, 17);
    job.a.base = ram_base + ram_size - 16;
    job.a.row_stride = job.a.row_bytes();
    expect_a_dma_error_passes(from, job);
    const auto dev = device();
    EXPECT_EQ(systolic_error_address(&dev), ram_base + ram_size - 4);
}

// A soft reset while busy abandons the job: nothing of it is checked, its last writes are not stray,
// and the next job is checked as usual.
TEST(PassiveChecker, SoftResetWhileBusyAbandonsTheJob) {
    const std::size_t from = fresh();
    start(load<int32_format>({12, 8, 12}, 16), dtype::int32);
    sc_core::sc_start(sc_core::sc_time(100, sc_core::SC_NS));
    ASSERT_TRUE(bench().accel.busy());
    const auto dev = device();
    systolic_reset(&dev);
    settle();
    const auto got = since(from);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0].what, outcome::abandoned);
    EXPECT_TRUE(got[0].pass) << got[0].line();
    EXPECT_EQ(bench().checker.counts().stray_writes, 0u);
    run_one<int32_format>({4, 4, 4}, 17);
}

// The rogue initiator's writes while a job runs: the checker must fail the job, with one line.
struct rogue_result {
    passive_checker::job_report report;
    std::size_t failures_added = 0;
};

template <class Rogue>
rogue_result run_with_rogue(const matmul_job& job, Rogue&& rogue) {
    const std::size_t from = fresh();
    const std::size_t failures = bench().checker.failures().size();
    start(job, dtype::int32);
    rogue(job);
    settle();
    const auto got = since(from);
    EXPECT_EQ(got.size(), 1u);
    rogue_result r;
    if (!got.empty()) r.report = got.back();
    r.failures_added = bench().checker.failures().size() - failures;
    return r;
}

TEST(PassiveChecker, FailsAJobWhoseCARogueInitiatorOverwrites) {
    const matmul_job job = load<int32_format>({9, 5, 9}, 18);
    const auto r = run_with_rogue(job, [](const matmul_job& j) {
        // Once the accelerator has written C(0,0) and while the job still runs, the rogue changes it.
        const std::uint64_t at = j.c.address(0, 0);
        std::int64_t before = 0, now = 0;
        bench().ram.core().read(at, &before, sizeof before);
        for (now = before; now == before && bench().accel.busy();
             bench().ram.core().read(at, &now, sizeof now))
            sc_core::sc_start(sc_core::sc_time(10, sc_core::SC_NS));
        ASSERT_TRUE(bench().accel.busy());
        EXPECT_TLM_OK(bench().rogue.write(at, now + 1));
    });
    EXPECT_FALSE(r.report.pass);
    EXPECT_EQ(r.report.what, outcome::completed);
    EXPECT_EQ(r.failures_added, 1u);
    ASSERT_FALSE(r.report.errors.empty());
    EXPECT_NE(r.report.errors[0].find("C(0,0) holds "), std::string::npos) << joined(r.report.errors);
    EXPECT_EQ(r.report.line().rfind("job " + std::to_string(r.report.index) + " (int32 M=9 K=5 P=9", 0), 0u)
        << r.report.line();
}

TEST(PassiveChecker, FailsAJobAroundWhoseCARogueInitiatorWrites) {
    const matmul_job job = load<int32_format>({6, 5, 6}, 19);
    const std::uint64_t padding = job.c.address(2, 0) + job.c.row_bytes();  // between C's rows 2 and 3
    const auto r = run_with_rogue(job, [&](const matmul_job&) {
        std::uint8_t byte = 0;
        bench().ram.core().read(padding, &byte, 1);
        EXPECT_TLM_OK(bench().rogue.write(padding, static_cast<std::uint8_t>(~byte)));
    });
    EXPECT_FALSE(r.report.pass);
    EXPECT_EQ(r.failures_added, 1u);
    std::ostringstream at;
    at << "memory outside C changed at 0x" << std::hex << padding;
    ASSERT_FALSE(r.report.errors.empty());
    EXPECT_NE(r.report.errors[0].find(at.str()), std::string::npos) << joined(r.report.errors);
}

// A clean job after the failed ones passes again: a failure leaves nothing behind.
TEST(PassiveChecker, ChecksCleanlyAfterAFailure) {
    const matmul_job job = load<int32_format>({6, 5, 6}, 20);
    const auto r = run_with_rogue(job, [&](const matmul_job& j) {
        std::int32_t a00 = 0;
        bench().ram.core().read(j.a.address(0, 0), &a00, sizeof a00);
        EXPECT_TLM_OK(bench().rogue.write(j.a.address(0, 0), a00 + 1));
    });
    EXPECT_FALSE(r.report.pass);
    run_one<int32_format>({6, 5, 6}, 21);
}

}  // namespace
