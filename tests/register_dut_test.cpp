// The accelerator checked through its registers: register_dut programs each job with the driver of
// <systolic/accelerator_driver.h> over TLM, waits on the interrupt line or polls STATUS, and reads
// the outcome back; the environment in front of the accelerator's DMA checks every job as it checks
// any DUT. A job the accelerator must refuse ends rejected with the code's name and memory untouched;
// a wrong translation of the job into registers fails the scoreboard. A second accelerator, built
// with the functional engine, runs the dataflows beside the first (the engine is configuration,
// not a register).
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>

#include <array>
#include <cstdint>
#include <iterator>
#include <stdexcept>
#include <string>
#include <systemc>
#include <utility>
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

constexpr dataflow_kind dataflows[] = {dataflow_kind::os, dataflow_kind::ws, dataflow_kind::is};
constexpr engine_kind engines[] = {engine_kind::cycle, engine_kind::functional};
const problem_shape dataflow_shape{7, 5, 4};  // two folds of K on 3 x 3: three terms, then two

using dataflow_checks = std::array<job_check<int32_format>, std::size(dataflows)>;

// The same int32 problem as os, ws and is, programmed through DATAFLOW, on one accelerator.
dataflow_checks run_dataflows(environment<int32_format>& env, software& s, sc_core::sc_signal<bool>& line) {
    register_dut::config cfg;
    cfg.array_size = n;
    cfg.irq = &line;
    register_dut d(s.dev(), dtype::int32, cfg);
    const auto pr = random_problem<int32_format>(dataflow_shape, 6);
    dataflow_checks out;
    for (std::size_t i = 0; i < std::size(dataflows); ++i) {
        job_options opt;
        opt.run.dataflow = dataflows[i];
        out[i] = env.check(d, pr, opt);
    }
    return out;
}

SC_MODULE(platform) {
    memory ram;
    environment<int32_format> env32;
    environment<fp32_format> env_fp32;
    accelerator accel;
    software sw;
    sc_core::sc_signal<bool> irq;

    // The functional-engine accelerator, with its own int32 environment and RAM.
    memory ram_fn;
    environment<int32_format> env32_fn;
    accelerator accel_fn;
    software sw_fn;
    sc_core::sc_signal<bool> irq_fn;

    struct results {
        job_check<int32_format> irq_job, polled_job, k_split;
        job_check<fp32_format> fp32_job;
        refusal_check overlap;
        std::string overlap_error;
        dataflow_checks dataflow_jobs[std::size(engines)];  // in the order of engines
        refusal_check ws_partials;
        std::string ws_partials_error;
        // Per-column scales through SCALE_VEC_ADDR and ZERO_POINT_VEC: os, ws and is on the cycle
        // accelerator, is on the functional one; then a misaligned vector, refused.
        std::vector<job_check<int32_format>> per_column;
        refusal_check misaligned_vector;
        std::string misaligned_vector_error;
    } r;

    static accelerator::config accel_config(engine_kind engine = engine_kind::cycle) {
        accelerator::config c;
        c.array_size = n;
        c.engine = engine;
        return c;
    }

    SC_CTOR(platform)
        : ram("ram", memory::config{ram_base, ram_size}),
          env32("env32", ram_base, ram_size),
          env_fp32("env_fp32", ram_base, ram_size),
          accel("accel", accel_config()),
          sw("sw"),
          irq("irq"),
          ram_fn("ram_fn", memory::config{ram_base, ram_size}),
          env32_fn("env32_fn", ram_base, ram_size),
          accel_fn("accel_fn", accel_config(engine_kind::functional)),
          sw_fn("sw_fn"),
          irq_fn("irq_fn") {
        // One environment per format is in the DMA path at a time: the int32 one here; the fp32
        // one is chained behind it, so both see every transfer and reach the RAM.
        accel.dma.bind(env32.target_socket);
        env32.initiator_socket.bind(env_fp32.target_socket);
        env_fp32.initiator_socket.bind(ram.target_socket);
        sw.initiator_socket.bind(accel.regs);
        accel.irq.bind(irq);
        accel_fn.dma.bind(env32_fn.target_socket);
        env32_fn.initiator_socket.bind(ram_fn.target_socket);
        sw_fn.initiator_socket.bind(accel_fn.regs);
        accel_fn.irq.bind(irq_fn);
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
        split.run.k_tile = 2;
        split.run.policy = k_policy::partials;
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

        r.dataflow_jobs[0] = run_dataflows(env32, sw, irq);
        r.dataflow_jobs[1] = run_dataflows(env32_fn, sw_fn, irq_fn);
        job_options ws_split;
        ws_split.run.dataflow = dataflow_kind::ws;
        ws_split.run.k_tile = 2;
        ws_split.run.policy = k_policy::partials;
        r.ws_partials = env32.check_refused(d, env32.plan_memory(pr.shape, ws_split), job_status::rejected);
        r.ws_partials_error = d.result().error;

        auto columns = random_problem<int32_format>({5, 4, 7}, 8);
        for (std::uint64_t j = 0; j < 7; ++j) {
            columns.column_scales.push_back(1.0 / double(40 + 37 * j));
            columns.column_zero_points.push_back(std::int32_t(j) * 9 - 30);
        }
        job_options per_column;
        per_column.run.quant.enabled = true;
        per_column.run.quant.columns = column_vectors{0, true};
        for (const dataflow_kind df : dataflows) {
            per_column.run.dataflow = df;
            r.per_column.push_back(env32.check(d, columns, per_column));
        }
        register_dut::config cfg_fn = cfg;
        cfg_fn.irq = &irq_fn;
        register_dut d_fn(sw_fn.dev(), dtype::int32, cfg_fn);
        r.per_column.push_back(env32_fn.check(d_fn, columns, per_column));
        matmul_job misaligned = env32.plan_memory(columns.shape, per_column);
        misaligned.run.quant.columns->base += 4;
        r.misaligned_vector = env32.check_refused(d, misaligned, job_status::rejected);
        r.misaligned_vector_error = d.result().error;
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

    // DATAFLOW on both engines: every job passes the scoreboard (C, EDGES and PRELOAD_EDGES by the
    // dataflow's counting rules), and integer C under wrap is os's to the bit.
    for (std::size_t e = 0; e < std::size(engines); ++e) {
        const auto& os = r.dataflow_jobs[e][0];
        for (std::size_t i = 0; i < std::size(dataflows); ++i) {
            const auto& c = r.dataflow_jobs[e][i];
            const std::string what = std::string(to_string(engines[e])) + " " + to_string(dataflows[i]);
            EXPECT_TRUE(c.pass()) << what << "\n" << joined(c.scoreboard.errors);
            EXPECT_EQ(c.result.status, job_status::completed) << what;
            EXPECT_EQ(c.scoreboard.checked, dataflow_shape.m * dataflow_shape.p) << what;
            EXPECT_TRUE(c.c == os.c) << what << ": C differs from os";
            const auto counts = count_job(dataflow_shape, array_shape{n, n}, 0, dataflows[i]);
            EXPECT_EQ(c.result.preload_edges, counts.preload_edges) << what;
            EXPECT_EQ(c.result.advance_edges, counts.advance_edges) << what;
        }
        EXPECT_GT(r.dataflow_jobs[e][1].result.preload_edges, 0u);
    }
    EXPECT_EQ(p.accel_fn.last_result().engine, engine_kind::functional);
    EXPECT_EQ(p.accel_fn.last_result().dataflow, dataflow_kind::is);
    // ws with partial sums: refused on START, nothing touched.
    EXPECT_TRUE(r.ws_partials.pass()) << joined(r.ws_partials.errors);
    EXPECT_EQ(r.ws_partials_error, "ERR_OPTION");
    // Per-column: every int8 code checked against the reference's per-column rule.
    ASSERT_EQ(r.per_column.size(), 4u);
    for (const auto& c : r.per_column) {
        EXPECT_TRUE(c.pass()) << to_string(c.result.dataflow) << "\n" << joined(c.scoreboard.errors);
        EXPECT_EQ(c.result.status, job_status::completed);
        EXPECT_EQ(c.scoreboard.checked, 5u * 7u);
        EXPECT_TRUE(c.c == r.per_column[0].c) << to_string(c.result.dataflow);
    }
    EXPECT_TRUE(r.misaligned_vector.pass()) << joined(r.misaligned_vector.errors);
    EXPECT_EQ(r.misaligned_vector_error, "ERR_ALIGN");
}

TEST(RegisterDut, TranslatesEveryJobFieldIntoItsRegister) {
    matmul_job job = make_job({3, 4, 5}, 4, 8, 0x1000, 0x2000, 0x3000, 32, 48, 64);
    job.run.order = tile_order::serpentine;
    job.run.k_tile = 2;
    job.run.policy = k_policy::partials;
    job.partial = make_job({3, 4, 5}, 4, 8, 0, 0, 0x4000, 0, 0, 40).c;
    job.run.overflow = overflow_mode::saturate;
    job.run.quant.enabled = true;
    job.run.quant.scale = 0.5;
    job.run.quant.zero_point = -3;
    job.run.quant.rounding = rounding_mode::toward_zero;
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
    EXPECT_EQ(j.scale_vec_addr, 0u);  // per-tensor
    EXPECT_EQ(j.zero_point_vec, 0u);
    EXPECT_EQ(j.scale, 0.5f);
    EXPECT_EQ(j.zero_point, -3);
    EXPECT_EQ(j.dataflow, SYSTOLIC_DATAFLOW_OS);
    for (const auto& [df, code] : {std::pair{dataflow_kind::ws, SYSTOLIC_DATAFLOW_WS},
                                   std::pair{dataflow_kind::is, SYSTOLIC_DATAFLOW_IS}}) {
        job.run.dataflow = df;
        EXPECT_EQ(driver_job(job, dtype::int8).dataflow, code) << to_string(df);
    }
    job.run.quant.columns = column_vectors{0x5000, true};
    EXPECT_EQ(driver_job(job, dtype::int8).scale_vec_addr, 0x5000u);
    EXPECT_EQ(driver_job(job, dtype::int8).zero_point_vec, 1u);
    job.run.quant.columns->zero_points = false;
    EXPECT_EQ(driver_job(job, dtype::int8).zero_point_vec, 0u);
    job.run.order = tile_order::random;
    EXPECT_THROW(driver_job(job, dtype::int8), std::invalid_argument);
    EXPECT_EQ(error_name(SYSTOLIC_ERR_OVERLAP), "ERR_OVERLAP");
    EXPECT_EQ(error_name(99), "99");
}

}  // namespace
