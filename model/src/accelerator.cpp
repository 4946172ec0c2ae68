#include "systolic/accelerator.h"

#include <systolic/accelerator_regs.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <tuple>
#include <type_traits>

#include "systolic/log.h"
#include "systolic/memory_system.h"

namespace systolic {

namespace {

using regmap::error_code;

}  // namespace

accelerator::accelerator(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      regs("regs"),
      dma("dma"),
      irq("irq"),
      m_cfg(cfg),
      m_log(get_logger(this->name())),
      m_regs([n = cfg.array_size](const regmap::reg&) { return static_cast<std::uint32_t>(n); }),
      m_funnel("dma_funnel") {
    if (cfg.array_size == 0 || cfg.array_size > 1024)
        throw std::invalid_argument(std::string(this->name()) + ": array size must be 1 to 1024");
    // The rules of the memory configuration that hold for any job (a negative bandwidth, SRAM sizes
    // without scratchpads): a platform built so is refused at construction, not at every START.
    if (const std::string err = check_memory_config(cfg.memory, make_job({1, 1, 1}, 1, 1, 0, 0x100, 0x200));
        !err.empty())
        throw std::invalid_argument(std::string(this->name()) + ": " + err);
    std::apply(
        [&](auto&... lanes) {
            auto make = [&](auto& l) {
                using lane_type = typename std::decay_t<decltype(l)>::element_type;
                l = std::make_unique<lane_type>(to_string(dtype_of<typename lane_type::format>), cfg);
                l->ctrl->initiator_socket.bind(m_funnel);
            };
            (make(lanes), ...);
        },
        m_lanes);

    regs.register_b_transport(this, &accelerator::b_transport);
    regs.register_transport_dbg(this, &accelerator::transport_dbg);
    regs.register_get_direct_mem_ptr(this, &accelerator::get_direct_mem_ptr);
    m_funnel.register_b_transport(this, &accelerator::funnel_b_transport);
    m_funnel.register_transport_dbg(this, &accelerator::funnel_transport_dbg);
    m_funnel.register_get_direct_mem_ptr(this, &accelerator::funnel_get_direct_mem_ptr);
    dma.register_invalidate_direct_mem_ptr(this, &accelerator::invalidate_direct_mem_ptr);

    m_regs.on_write(SYSTOLIC_REG_CTRL, [this](std::uint32_t v) { write_ctrl(v); });
    m_regs.on_write(SYSTOLIC_REG_IRQ_STATUS, [this](std::uint32_t) { update_irq(); });

    SC_THREAD(run);
    SC_METHOD(drive_irq);
    sensitive << m_irq_event;
    dont_initialize();
}

// SystemC finds a destroyed module by a linear search of one flat registry from its front and
// moves the registry's last module into the hole (systolic_array.h). Four arrays of N^2 PEs each
// torn down one after another would search past the older arrays for every PE of the newer ones
// (30 s at N = 256). So: the oldest PEs of the oldest array first, which opens holes near the
// front that the newest modules fill; then every module newest first, so that each one is found in
// one of those holes.
accelerator::~accelerator() {
    std::get<0>(m_lanes)->array->destroy_oldest_pes(64);
    reset_lanes_from<std::tuple_size_v<decltype(m_lanes)>>();
}

template <std::size_t I>
void accelerator::reset_lanes_from() {
    if constexpr (I > 0) {
        std::get<I - 1>(m_lanes).reset();
        reset_lanes_from<I - 1>();
    }
}

template <class F>
void accelerator::with_lane(dtype d, F&& f) {
    with_format(d, [&](auto format) { f(*std::get<std::unique_ptr<lane<decltype(format)>>>(m_lanes)); });
}

// ---- regs ------------------------------------------------------------------------------------------

tlm::tlm_response_status accelerator::check_access(const tlm::tlm_generic_payload& t,
                                                   std::uint64_t& offset) const {
    const std::uint64_t addr = t.get_address();
    if (addr < m_cfg.base || addr - m_cfg.base >= regmap::block_size) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    offset = addr - m_cfg.base;
    if (t.get_byte_enable_ptr() != nullptr) return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    if (t.get_data_length() != 4 || t.get_streaming_width() != 4) return tlm::TLM_BURST_ERROR_RESPONSE;
    if (offset % 4 != 0 || register_block::at(offset) == nullptr) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    return tlm::TLM_OK_RESPONSE;
}

void accelerator::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    std::uint64_t offset = 0;
    tlm::tlm_response_status st = check_access(t, offset);
    if (st == tlm::TLM_OK_RESPONSE) {
        if (t.is_read()) {
            std::uint32_t v = 0;
            m_regs.read(offset, v);
            std::memcpy(t.get_data_ptr(), &v, 4);
        } else if (t.is_write()) {
            std::uint32_t v;
            std::memcpy(&v, t.get_data_ptr(), 4);
            m_access_delay = delay;
            if (m_regs.write(offset, v) == register_block::result::command_error)
                st = tlm::TLM_COMMAND_ERROR_RESPONSE;
        }
    }
    t.set_response_status(st);
    delay += m_cfg.register_latency;
    if (st == tlm::TLM_OK_RESPONSE)
        m_log->trace("{}", txn_to_string(t));
    else
        m_log->debug("{}", txn_to_string(t));
}

// Debug reads of whole registers, without side effects (no register has a read side effect, and
// this path calls no hook). Debug writes are not supported: they return 0.
unsigned int accelerator::transport_dbg(tlm::tlm_generic_payload& t) {
    if (!t.is_read()) return 0;
    const std::uint64_t addr = t.get_address();
    const unsigned int len = t.get_data_length();
    if (addr < m_cfg.base || addr - m_cfg.base >= regmap::block_size || len % 4 != 0) return 0;
    const std::uint64_t offset = addr - m_cfg.base;
    if (offset % 4 != 0 || len > regmap::block_size - offset) return 0;
    for (unsigned int i = 0; i < len; i += 4) {
        std::uint32_t v = 0;  // holes read as zero
        m_regs.read(offset + i, v);
        std::memcpy(t.get_data_ptr() + i, &v, 4);
    }
    return len;
}

// Registers are never memory: refuse, naming the whole block (or just the address, outside it).
bool accelerator::get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
    const std::uint64_t addr = t.get_address();
    dmi.allow_none();
    if (addr >= m_cfg.base && addr - m_cfg.base < regmap::block_size) {
        dmi.set_start_address(m_cfg.base);
        dmi.set_end_address(m_cfg.base + regmap::block_size - 1);
    } else {
        dmi.set_start_address(addr);
        dmi.set_end_address(addr);
    }
    return false;
}

// ---- the funnel: every controller's traffic leaves through dma ------------------------------------

void accelerator::funnel_b_transport(int, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    dma->b_transport(t, delay);
    if (!t.is_response_ok() && !m_dma_failed) {
        m_dma_failed = true;
        m_dma_fail_address = t.get_address();
    }
}

unsigned int accelerator::funnel_transport_dbg(int, tlm::tlm_generic_payload& t) {
    return dma->transport_dbg(t);
}

bool accelerator::funnel_get_direct_mem_ptr(int, tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
    return dma->get_direct_mem_ptr(t, dmi);
}

void accelerator::invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
    for (unsigned int i = 0; i < m_funnel.size(); ++i)
        m_funnel[i]->invalidate_direct_mem_ptr(start, end);
}

// ---- register side effects ----------------------------------------------------------------------

void accelerator::write_ctrl(std::uint32_t value) {
    if (value & SYSTOLIC_CTRL_RESET) {
        soft_reset();
        return;
    }
    m_regs.set(SYSTOLIC_REG_CTRL, value & SYSTOLIC_CTRL_IRQ_EN);  // START reads as 0
    if (value & SYSTOLIC_CTRL_START) start();
    update_irq();
}

void accelerator::start() {
    if (m_busy) {
        refuse(error_code::busy, "START while a job is running");
        return;
    }
    decoded_job d =
        decode_job(read_request(m_regs), job_limits{m_cfg.array_size, m_cfg.max_job_bytes, m_cfg.memory});
    if (!d.ok()) {
        refuse(d.error, d.message);
        return;
    }
    d.job.run.engine = m_cfg.engine;
    d.job.run.count_actions = bool(m_cfg.price);
    m_pending = std::move(d);
    m_regs.set(SYSTOLIC_REG_ERROR, 0);
    for (const std::uint32_t r :
         {SYSTOLIC_REG_ERROR_ADDR_LO, SYSTOLIC_REG_EDGES_LO, SYSTOLIC_REG_MACS_LO, SYSTOLIC_REG_MACS_REAL_LO,
          SYSTOLIC_REG_CYCLES_LO, SYSTOLIC_REG_STALL_CYCLES_LO, SYSTOLIC_REG_PRELOAD_EDGES_LO,
          SYSTOLIC_REG_ENERGY_LO})
        m_regs.set64(r, 0);
    m_busy = true;
    m_done = false;
    m_dma_failed = false;
    // The job starts when the write does in the initiator's time (its annotated delay).
    m_start_time = sc_core::sc_time_stamp() + m_access_delay;
    // Before the simulation starts (a platform that programs the job in sc_main), run() finds the
    // job when it first runs; an event notified during elaboration would be lost.
    const auto status = sc_core::sc_get_status();
    if (status != sc_core::SC_ELABORATION && status != sc_core::SC_BEFORE_END_OF_ELABORATION)
        m_start_event.notify(m_access_delay);
    m_log->info("START: M={} K={} P={} dtype {}", m_pending.job.shape.m, m_pending.job.shape.k,
                m_pending.job.shape.p, to_string(m_pending.dtype));
    update_status();
}

void accelerator::refuse(error_code code, const std::string& message) {
    m_log->info("START refused (error {}): {}", static_cast<unsigned>(code), message);
    m_regs.set(SYSTOLIC_REG_ERROR, static_cast<std::uint32_t>(code));
    m_regs.set(SYSTOLIC_REG_IRQ_STATUS, m_regs.get(SYSTOLIC_REG_IRQ_STATUS) | SYSTOLIC_IRQ_ERROR);
    update_status();
    update_irq();
}

void accelerator::soft_reset() {
    m_log->info("soft reset{}", m_busy ? " while busy: stopping the job" : "");
    if (m_busy && !m_launched) {  // accepted but not yet handed to a controller
        m_start_event.cancel();
        m_busy = false;
    } else if (m_busy) {
        m_aborting = true;
        with_lane(m_pending.dtype, [](auto& l) { l.ctrl->abort(); });
    }
    m_regs.reset();
    m_done = false;
    update_status();
    update_irq();
}

void accelerator::update_status() {
    std::uint32_t s = 0;
    if (m_busy) s |= SYSTOLIC_STATUS_BUSY;
    if (m_done) s |= SYSTOLIC_STATUS_DONE;
    if (m_regs.get(SYSTOLIC_REG_ERROR) != 0) s |= SYSTOLIC_STATUS_ERROR;
    m_regs.set(SYSTOLIC_REG_STATUS, s);
}

// ---- processes ----------------------------------------------------------------------------------

void accelerator::drive_irq() {
    const bool level = (m_regs.get(SYSTOLIC_REG_CTRL) & SYSTOLIC_CTRL_IRQ_EN) &&
                       (m_regs.get(SYSTOLIC_REG_IRQ_STATUS) & (SYSTOLIC_IRQ_DONE | SYSTOLIC_IRQ_ERROR));
    irq.write(level);
}

void accelerator::run() {
    for (;;) {
        if (!m_busy) sc_core::wait(m_start_event);
        if (!m_busy) continue;  // a soft reset came between START and here
        m_launched = true;
        with_lane(m_pending.dtype, [this](auto& l) {
            try {
                l.ctrl->start(m_pending.job);
            } catch (const std::exception& e) {  // decode_job ran the same checks: a model defect
                job_result r;
                r.status = job_status::rejected;
                r.error = e.what();
                finish(r);
                return;
            }
            sc_core::wait(l.ctrl->done_event());
            finish(l.ctrl->result());
        });
    }
}

// The job's energy in whole pJ for ENERGY: what the configured pricing gives for its counts, the
// same counts the job's result holds (a failed job's, as far as it went), like the other counters.
std::uint64_t accelerator::energy_of(const job_result& r) const {
    if (!m_cfg.price) return 0;
    try {
        const double pj = m_cfg.price(m_pending.job, r.actions);
        return pj > 0 ? static_cast<std::uint64_t>(std::llround(pj)) : 0;
    } catch (const std::exception& e) {  // a table that prices no such format, say: no energy
        m_log->warn("ENERGY left at 0: {}", e.what());
        return 0;
    }
}

void accelerator::finish(const job_result& r) {
    m_launched = false;
    m_busy = false;
    m_last = r;
    if (m_aborting) {  // a soft reset came first: the registers are already at reset values
        m_aborting = false;
        m_log->info("job stopped after soft reset ({})", r.error);
        update_status();
        if (m_on_job_end) m_on_job_end();
        return;
    }
    m_regs.set64(SYSTOLIC_REG_EDGES_LO, r.advance_edges);
    m_regs.set64(SYSTOLIC_REG_PRELOAD_EDGES_LO, r.preload_edges);
    m_regs.set64(SYSTOLIC_REG_MACS_LO, r.macs_padded);
    m_regs.set64(SYSTOLIC_REG_MACS_REAL_LO, r.macs_real);
    const sc_core::sc_time took = sc_core::sc_time_stamp() - m_start_time;
    m_regs.set64(SYSTOLIC_REG_CYCLES_LO, static_cast<std::uint64_t>(took / m_cfg.clock_period + 0.5));
    m_regs.set64(SYSTOLIC_REG_STALL_CYCLES_LO, r.memory.stall_cycles);
    m_regs.set64(SYSTOLIC_REG_ENERGY_LO, energy_of(r));
    std::uint32_t cause = SYSTOLIC_IRQ_DONE;
    if (r.completed()) {
        m_done = true;
        m_log->info("job done: {} advance edges, {} MACs", r.advance_edges, r.macs_padded);
    } else {
        const error_code e = r.status == job_status::bus_error ? error_code::dma : error_code::internal;
        m_regs.set(SYSTOLIC_REG_ERROR, static_cast<std::uint32_t>(e));
        if (e == error_code::dma) m_regs.set64(SYSTOLIC_REG_ERROR_ADDR_LO, m_dma_fail_address);
        cause = SYSTOLIC_IRQ_ERROR;
        m_log->warn("job failed: {}", r.error);
    }
    m_regs.set(SYSTOLIC_REG_IRQ_STATUS, m_regs.get(SYSTOLIC_REG_IRQ_STATUS) | cause);
    update_status();
    if (m_on_job_end) m_on_job_end();
    update_irq();
}

}  // namespace systolic
