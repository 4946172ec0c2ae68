// The accelerator checked through its registers: register_dut programs each job with the driver of
// <systolic/accelerator_driver.h> over TLM, waits on the interrupt line or polls STATUS, and reads
// the outcome back; the environment in front of the accelerator's DMA checks every job as it checks
// any DUT. A job the accelerator must refuse ends rejected with the code's name and memory untouched;
// a wrong translation of the job into registers fails the scoreboard.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/accelerator.h"
#include "systolic/memory.h"
#include "systolic/number_format.h"
#include "systolic/verify/environment.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/register_dut.h"

namespace {

using namespace systolic;
using namespace systolic::verify;

constexpr std::uint64_t ram_base = 0x80000000, ram_size = 0x40000;
constexpr std::size_t n = 3;

// Software's register accessors: one TLM transaction each, its delay waited for.
SC_MODULE(software) {
    tlm_utils::simple_initiator_socket<software> initiator_socket;
    SC_CTOR(software) : initiator_socket("initiator_socket") {}

    std::uint32_t access(tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t value) {
        tlm::tlm_generic_payload t;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        t.set_command(cmd);
        t.set_address(offset);
        t.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
        t.set_data_length(4);
        t.set_streaming_width(4);
        t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        initiator_socket->b_transport(t, delay);
        sc_core::wait(delay);
        if (!t.is_response_ok()) throw std::runtime_error("register access failed");
        return value;
    }
    static std::uint32_t read32(void* ctx, std::uint32_t offset) {
        return static_cast<software*>(ctx)->access(tlm::TLM_READ_COMMAND, offset, 0);
    }
    static void write32(void* ctx, std::uint32_t offset, std::uint32_t value) {
        static_cast<software*>(ctx)->access(tlm::TLM_WRITE_COMMAND, offset, value);
    }
    systolic_dev dev() {
        return {this, &read32, &write32};
    }
};

SC_MODULE(platform) {
    memory ram;
    environment<int32_format> env32;
    environment<fp32_format> env_fp32;
    accelerator accel;
    software sw;
    sc_core::sc_signal<bool> irq;

    struct results {
        job_check<int32_format> irq_job, polled_job, k_split;
        job_check<fp32_format> fp32_job;
        refusal_check overlap;
        std::string overlap_error;
    } r;

    static accelerator::config accel_config() {
        accelerator::config c;
        c.array_size = n;
        return c;
    }

    SC_CTOR(platform)
        : ram("ram", memory::config{ram_base, ram_size}),
          env32("env32", ram_base, ram_size),
          env_fp32("env_fp32", ram_base, ram_size),
          accel("accel", accel_config()),
          sw("sw"),
          irq("irq") {
        // One environment per format is in the DMA path at a time: the int32 one here; the fp32
        // one is chained behind it, so both see every transfer and reach the RAM.
        accel.dma.bind(env32.target_socket);
        env32.initiator_socket.bind(env_fp32.target_socket);
        env_fp32.initiator_socket.bind(ram.target_socket);
        sw.initiator_socket.bind(accel.regs);
        accel.irq.bind(irq);
        SC_THREAD(run);
    }

    void run() {
        register_dut::config cfg;
        cfg.array_size = n;
        cfg.irq = &irq;
        register_dut d(sw.dev(), dtype::int32, cfg);
        const auto pr = random_problem<int32_format>({7, 5, 4}, 3);
        r.irq_job = env32.check(d, pr);
        job_options split;
        split.k_tile = 2;
        split.policy = k_policy::partials;
        r.k_split = env32.check(d, random_problem<int32_format>({4, 7, 5}, 4), split);

        register_dut::config polled = cfg;
        polled.irq = nullptr;
        d.set_config(polled);
        r.polled_job = env32.check(d, pr);

        register_dut f(sw.dev(), dtype::fp32, cfg);
        r.fp32_job = env_fp32.check(f, random_problem<fp32_format>({5, 6, 7}, 5));

        matmul_job overlap = env32.plan_memory(pr.shape, {});
        overlap.c.base = overlap.a.base + 8;  // C on top of A
        r.overlap = env32.check_refused(d, overlap, job_status::rejected);
        r.overlap_error = d.result().error;
    }
};

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines)
        s += l + "\n";
    return s;
}

TEST(RegisterDut, ChecksTheAcceleratorThroughItsRegisters) {
    platform p("platform");
    sc_core::sc_start();
    const auto& r = p.r;
    for (const auto* c : {&r.irq_job, &r.polled_job, &r.k_split}) {
        EXPECT_TRUE(c->pass()) << joined(c->scoreboard.errors);
        EXPECT_EQ(c->result.status, job_status::completed);
        EXPECT_GT(c->result.advance_edges, 0u);
    }
    EXPECT_EQ(r.irq_job.scoreboard.checked, 7u * 4u);
    EXPECT_EQ(r.k_split.scoreboard.checked, 4u * 5u);
    EXPECT_TRUE(r.fp32_job.pass()) << joined(r.fp32_job.scoreboard.errors);
    EXPECT_EQ(r.fp32_job.scoreboard.checked, 5u * 7u);
    EXPECT_EQ(r.irq_job.result.advance_edges, count_job({7, 5, 4}, n).advance_edges);
    EXPECT_TRUE(r.overlap.pass()) << joined(r.overlap.errors);
    EXPECT_EQ(r.overlap.result.error, "ERR_OVERLAP");
    EXPECT_GT(p.env32.checker.checked(), 0u);
}

TEST(RegisterDut, TranslatesEveryJobFieldIntoItsRegister) {
    matmul_job job = make_job({3, 4, 5}, 4, 8, 0x1000, 0x2000, 0x3000, 32, 48, 64);
    job.order = tile_order::serpentine;
    job.k_tile = 2;
    job.policy = k_policy::partials;
    job.partial = make_job({3, 4, 5}, 4, 8, 0, 0, 0x4000, 0, 0, 40).c;
    job.overflow = overflow_mode::saturate;
    job.quant.enabled = true;
    job.quant.scale = 0.5;
    job.quant.zero_point = -3;
    job.quant.rounding = rounding_mode::toward_zero;
    const systolic_job j = driver_job(job, dtype::int8);
    EXPECT_EQ(j.m, 3u);
    EXPECT_EQ(j.k, 4u);
    EXPECT_EQ(j.p, 5u);
    EXPECT_EQ(j.a_addr, 0x1000u);
    EXPECT_EQ(j.b_addr, 0x2000u);
    EXPECT_EQ(j.c_addr, 0x3000u);
    EXPECT_EQ(j.a_stride, 32u);
    EXPECT_EQ(j.b_stride, 48u);
    EXPECT_EQ(j.c_stride, 64u);
    EXPECT_EQ(j.dtype, SYSTOLIC_DTYPE_INT8);
    EXPECT_EQ(j.out_dtype, SYSTOLIC_OUT_DTYPE_INT8);
    EXPECT_EQ(j.order, SYSTOLIC_ORDER_SNAKE);
    EXPECT_EQ(j.k_tile, 2u);
    EXPECT_EQ(j.k_policy, SYSTOLIC_K_POLICY_PARTIALS);
    EXPECT_EQ(j.partial_addr, 0x4000u);
    EXPECT_EQ(j.partial_stride, 40u);
    EXPECT_EQ(j.overflow, SYSTOLIC_OVERFLOW_SATURATE);
    EXPECT_EQ(j.rounding, SYSTOLIC_ROUNDING_TOWARD_ZERO);
    EXPECT_EQ(j.scale, 0.5f);
    EXPECT_EQ(j.zero_point, -3);
    job.order = tile_order::random;
    EXPECT_THROW(driver_job(job, dtype::int8), std::invalid_argument);
    EXPECT_EQ(error_name(SYSTOLIC_ERR_OVERLAP), "ERR_OVERLAP");
    EXPECT_EQ(error_name(99), "99");
}

}  // namespace
