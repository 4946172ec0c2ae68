// sc_spawn, for the thread that sees the job end, is declared only with dynamic processes switched on.
#define SC_INCLUDE_DYNAMIC_PROCESSES
#include "systolic/verify/register_dut.h"

#include <cstdio>
#include <limits>
#include <stdexcept>

#include "systolic/accelerator_map.h"
#include "systolic/counting.h"

namespace systolic::verify {
namespace {

std::uint32_t narrow(std::uint64_t v, const char* what) {
    if (v > std::numeric_limits<std::uint32_t>::max())
        throw std::invalid_argument(std::string("register_dut: ") + what +
                                    " does not fit its 32-bit register");
    return std::uint32_t(v);
}

std::uint32_t order_code(tile_order o) {
    switch (o) {
        case tile_order::row_major:
            return SYSTOLIC_ORDER_ROW;
        case tile_order::col_major:
            return SYSTOLIC_ORDER_COL;
        case tile_order::serpentine:
            return SYSTOLIC_ORDER_SNAKE;
        case tile_order::random:
            break;
    }
    throw std::invalid_argument("register_dut: the accelerator has no random tile order");
}

std::uint32_t rounding_code(rounding_mode r) {
    switch (r) {
        case rounding_mode::nearest_even:
            return SYSTOLIC_ROUNDING_NEAREST_EVEN;
        case rounding_mode::nearest_away:
            return SYSTOLIC_ROUNDING_NEAREST_AWAY;
        case rounding_mode::toward_zero:
            return SYSTOLIC_ROUNDING_TOWARD_ZERO;
    }
    return SYSTOLIC_ROUNDING_NEAREST_EVEN;
}

}  // namespace

systolic_job driver_job(const matmul_job& job, dtype format) {
    if (job.run.quant.per_partial)
        throw std::invalid_argument("register_dut: the accelerator quantizes the complete sum only");
    systolic_job j;
    systolic_job_init(&j);
    j.m = narrow(job.shape.m, "M");
    j.k = narrow(job.shape.k, "K");
    j.p = narrow(job.shape.p, "P");
    j.a_addr = job.a.base;
    j.b_addr = job.b.base;
    j.c_addr = job.c.base;
    j.a_stride = narrow(job.a.row_stride, "A's stride");
    j.b_stride = narrow(job.b.row_stride, "B's stride");
    j.c_stride = narrow(job.c.row_stride, "C's stride");
    j.dtype = *regmap::code_for(regmap::dtype_values, dtype_names, format);
    j.out_dtype = job.run.quant.enabled ? SYSTOLIC_OUT_DTYPE_INT8 : SYSTOLIC_OUT_DTYPE_ACC;
    j.order = order_code(job.run.order);
    j.k_tile = narrow(job.run.k_tile, "K_TILE");
    j.k_policy =
        job.run.policy == k_policy::partials ? SYSTOLIC_K_POLICY_PARTIALS : SYSTOLIC_K_POLICY_PRESERVE;
    if (job.uses_partial_buffer()) {
        j.partial_addr = job.partial.base;
        j.partial_stride = narrow(job.partial.row_stride, "the partial-sum stride");
    }
    j.overflow =
        job.run.overflow == overflow_mode::saturate ? SYSTOLIC_OVERFLOW_SATURATE : SYSTOLIC_OVERFLOW_WRAP;
    j.rounding = rounding_code(job.run.quant.rounding);
    j.scale = float(job.run.quant.scale);
    j.zero_point = job.run.quant.zero_point;
    j.dataflow = *regmap::code_for(regmap::dataflow_values, dataflow_kind_names, job.run.dataflow);
    if (job.run.quant.columns) {
        j.scale_vec_addr = job.run.quant.columns->base;
        j.zero_point_vec = job.run.quant.columns->zero_points ? 1u : 0u;
    }
    return j;
}

job_status error_status(std::uint32_t error) {
    switch (static_cast<regmap::error_code>(error)) {
        case regmap::error_code::dma:
            return job_status::bus_error;
        case regmap::error_code::internal:
            return job_status::watchdog;
        default:
            return job_status::rejected;
    }
}

std::string error_name(std::uint32_t code) {
    for (const regmap::value& v : regmap::error_values)
        if (v.code == code) return std::string("ERR_") + v.name;
    return std::to_string(code);
}

register_dut::register_dut(const systolic_dev& dev, dtype format, const config& cfg)
    : m_dev(dev), m_dtype(format), m_cfg(cfg) {}

void register_dut::start(const matmul_job& job) {
    const systolic_job j = driver_job(job, m_dtype);
    systolic_program(&m_dev, &j);
    m_busy = true;
    const std::uint64_t generation = ++m_generation;
    m_started = m_ended = sc_core::sc_time_stamp();
    systolic_start(&m_dev, m_cfg.irq != nullptr);
    sc_core::sc_spawn([this, generation] { watch(generation); });
}

// Until the job ends: the line high (IRQ_STATUS was cleared by systolic_start, so it speaks of this
// job), or STATUS without BUSY.
void register_dut::watch(std::uint64_t generation) {
    if (m_cfg.irq) {
        while (!m_cfg.irq->read() && generation == m_generation)
            sc_core::wait(m_cfg.irq->value_changed_event());
    } else {
        while (generation == m_generation && systolic_outcome(&m_dev) == 0)
            sc_core::wait(m_cfg.poll_interval);
    }
    if (generation != m_generation) return;  // a later job started (after a time-out and reset)
    m_busy = false;
    m_ended = sc_core::sc_time_stamp();
    m_done.notify(sc_core::SC_ZERO_TIME);
}

job_result result_from_registers(const systolic_dev& dev, int outcome, std::uint32_t error,
                                 std::uint64_t* cycles) {
    job_result r;
    systolic_counters c{};
    systolic_read_counters(&dev, &c);
    if (cycles) *cycles = c.cycles;
    r.advance_edges = c.edges;
    r.preload_edges = c.preload_edges;
    r.macs_padded = c.macs;
    r.macs_real = c.macs_real;
    r.memory.stall_cycles = c.stall_cycles;
    if (outcome == 1) {
        r.status = job_status::completed;
    } else if (outcome == 0) {
        r.status = job_status::running;
    } else {
        r.status = error_status(error);
        r.error = error_name(error);
        if (error == SYSTOLIC_ERR_DMA) {
            char at[32];
            std::snprintf(at, sizeof at, " at 0x%llx",
                          static_cast<unsigned long long>(systolic_error_address(&dev)));
            r.error += at;
        }
    }
    return r;
}

job_result register_dut::result() {
    const int outcome = systolic_outcome(&m_dev);
    m_error = systolic_error(&m_dev);
    job_result r = result_from_registers(m_dev, outcome, m_error, &m_cycles);
    if (m_cfg.irq) systolic_irq_ack(&m_dev);
    r.start = m_started;
    r.end = m_ended;
    return r;
}

systolic::expected_counts register_dut::expected_counts(const problem_shape& s, std::uint64_t k_tile,
                                                        dataflow_kind df) const {
    return count_job(s, array_shape{m_cfg.array_size, m_cfg.array_size}, k_tile, df);
}

}  // namespace systolic::verify
