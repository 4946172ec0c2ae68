// The tile controller: runs a matmul_job on a systolic_array. Its thread walks the tile plan
// (tile_plan.h) and hands each step to the part that owns it:
//   clear   -> the engine (engine.h: cycle_engine steps the array, functional_engine computes)
//   load    -> the DMA port (dma_port.h) fills the feeder (feeder.h) with the tile's operands
//   advance -> the engine, over the feeder's skewed token streams, then the watchdog
//   drain   -> the output stage (output_stage.h): mask, partial sums, requantization, via the DMA port
// Time: one clock per clear and per advance edge, plus the latencies the targets annotate, kept
// by a TLM quantum keeper. The controller is the thin SystemC shell around those plain C++ parts:
// the socket, the thread, the time, the report and the optional edge observer and fault hooks.
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>
#include <algorithm>
#include <cstdint>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <systemc>
#include <tlm>

#include "systolic/dma_port.h"
#include "systolic/edge_observer.h"
#include "systolic/engine.h"
#include "systolic/fault_hooks.h"
#include "systolic/feeder.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/log.h"
#include "systolic/output_stage.h"
#include "systolic/systolic_array.h"
#include "systolic/tile_plan.h"

namespace systolic {

template <class Format>
class tile_controller : public sc_core::sc_module {
public:
    // What the controller drives: a systolic_array, or a fabric of arrays.
    using array_type = engine_host<Format>;
    using engine_type = engine<Format>;

    struct config {
        sc_core::sc_time clock_period = sc_core::sc_time(1, sc_core::SC_NS);
        // How many stuck PEs a watchdog message names before it says "and N more".
        std::size_t watchdog_names = 8;
        dma_port::config dma{};
    };

    tlm_utils::simple_initiator_socket<tile_controller> initiator_socket;

    SC_HAS_PROCESS(tile_controller);

    tile_controller(const sc_core::sc_module_name& name, array_type& array, const config& cfg = config{})
        : sc_core::sc_module(name),
          initiator_socket("initiator_socket"),
          m_array(array),
          m_cfg(cfg),
          m_log(get_logger(this->name())),
          m_dma(m_qk, m_log, cfg.dma),
          m_feeder(array.rows(), array.cols()),
          m_output(array.cols()) {
        initiator_socket.register_invalidate_direct_mem_ptr(this,
                                                            &tile_controller::invalidate_direct_mem_ptr);
        SC_THREAD(run);
    }

    ~tile_controller() override { unregister_local_time(&m_qk); }

    // Queues a job; it starts at the next delta cycle (or when the simulation starts). Throws
    // std::invalid_argument for a malformed job and std::logic_error while another job runs.
    void start(const matmul_job& job) {
        if (m_busy) throw std::logic_error(std::string(name()) + ": start() while a job is running");
        const auto err = validate_job(job, sizeof(typename Format::operand_type),
                                      sizeof(typename Format::accumulator_type));
        if (!err.empty()) throw std::invalid_argument(err);
        m_array.engine_for(job.engine);  // throws for an engine the array does not have
        m_job = job;
        m_busy = true;
        m_abort = false;
        m_result = job_result{};
        m_result.status = job_status::running;
        m_result.engine = job.engine;
        if (sc_core::sc_get_status() != sc_core::SC_ELABORATION &&
            sc_core::sc_get_status() != sc_core::SC_BEFORE_END_OF_ELABORATION) {
            m_start_event.notify(sc_core::SC_ZERO_TIME);
        }
    }

    // Ends the running (or queued) job before its next plan step, so at most one K chunk later, with
    // job_status::aborted; done_event() follows as for any other end. No effect when idle.
    void abort() { m_abort = m_busy; }

    // Called after every advance edge of the cycle engine, at each step's begin and end, and for
    // every DMA transfer (null: none). Not owned.
    void set_observer(edge_observer<Format>* observer) {
        m_observer = observer;
        m_dma.set_listener(observer);
    }
    // Known defects to plant in the jobs that follow (testbench use only; null: none). Not owned.
    void set_fault_hooks(fault_hooks<Format>* hooks) { m_hooks = hooks ? hooks : &m_no_hooks; }

    bool busy() const { return m_busy; }
    const job_result& result() const { return m_result; }
    const sc_core::sc_event& done_event() const { return m_done_event; }
    const config& cfg() const { return m_cfg; }
    const dma_port& dma() const { return m_dma; }

private:
    // Thrown inside run_job to end the job with an error status.
    struct job_failure {
        job_status status;
        std::string message;
    };

    void run() {
        register_local_time(&m_qk);
        m_dma.bind(*initiator_socket.operator->());
        for (;;) {
            while (!m_busy)
                sc_core::wait(m_start_event);
            m_qk.reset();
            m_result.start = sc_core::sc_time_stamp();
            if (m_observer) m_observer->on_job_begin(m_job, m_result.start);
            const memory_traffic traffic_before = m_dma.traffic();
            try {
                run_job();
                m_result.status = job_status::completed;
            } catch (const job_failure& f) {
                m_result.status = f.status;
                m_result.error = f.message;
                if (f.status == job_status::aborted)
                    m_log->info("{}", f.message);
                else
                    m_log->error("{}", f.message);
            }
            m_qk.sync();
            m_result.traffic = m_dma.traffic() - traffic_before;
            m_result.end = sc_core::sc_time_stamp();
            if (m_observer) m_observer->on_job_end(m_result);
            m_busy = false;
            m_done_event.notify(sc_core::SC_ZERO_TIME);
        }
    }

    void run_job() {
        engine_type& eng = m_array.engine_for(m_job.engine);
        const tile_plan plan(m_job, m_array.rows(), m_array.cols(),
                             [&eng](const tile& t, std::uint64_t kc) { return eng.advance_edges(t, kc); });
        eng.set_overflow(m_job.overflow);
        m_result.k_chunks = plan.chunks();
        m_log->info("job M={} K={} P={} on {}x{} array, {} engine: {} tiles, {} chunk(s), order {}",
                    m_job.shape.m, m_job.shape.k, m_job.shape.p, plan.rows(), plan.cols(),
                    to_string(m_job.engine), plan.tiles().size(), plan.chunks(), to_string(m_job.order));
        for (const plan_step s : plan) {
            if (m_abort)
                throw job_failure{job_status::aborted,
                                  std::string("job aborted before ") + to_string(s.kind)};
            switch (s.kind) {
                case step_kind::clear:
                    if (s.chunk == 0) begin_tile(*s.where);
                    timed(s, eng, m_result.phases.clear, [&] { clear(eng); });
                    break;
                case step_kind::load:
                    timed(s, eng, m_result.phases.load, [&] { load(s); });
                    break;
                case step_kind::advance:
                    timed(s, eng, m_result.phases.advance, [&] { advance(s, eng); });
                    break;
                case step_kind::drain:
                    timed(s, eng, m_result.phases.drain, [&] { drain(s, eng); });
                    break;
                case step_kind::stall:  // never in a plan
                    break;
            }
        }
    }

    // A tile's first step: its report entry (a tile that fails still shows what it did) and its
    // feed tables.
    void begin_tile(const tile& t) {
        m_log->debug("tile {} origin ({},{}) {}x{} real", t.index, t.r0, t.c0, t.rows, t.cols);
        m_result.tiles.push_back(tile_report{});
        m_result.tiles.back().where = t;
        m_feeder.plan(t);
        m_hooks->feed(t, m_feeder.tables());
    }

    void clear(engine_type& eng) {
        eng.clear();
        m_qk.inc(m_cfg.clock_period);
        sync_if_needed();
    }

    // Terms k0 .. k0 + kc - 1 of the tile's real A rows and B columns into the feeder; padding rows
    // and columns stay zero and enter the array as valid zero tokens.
    void load(const plan_step& s) {
        const tile& t = *s.where;
        using operand_type = typename Format::operand_type;
        constexpr std::uint64_t osz = sizeof(operand_type);
        m_feeder.begin_chunk(s.kc);
        check(m_dma.read_block(m_job.a.address(t.r0, s.k0), t.rows, s.kc * osz, m_job.a.row_stride,
                               m_feeder.a_row(0), s.kc * osz, "A"));
        check(m_dma.read_block(m_job.b.address(s.k0, t.c0), s.kc, t.cols * osz, m_job.b.row_stride,
                               m_feeder.b_row(0), m_array.cols() * osz, "B"));
    }

    // The chunk's advance edges, in slices of at most one quantum so that other processes run on
    // time, then the watchdog. The counters are read from the engine: what it counted.
    void advance(const plan_step& s, engine_type& eng) {
        const tile& t = *s.where;
        if (!s.fresh) m_hooks->continue_chunk(s, eng);
        const std::uint64_t edges = m_hooks->edges(s, s.edges);
        const std::uint64_t edges_before = eng.edges(), macs_before = eng.macs(),
                            real_before = eng.macs_in(t.rows, t.cols);
        edge_relay relay{*this, s, now(), eng};
        edge_callback* after = m_observer && m_observer->wants_edges() && eng.array() ? &relay : nullptr;
        const std::uint64_t slice =
            std::max<std::uint64_t>(1, tlm::tlm_global_quantum::instance().get() / m_cfg.clock_period);
        for (std::uint64_t e = 0; e < edges;) {
            const std::uint64_t count = std::min(slice, edges - e);
            eng.advance(m_feeder, t, e, count, after);
            m_qk.inc(m_cfg.clock_period * double(count));
            sync_if_needed();
            e += count;
        }
        tile_report& rep = m_result.tiles.back();
        const std::uint64_t counted = eng.edges() - edges_before;
        const std::uint64_t macs = eng.macs() - macs_before, real = eng.macs_in(t.rows, t.cols) - real_before;
        rep.advance_edges_per_chunk.push_back(counted);
        rep.advance_edges += counted;
        rep.macs_padded += macs;
        rep.macs_real += real;
        m_result.advance_edges += counted;
        m_result.macs_padded += macs;
        m_result.macs_real += real;
        watchdog(s, eng, counted);
    }

    void drain(const plan_step& s, engine_type& eng) {
        const tile& t = *s.where;
        std::size_t rows = t.rows, cols = t.cols;
        m_hooks->drain_block(s, m_array.rows(), m_array.cols(), rows, cols);
        m_result.overflows += eng.overflows_in(t.rows, t.cols);
        drain_counts d;
        const dma_status st = m_output.drain(m_job, s, eng.accumulators(), rows, cols, m_dma, d);
        tile_report& rep = m_result.tiles.back();
        rep.real_outputs += d.real_outputs;
        m_result.partial_overflows += d.partial_overflows;
        m_result.saturated_outputs += d.saturated_outputs;
        check(st);
        if (s.last_chunk) {
            rep.masked_outputs = m_array.rows() * m_array.cols() - rep.real_outputs;
            m_result.real_outputs += rep.real_outputs;
            m_result.masked_outputs += rep.masked_outputs;
        }
    }

    // A chunk may drain only once every PE has consumed all the terms so far.
    void watchdog(const plan_step& s, const engine_type& eng, std::uint64_t edges) {
        if (eng.complete(s.terms)) return;
        const tile& t = *s.where;
        const auto stuck = eng.stuck(s.terms);
        std::ostringstream os;
        os << "watchdog: tile " << t.index << " at origin (" << t.r0 << "," << t.c0 << ")";
        if (m_job.chunks() > 1) os << " chunk " << s.chunk;
        os << " did not complete within " << edges << " advance edges: ";
        for (std::size_t i = 0; i < stuck.size() && i < m_cfg.watchdog_names; ++i) {
            os << (i ? ", " : "") << m_array.pe_name(stuck[i]) << " consumed " << stuck[i].consumed << " of "
               << s.terms << " terms";
        }
        if (stuck.size() > m_cfg.watchdog_names)
            os << " (and " << stuck.size() - m_cfg.watchdog_names << " more)";
        throw job_failure{job_status::watchdog, os.str()};
    }

    // Tells the observer about each edge, stamped with the controller's own time.
    struct edge_relay final : edge_callback {
        edge_relay(tile_controller& c, const plan_step& s, sc_core::sc_time t0, const engine_type& e)
            : ctrl(c), step(s), start(t0), eng(e) {}
        void after_edge(std::uint64_t edge) override {
            ctrl.m_observer->on_edge(
                edge_event<Format>{step, edge, start + ctrl.m_cfg.clock_period * double(edge), *eng.array()});
        }
        tile_controller& ctrl;
        const plan_step& step;
        sc_core::sc_time start;
        const engine_type& eng;
    };

    void check(const dma_status& st) {
        if (!st.ok()) throw job_failure{job_status::bus_error, st.message};
    }

    sc_core::sc_time now() const { return sc_core::sc_time_stamp() + m_qk.get_local_time(); }

    void sync_if_needed() {
        if (m_qk.need_sync()) m_qk.sync();
    }

    // Runs one step, adds its time to its phase (also when the step ends the job by throwing, so
    // that the phases always add up to the job's time) and tells the observer where it began and
    // ended.
    template <class F>
    void timed(const plan_step& s, const engine_type& eng, sc_core::sc_time& phase, F&& body) {
        const sc_core::sc_time mark = now();
        if (m_observer) m_observer->on_step_begin(step_event<Format>{s, mark, eng.array()});
        struct add_on_exit {
            tile_controller& self;
            sc_core::sc_time& phase;
            sc_core::sc_time mark;
            ~add_on_exit() { phase += self.now() - mark; }
        } guard{*this, phase, mark};
        body();
        if (m_observer) m_observer->on_step_end(step_event<Format>{s, now(), eng.array()});
    }

    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) { m_dma.invalidate(start, end); }

    array_type& m_array;
    config m_cfg;
    std::shared_ptr<spdlog::logger> m_log;
    tlm_utils::tlm_quantumkeeper m_qk;
    dma_port m_dma;
    feeder<Format> m_feeder;
    output_stage<Format> m_output;
    fault_hooks<Format> m_no_hooks;
    fault_hooks<Format>* m_hooks = &m_no_hooks;
    edge_observer<Format>* m_observer = nullptr;

    matmul_job m_job;
    job_result m_result;
    bool m_busy = false;
    bool m_abort = false;
    sc_core::sc_event m_start_event;
    sc_core::sc_event m_done_event;
};

SYSTOLIC_EXTERN_TEMPLATE(tile_controller)

}  // namespace systolic
