// The tile controller: runs a matmul_job on a systolic_array. Its thread walks the tile plan
// (tile_plan.h) and hands each step to the part that owns it:
//   clear   -> the engine (engine.h: cycle_engine steps the array, functional_engine computes)
//   load    -> the DMA port (dma_port.h) fills the feeder (feeder.h) with the tile's operands
//   advance -> the engine, over the feeder's skewed token streams, then the watchdog
//   drain   -> the output stage (output_stage.h): mask, partial sums, requantization, via the DMA port
// Weight and input stationary (docs/dataflows.md) load a fold's stationary block and stream into
// the controller's fold buffers, preload and stream them on the engine into the tile's
// accumulators (the C scratchpad of T x C outputs), and drain those after the last fold.
// Time: one clock per clear and per advance edge, plus the latencies the targets annotate, kept
// by a TLM quantum keeper. With buffers double (memory_system.h, docs/memory.md) the keeper is the
// array's time only: the DMA port's transfers go into the scratchpads ahead of use, timed on the
// DRAM channel's own clock (memory_timeline: stepped with the cycle engine, by event rules with the
// functional one), and the array waits (a stall step) when they are late.
// The controller is the thin SystemC shell around those plain C++ parts: the socket, the thread,
// the time, the report and the optional edge observer and fault hooks.
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <systemc>
#include <tlm>

#include "systolic/aligned_vector.h"
#include "systolic/dma_port.h"
#include "systolic/edge_observer.h"
#include "systolic/engine.h"
#include "systolic/fault_hooks.h"
#include "systolic/feeder.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/log.h"
#include "systolic/memory_system.h"
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
    using accumulator_type = typename Format::accumulator_type;

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
        const auto mem_err =
            check_memory(job.run.memory, job, m_array.rows(), m_array.cols(),
                         sizeof(typename Format::operand_type), sizeof(typename Format::accumulator_type));
        if (!mem_err.empty()) throw std::invalid_argument(mem_err);
        if (!m_array.engine_for(job.run.engine).supports(job.run.dataflow))  // throws for a missing engine
            throw std::invalid_argument(std::string(name()) + ": this array runs dataflow os only, not " +
                                        to_string(job.run.dataflow));
        m_job = job;
        m_busy = true;
        m_abort = false;
        m_result = job_result{};
        m_result.status = job_status::running;
        m_result.engine = job.run.engine;
        m_result.dataflow = job.run.dataflow;
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

    using fold_type = typename engine_type::fold_type;

    // What a stationary fold reads: A at a and B at b, their rows a_stride and b_stride apart.
    struct fold_operands {
        const typename Format::operand_type* a;
        std::size_t a_stride;
        const typename Format::operand_type* b;
        std::size_t b_stride;
    };
    // What a drain step writes out: the tile's rows x cols outputs at acc, their rows stride apart,
    // and the PE results (slots) the mask chooses them from.
    struct drained_block {
        const accumulator_type* acc;
        std::size_t stride;
        std::size_t rows, cols;
        std::uint64_t slots;
    };

    // The job's dataflow (docs/dataflows.md), chosen once when the job starts: what a tile's load,
    // advance and drain steps do on the engine. Output stationary feeds chunks through the feeder
    // into the PEs' accumulators; weight and input stationary load, preload and stream folds into
    // the tile's accumulators, which the controller holds. No step asks which dataflow runs.
    class mapping {
    public:
        virtual void begin_tile(const tile&) {}
        virtual void load(const plan_step& s, engine_type& eng) = 0;
        virtual void advance(const plan_step& s, engine_type& eng, std::size_t step) = 0;
        virtual drained_block drained(const plan_step& s, engine_type& eng) = 0;

    protected:
        ~mapping() = default;
    };

    // The job's buffer mode (docs/memory.md), chosen once when the job starts: how the operands
    // reach the array and the outputs leave it. Buffers none moves them over the bus on the
    // keeper's time; buffers double reads them into the scratchpads ahead of use on the DRAM
    // channel's clock, which the array's edges step, and the array waits (stall steps) when they
    // are late. The defaults are buffers none's: nothing to wait for, no channel to step.
    class buffers {
    public:
        virtual void load(const plan_step& s, const engine_type& eng) = 0;  // an os chunk, into the feeder
        virtual fold_operands load_fold(const plan_step& s) = 0;
        // Before a step that a unit of the buffer plan starts (step: its index in the plan).
        virtual void start_unit(const plan_step&, engine_type&, std::size_t /*step*/) {}
        // The edge of an advance step where its next unit begins, or `edges` when none does.
        virtual std::uint64_t next_boundary(std::size_t /*step*/, std::uint64_t edges) const { return edges; }
        virtual void cleared() {}                          // a clear edge
        virtual void advanced(std::uint64_t /*edges*/) {}  // the array's edges since the last call
        virtual void before_drain(const plan_step&, engine_type&) {}
        virtual dma_status write(const plan_step& s, const drained_block& b, drain_counts& d) = 0;
        virtual void finish() {}  // after the job's last step
        virtual void report(memory_report& r) = 0;

    protected:
        ~buffers() = default;
    };

    struct buffers_none final : buffers {
        explicit buffers_none(tile_controller& c) : ctrl(c) {}
        void load(const plan_step& s, const engine_type&) override { ctrl.load(s); }
        fold_operands load_fold(const plan_step& s) override { return ctrl.load_fold(s); }
        dma_status write(const plan_step& s, const drained_block& b, drain_counts& d) override {
            return ctrl.write_unbuffered(s, b, d);
        }
        void report(memory_report& r) override { ctrl.report_unbuffered(r); }
        tile_controller& ctrl;
    };

    struct buffers_double final : buffers {
        explicit buffers_double(tile_controller& c) : ctrl(c) {}
        void load(const plan_step& s, const engine_type& eng) override { ctrl.load_buffered(s, eng); }
        fold_operands load_fold(const plan_step& s) override { return ctrl.load_fold_buffered(s); }
        void start_unit(const plan_step& s, engine_type& eng, std::size_t step) override {
            ctrl.start_unit(s, eng, step);
        }
        std::uint64_t next_boundary(std::size_t step, std::uint64_t edges) const override {
            return ctrl.next_boundary(step, edges);
        }
        void cleared() override { ctrl.m_mem.clear(1); }
        void advanced(std::uint64_t edges) override { ctrl.m_mem.advance(edges); }
        void before_drain(const plan_step& s, engine_type& eng) override { ctrl.wait_room(s, eng); }
        dma_status write(const plan_step& s, const drained_block& b, drain_counts& d) override {
            return ctrl.write_buffered(s, b, d);
        }
        void finish() override { ctrl.finish_buffers(); }
        void report(memory_report& r) override { ctrl.report_buffers(r); }
        tile_controller& ctrl;
    };

    // Output stationary: a chunk's operands into the feeder, its advance edges through the PEs,
    // whose R x C accumulators hold the tile's outputs.
    struct os_mapping final : mapping {
        explicit os_mapping(tile_controller& c) : ctrl(c) {}
        void load(const plan_step& s, engine_type& eng) override { ctrl.m_buffers->load(s, eng); }
        void advance(const plan_step& s, engine_type& eng, std::size_t step) override {
            ctrl.m_buffers->start_unit(s, eng, step);
            ctrl.timed_less_stalls(s, eng, ctrl.m_result.phases.advance, [&] { ctrl.advance(s, eng, step); });
        }
        drained_block drained(const plan_step& s, engine_type& eng) override {
            const tile& t = *s.where;
            const std::size_t rows = ctrl.m_array.rows(), cols = ctrl.m_array.cols();
            drained_block b{eng.accumulators(), cols, t.rows, t.cols, rows * cols};
            ctrl.m_hooks->drain_block(s, rows, cols, b.rows, b.cols);
            ctrl.m_result.overflows += eng.overflows_in(t.rows, t.cols);
            return b;
        }
        tile_controller& ctrl;
    };

    // Weight stationary (DF ws) streams the L terms of every row of A through an L x n block of B;
    // input stationary (DF is) streams the L x P rows of B through an n x L block of A, on
    // transposed views. One type per dataflow, so the views are fixed when it compiles.
    template <dataflow_kind DF>
    struct stationary_mapping final : mapping {
        static constexpr bool ws = DF == dataflow_kind::ws;
        explicit stationary_mapping(tile_controller& c) : ctrl(c) {}
        // The stream's length T, and a tile's stationary columns n.
        std::uint64_t stream_length() const { return ws ? ctrl.m_job.shape.m : ctrl.m_job.shape.p; }
        std::size_t stationary_cols(const tile& t) const { return ws ? t.cols : t.rows; }

        void begin_tile(const tile&) override {
            ctrl.m_fold_acc.resize(stream_length() * ctrl.m_array.cols());
        }
        void load(const plan_step& s, engine_type&) override { set_fold(s, ctrl.m_buffers->load_fold(s)); }
        void advance(const plan_step& s, engine_type& eng, std::size_t) override {
            ctrl.timed(s, eng, ctrl.m_result.phases.advance, [&] { ctrl.advance_fold(s, eng); });
        }
        drained_block drained(const plan_step& s, engine_type& eng) override {
            // The tile's T x C accumulators: ws has T = M rows of C, is C rows of T = P.
            const tile& t = *s.where;
            const std::size_t cols = ctrl.m_array.cols();
            drained_block b{ctrl.m_fold_acc.data(), ws ? cols : stream_length(), t.rows, t.cols,
                            stream_length() * cols};
            ctrl.m_hooks->drain_block(s, ws ? t.rows : cols, ws ? cols : t.cols, b.rows, b.cols);
            ctrl.m_result.overflows += eng.overflows_in(ctrl.m_array.rows(), stationary_cols(t));
            ctrl.m_result.partial_overflows += eng.partial_overflows();
            return b;
        }

        // The fold over A(t.r0, k0) and B(k0, t.c0).
        void set_fold(const plan_step& s, const fold_operands& o) {
            fold_type& f = ctrl.m_fold;
            f = fold_type{};
            f.t = stream_length();
            f.l = s.kc;
            f.n = stationary_cols(*s.where);
            f.combine = !s.fresh;
            f.acc = ctrl.m_fold_acc.data();
            if constexpr (ws) {  // s(m, i) = A(m, k0 + i), w(i, j) = B(k0 + i, c0 + j)
                f.stream = o.a, f.stream_t = o.a_stride, f.stream_i = 1;
                f.weight = o.b, f.weight_i = o.b_stride, f.weight_j = 1;
                f.acc_t = ctrl.m_array.cols(), f.acc_j = 1;
            } else {  // s(p, i) = B(k0 + i, p), w(i, j) = A(r0 + j, k0 + i)
                f.stream = o.b, f.stream_t = 1, f.stream_i = o.b_stride;
                f.weight = o.a, f.weight_i = 1, f.weight_j = o.a_stride;
                f.acc_t = 1, f.acc_j = stream_length();
            }
        }
        tile_controller& ctrl;
    };

    mapping* mapping_for(dataflow_kind df) {
        switch (df) {
            case dataflow_kind::ws:
                return &m_ws;
            case dataflow_kind::is:
                return &m_is;
            case dataflow_kind::os:
                break;
        }
        return &m_os;
    }

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
            m_dma.defer_timing(nullptr);
            m_qk.sync();
            m_result.traffic = m_dma.traffic() - traffic_before;
            m_result.end = sc_core::sc_time_stamp();
            report_memory();
            report_actions();
            if (m_observer) m_observer->on_job_end(m_result);
            m_busy = false;
            m_done_event.notify(sc_core::SC_ZERO_TIME);
        }
    }

    void run_job() {
        engine_type& eng = m_array.engine_for(m_job.run.engine);
        eng.set_dataflow(m_job.run.dataflow);
        eng.count_actions(m_job.run.count_actions, m_job.run.dataflow);
        m_mapping = mapping_for(m_job.run.dataflow);
        const tile_plan plan(m_job, m_array.rows(), m_array.cols(),
                             [&eng](const tile& t, std::uint64_t kc) { return eng.advance_edges(t, kc); });
        eng.set_overflow(m_job.run.overflow);
        m_result.k_chunks = plan.chunks();
        const bool buffered = m_job.run.memory.buffers == buffer_mode::double_buffered;
        m_buffers = buffered ? static_cast<buffers*>(&m_buffers_double) : &m_buffers_none;
        m_dma.set_bandwidth(buffered ? 0 : m_job.run.memory.dram_bandwidth, m_cfg.clock_period);
        m_first_load = true;
        m_tile_mark = now();
        m_tile_mark_bytes = 0;
        m_peak_none = 0;
        if (buffered) begin_buffers(plan);
        m_log->info(
            "job M={} K={} P={} on {}x{} array, {} engine, dataflow {}: {} tiles, {} chunk(s), order {}",
            m_job.shape.m, m_job.shape.k, m_job.shape.p, plan.rows(), plan.cols(),
            to_string(m_job.run.engine), to_string(m_job.run.dataflow), plan.tiles().size(), plan.chunks(),
            to_string(m_job.run.order));
        for (std::size_t i = 0; i < plan.size(); ++i) {
            const plan_step s = plan[i];
            if (m_abort)
                throw job_failure{job_status::aborted,
                                  std::string("job aborted before ") + to_string(s.kind)};
            switch (s.kind) {
                case step_kind::clear:
                    if (s.chunk == 0) begin_tile(*s.where);
                    timed(s, eng, m_result.phases.clear, [&] { clear(eng); });
                    break;
                case step_kind::load:
                    timed(s, eng, m_result.phases.load, [&] { m_mapping->load(s, eng); });
                    break;
                case step_kind::preload:
                    timed_less_stalls(s, eng, m_result.phases.preload, [&] { preload(s, eng, i); });
                    break;
                case step_kind::advance:
                    m_mapping->advance(s, eng, i);
                    break;
                case step_kind::drain:
                    m_buffers->before_drain(s, eng);
                    timed(s, eng, m_result.phases.drain, [&] {
                        drain(s, eng);
                        if (i + 1 == plan.size()) m_buffers->finish();
                    });
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
        close_tile_window();
        m_result.tiles.push_back(tile_report{});
        m_result.tiles.back().where = t;
        m_feeder.plan(t);
        m_hooks->feed(t, m_feeder.tables());
        m_mapping->begin_tile(t);
    }

    // A fold's operands are the tile's A rows and B columns over the fold's terms, as for os: ws
    // streams the L terms of every row of A through the L x n block of B, is streams the L x P
    // rows of B through the n x L block of A. Buffers none reads them into the fold buffers; buffers
    // double reads them where the scratchpads hold them. Neither copies in transposed order: the
    // fold's views (stationary_mapping::set_fold) do the transposing.
    fold_operands load_fold(const plan_step& s) {
        const tile& t = *s.where;
        using operand_type = typename Format::operand_type;
        constexpr std::uint64_t osz = sizeof(operand_type);
        const sc_core::sc_time mark = now();
        m_fold_a.resize(t.rows * s.kc);
        m_fold_b.resize(s.kc * t.cols);
        check(m_dma.read_block(m_job.a.address(t.r0, s.k0), t.rows, s.kc * osz, m_job.a.row_stride,
                               m_fold_a.data(), s.kc * osz, dma_stream::a));
        check(m_dma.read_block(m_job.b.address(s.k0, t.c0), s.kc, t.cols * osz, m_job.b.row_stride,
                               m_fold_b.data(), t.cols * osz, dma_stream::b));
        if (m_first_load) m_prefetch_none = cycles(now() - mark);
        m_first_load = false;
        return {m_fold_a.data(), s.kc, m_fold_b.data(), t.cols};
    }
    fold_operands load_fold_buffered(const plan_step& s) {
        const tile& t = *s.where;
        const std::uint64_t k = m_job.shape.k, p = m_job.shape.p;
        if (m_first_load) stall_for(m_mem.wait_operands());
        m_first_load = false;
        return {&m_a_pad[t.r0 * k + s.k0], k, &m_b_pad[s.k0 * p + t.c0], p};
    }

    // The fold's stationary block into the PEs, R edges.
    // Buffers double: the fold's unit starts here, so the array waits for its blocks before the
    // preload (plan step + 1 is the fold's advance, where plan_buffers put its unit).
    void preload(const plan_step& s, engine_type& eng, std::size_t step) {
        m_buffers->start_unit(s, eng, step + 1);
        const std::uint64_t edges = m_hooks->edges(s, s.edges);
        const std::uint64_t before = eng.edges();
        edge_relay relay{*this, s, now(), eng};
        eng.preload(m_fold, 0, edges, observed(eng) ? &relay : nullptr);
        m_qk.inc(m_cfg.clock_period * double(edges));
        sync_if_needed();
        m_preloaded = edges;
        const std::uint64_t counted = eng.edges() - before;
        m_result.tiles.back().preload_edges += counted;
        m_result.preload_edges += counted;
    }

    // The fold's stream edges, in slices of at most one quantum, then the watchdog: every PE must
    // have consumed T terms per fold so far.
    void advance_fold(const plan_step& s, engine_type& eng) {
        const std::uint64_t edges = m_hooks->edges(s, s.edges);
        const std::size_t n = m_fold.n;  // the tile's stationary columns
        const std::uint64_t edges_before = eng.edges(), macs_before = eng.macs(),
                            real_before = eng.macs_in(s.kc, n);
        edge_relay relay{*this, s, now(), eng};
        edge_callback* after = observed(eng) ? &relay : nullptr;
        const std::uint64_t slice =
            std::max<std::uint64_t>(1, tlm::tlm_global_quantum::instance().get() / m_cfg.clock_period);
        for (std::uint64_t e = 0; e < edges;) {
            const std::uint64_t count = std::min(slice, edges - e);
            eng.stream(m_fold, e, count, after);
            m_qk.inc(m_cfg.clock_period * double(count));
            sync_if_needed();
            e += count;
        }
        // The preload and the stream are one window of the array's work for the channel: the
        // next fold's blocks, issued as the preload began, arrive over both.
        m_buffers->advanced(m_preloaded + edges);
        count_advance(eng, edges_before, macs_before, eng.macs_in(s.kc, n) - real_before);
        watchdog(s, eng, eng.edges() - edges_before);
    }

    void clear(engine_type& eng) {
        eng.clear();
        m_qk.inc(m_cfg.clock_period);
        m_buffers->cleared();
        sync_if_needed();
    }

    // Terms k0 .. k0 + kc - 1 of the tile's real A rows and B columns into the feeder; padding rows
    // and columns stay zero and enter the array as valid zero tokens.
    void load(const plan_step& s) {
        const tile& t = *s.where;
        using operand_type = typename Format::operand_type;
        constexpr std::uint64_t osz = sizeof(operand_type);
        const sc_core::sc_time mark = now();
        m_feeder.begin_chunk(s.kc, t.rows, t.cols);
        m_fed_a.reset();
        check(m_dma.read_block(m_job.a.address(t.r0, s.k0), t.rows, s.kc * osz, m_job.a.row_stride,
                               m_feeder.a_row(0), s.kc * osz, dma_stream::a));
        check(m_dma.read_block(m_job.b.address(s.k0, t.c0), s.kc, t.cols * osz, m_job.b.row_stride,
                               m_feeder.b_row(0), m_array.cols() * osz, dma_stream::b));
        if (m_first_load) m_prefetch_none = cycles(now() - mark);
        m_first_load = false;
    }

    // Buffers double: the chunk's operands come from the scratchpads, where the DRAM reads put them
    // ahead of time; the first load of the job waits for them (the prefetch).
    void load_buffered(const plan_step& s, const engine_type& eng) {
        const tile& t = *s.where;
        const std::uint64_t k = m_job.shape.k, p = m_job.shape.p;
        if (!eng.reads_padding()) {  // the engine reads the block in the scratchpads
            m_feeder.view_chunk(s.kc, &m_a_pad[t.r0 * k + s.k0], k, &m_b_pad[s.k0 * p + t.c0], p);
            m_fed_a.reset();
        } else {
            copy_to_feeder(s);
        }
        if (m_first_load) stall_for(m_mem.wait_operands());
        m_first_load = false;
    }

    // The chunk's real block from the scratchpads into the feeder's own buffers, the padding zero,
    // for an engine that steps the padding PEs too.
    void copy_to_feeder(const plan_step& s) {
        const tile& t = *s.where;
        constexpr std::uint64_t osz = sizeof(typename Format::operand_type);
        const std::uint64_t k = m_job.shape.k, p = m_job.shape.p;
        m_feeder.begin_chunk(s.kc, t.rows, t.cols);
        // Along a row of tiles the feeder still holds this A block from the tile before: the
        // array reads it again (the counters say so), the host need not copy it again.
        const std::array<std::uint64_t, 4> a_block{t.r0, t.rows, s.k0, s.kc};
        if (m_fed_a != a_block)
            for (std::uint64_t i = 0; i < t.rows; ++i)
                std::memcpy(m_feeder.a_row(i), &m_a_pad[(t.r0 + i) * k + s.k0], s.kc * osz);
        m_fed_a = a_block;
        for (std::uint64_t j = 0; j < s.kc; ++j)
            std::memcpy(m_feeder.b_row(j), &m_b_pad[(s.k0 + j) * p + t.c0], t.cols * osz);
    }

    // The job's units, the scratchpads' contents and the first unit's reads, issued at once.
    void begin_buffers(const tile_plan& plan) {
        constexpr std::uint64_t osz = sizeof(typename Format::operand_type);
        m_bplan = plan_buffers(m_job.run.memory, plan, osz);
        // The cycle engine steps the DRAM channel as it steps the array; the functional engine,
        // which steps nothing, times it by the event rules. The engine cross-check compares them.
        m_mem = memory_timeline(
            m_job.run.memory.dram_bandwidth, m_job.run.memory.c_sram,
            m_job.run.engine == engine_kind::cycle ? channel_timing::stepped : channel_timing::events);
        // Only blocks read in this job are ever copied out, so what an earlier job left is never used.
        m_a_pad.resize(m_job.shape.m * m_job.shape.k);
        m_fed_a.reset();
        m_b_pad.resize(m_job.shape.k * m_job.shape.p);
        m_unit_latency.assign(m_bplan.units.size(), {0, 0});
        m_units_read = 0;
        m_next_unit = 0;
        m_a_array = m_b_array = m_c_array = 0;
        if (m_bplan.units.empty()) return;
        read_step_blocks(plan, 0);
        issue_fetch(0);
    }

    // Reads from DRAM the blocks of every unit of the step that unit u belongs to (the feeder needs
    // a whole chunk at its load), untimed on the keeper: each block's latency is what the target
    // annotated per access, for the DRAM channel to use.
    void read_step_blocks(const tile_plan& plan, std::size_t u) {
        constexpr std::uint64_t osz = sizeof(typename Format::operand_type);
        const std::uint64_t k = m_job.shape.k, p = m_job.shape.p;
        const std::size_t step = m_bplan.units[u].step;
        for (; m_units_read < m_bplan.units.size() && m_bplan.units[m_units_read].step == step;
             ++m_units_read) {
            const buffer_unit& b = m_bplan.units[m_units_read];
            const tile& t = *plan[b.step].where;
            auto read = [this](std::size_t which, auto&& access) {
                dma_status st;
                m_unit_latency[m_units_read][which] = deferred(access, st);
                check(st);
            };
            if (b.a_read)
                read(0, [&] {
                    return m_dma.read_block(m_job.a.address(t.r0, b.k0), t.rows, b.kc * osz,
                                            m_job.a.row_stride, &m_a_pad[t.r0 * k + b.k0], k * osz,
                                            dma_stream::a);
                });
            if (b.b_read)
                read(1, [&] {
                    return m_dma.read_block(m_job.b.address(b.k0, t.c0), b.kc, t.cols * osz,
                                            m_job.b.row_stride, &m_b_pad[b.k0 * p + t.c0], p * osz,
                                            dma_stream::b);
                });
        }
        m_read_plan = &plan;
    }

    // Runs DMA accesses with their latency kept off the keeper; returns their mean latency in whole
    // cycles, and how they went through `st`.
    template <class F>
    std::uint64_t deferred(F&& access, dma_status& st) {
        sc_core::sc_time sink = sc_core::SC_ZERO_TIME;
        const std::uint64_t before = m_dma.dmi_accesses() + m_dma.transport_accesses();
        m_dma.defer_timing(&sink);
        st = access();
        m_dma.defer_timing(nullptr);
        const std::uint64_t n = m_dma.dmi_accesses() + m_dma.transport_accesses() - before;
        return n ? cycles(sink / double(n)) : 0;
    }

    // Unit u's DRAM reads go onto the channel now.
    void issue_fetch(std::size_t u) {
        const buffer_unit& b = m_bplan.units[u];
        const tile& t = *(*m_read_plan)[b.step].where;
        if (b.a_read)
            tell(m_mem.fetch(memory_timeline::stream::a, b.a_bytes, m_unit_latency[u][0]),
                 tlm::TLM_READ_COMMAND, m_job.a.address(t.r0, b.k0), dma_stream::a, u > 0);
        if (b.b_read)
            tell(m_mem.fetch(memory_timeline::stream::b, b.b_bytes, m_unit_latency[u][1]),
                 tlm::TLM_READ_COMMAND, m_job.b.address(b.k0, t.c0), dma_stream::b, u > 0);
    }

    // A unit starts: the array waits for its blocks, then the next unit's reads are issued.
    void begin_unit(const plan_step& s, engine_type& eng) {
        const buffer_unit& b = m_bplan.units[m_next_unit];
        if (const std::uint64_t w = m_mem.wait_operands()) {
            plan_step st = s;
            st.kind = step_kind::stall;
            timed(st, eng, m_result.phases.stall, [&] { stall_for(w); });
        }
        m_a_array += b.a_bytes;
        m_b_array += b.b_bytes;
        ++m_next_unit;
        if (m_next_unit < m_bplan.units.size()) {
            if (m_next_unit >= m_units_read) read_step_blocks(*m_read_plan, m_next_unit);
            issue_fetch(m_next_unit);
        }
    }

    // Before an advance step: its first unit (a unit a fault hook cut short is skipped).
    void start_unit(const plan_step& s, engine_type& eng, std::size_t step) {
        while (m_next_unit < m_bplan.units.size() && m_bplan.units[m_next_unit].step < step)
            ++m_next_unit;
        if (m_next_unit < m_bplan.units.size() && m_bplan.units[m_next_unit].step == step) begin_unit(s, eng);
    }

    // The advance edge where the next unit of this step begins (a streamed tile's next segment),
    // or `edges` when none does.
    std::uint64_t next_boundary(std::size_t step, std::uint64_t edges) const {
        if (m_next_unit >= m_bplan.units.size()) return edges;
        const buffer_unit& b = m_bplan.units[m_next_unit];
        return b.step == step && !b.first_of_step ? std::min(b.edge0, edges) : edges;
    }

    void wait_room(const plan_step& s, engine_type& eng) {
        if (s.target != drain_target::c) return;
        const tile& t = *s.where;
        if (const std::uint64_t w = m_mem.wait_room(c_block_bytes(t))) {
            plan_step st = s;
            st.kind = step_kind::stall;
            timed(st, eng, m_result.phases.stall, [&] { stall_for(w); });
        }
    }

    std::uint64_t c_block_bytes(const tile& t) const {
        return t.rows * t.cols * output_size(m_job.run.quant, sizeof(typename Format::accumulator_type));
    }

    // The last outputs' write ends the job.
    void finish_buffers() { stall_for(m_mem.finish()); }

    void stall_for(std::uint64_t w) {
        if (w == 0) return;
        m_qk.inc(m_cfg.clock_period * double(w));
        sync_if_needed();
    }

    // A DRAM-channel transfer, for the observer: stamped with the channel's times.
    void tell(const memory_timeline::request& r, tlm::tlm_command cmd, std::uint64_t addr, dma_stream what,
              bool prefetch) {
        if (!m_observer) return;
        dma_transfer x;
        x.command = cmd;
        x.address = addr;
        x.length = r.bytes;
        x.what = what;
        x.begin = m_result.start + m_cfg.clock_period * double(r.begin);
        x.end = m_result.start + m_cfg.clock_period * double(r.end);
        x.prefetch = prefetch;
        m_observer->on_transfer(x);
    }

    std::uint64_t cycles(const sc_core::sc_time& t) const {
        return std::uint64_t(std::ceil(t / m_cfg.clock_period - 1e-9));
    }

    // Buffers none: the busiest tile's DRAM bytes over its time, for the peak bandwidth.
    void close_tile_window() {
        const std::uint64_t bytes = dram_bytes(m_dma.traffic());
        const std::uint64_t c = cycles(now() - m_tile_mark);
        if (c)  // read only with buffers none
            m_peak_none = std::max(m_peak_none, double(bytes - m_tile_mark_bytes) / double(c));
        m_tile_mark = now();
        m_tile_mark_bytes = bytes;
    }
    static std::uint64_t dram_bytes(const memory_traffic& t) {
        return t.a_read + t.b_read + t.c_written + t.partials();
    }

    // The memory system's account of the job that ended.
    void report_memory() {
        memory_report& r = m_result.memory;
        r = memory_report{};
        const memory_traffic& t = m_result.traffic;
        r.a.dram = t.a_read;
        r.b.dram = t.b_read;
        r.c.dram = t.c_written + t.partials();
        m_buffers->report(r);
        if (r.total_cycles)
            r.average_bandwidth = double(r.a.dram + r.b.dram + r.c.dram) / double(r.total_cycles);
    }

    // The energy account's counts: the engine's PE actions and toggles (when the job counts them), and
    // the memories' from what the DMA port and the scratchpads already counted (traffic, memory), so
    // that an access is priced in the same bytes the memory report shows. Buffers double: DRAM fills
    // the A and B scratchpads (their writes) and the array reads them; the array writes C's, which
    // drains to DRAM (its reads). Buffers none: no scratchpad.
    void report_actions() {
        action_counts& c = m_result.actions;
        c = action_counts{};
        m_array.engine_for(m_job.run.engine).report_actions(c);
        using accumulator_type = typename Format::accumulator_type;
        constexpr std::uint64_t osz = sizeof(typename Format::operand_type), asz = sizeof(accumulator_type);
        const std::uint64_t csz = output_size(m_job.run.quant, asz);
        const memory_traffic& t = m_result.traffic;
        c.dram_a_read_bytes = t.a_read;
        c.dram_b_read_bytes = t.b_read;
        c.dram_c_read_bytes = t.partials_read;
        c.dram_c_write_bytes = t.c_written + t.partials_written;
        if (m_job.run.memory.buffers == buffer_mode::double_buffered) {
            const memory_report& r = m_result.memory;
            c.a_sram = {r.a.array / osz, r.a.dram / osz, r.a.array, r.a.dram};
            c.b_sram = {r.b.array / osz, r.b.dram / osz, r.b.array, r.b.dram};
            c.c_sram = {r.c.dram / csz, r.c.array / csz, r.c.dram, r.c.array};
        }
        c.rows = m_array.rows();
        c.cols = m_array.cols();
        c.operand_bits = 8 * osz;
        c.accumulator_bits = 8 * asz;
        c.macs_real = m_result.macs_real;
        m_hooks->actions(c);
    }

    // Buffers none: the bus moved the operands to the array, and the job's time is the keeper's.
    void report_unbuffered(memory_report& r) {
        const memory_traffic& t = m_result.traffic;
        close_tile_window();
        r.a.array = t.a_read;
        r.b.array = t.b_read;
        r.c.array = t.c_written + t.partials_written;
        r.prefetch_cycles = m_prefetch_none;
        r.total_cycles = cycles(m_result.end - m_result.start);
        r.peak_bandwidth = m_peak_none;
    }
    // Buffers double: the scratchpads fed the array, and the job's time is the DRAM channel's.
    void report_buffers(memory_report& r) {
        r.a.array = m_a_array;
        r.b.array = m_b_array;
        r.c.array = m_c_array;
        r.stall_cycles = m_mem.stall_cycles();
        r.prefetch_cycles = m_mem.prefetch_cycles();
        r.total_cycles = m_mem.now();
        r.peak_bandwidth = m_mem.peak_bandwidth();
        r.zero_stall_bandwidth = m_mem.zero_stall_bandwidth();
        r.streamed_tiles = m_bplan.streamed_tiles;
        r.stream_k_chunk = m_bplan.stream_k_chunk;
    }

    // The chunk's advance edges, in slices of at most one quantum so that other processes run on
    // time, then the watchdog. The counters are read from the engine: what it counted.
    void advance(const plan_step& s, engine_type& eng, std::size_t step) {
        const tile& t = *s.where;
        if (!s.fresh) m_hooks->continue_chunk(s, eng);
        const std::uint64_t edges = m_hooks->edges(s, s.edges);
        const std::uint64_t edges_before = eng.edges(), macs_before = eng.macs(),
                            real_before = eng.macs_in(t.rows, t.cols);
        edge_relay relay{*this, s, now(), eng};
        edge_callback* after = observed(eng) ? &relay : nullptr;
        const std::uint64_t slice =
            std::max<std::uint64_t>(1, tlm::tlm_global_quantum::instance().get() / m_cfg.clock_period);
        std::uint64_t segment = 0;  // where the current unit's edges began
        for (std::uint64_t e = 0; e < edges;) {
            if (e == m_buffers->next_boundary(step, edges)) {
                // A streamed tile's next K segment (buffers double only): the array may wait for it.
                m_buffers->advanced(e - segment);
                segment = e;
                const sc_core::sc_time before = now();
                begin_unit(s, eng);
                relay.start += now() - before;
            }
            const std::uint64_t count =
                std::min({slice, edges - e, m_buffers->next_boundary(step, edges) - e});
            eng.advance(m_feeder, t, e, count, after);
            m_qk.inc(m_cfg.clock_period * double(count));
            sync_if_needed();
            e += count;
        }
        m_buffers->advanced(edges - segment);
        count_advance(eng, edges_before, macs_before, eng.macs_in(t.rows, t.cols) - real_before);
        watchdog(s, eng, eng.edges() - edges_before);
    }

    // What an advance step did, as the engine counted it, into the tile's report and the job's.
    void count_advance(const engine_type& eng, std::uint64_t edges_before, std::uint64_t macs_before,
                       std::uint64_t real) {
        tile_report& rep = m_result.tiles.back();
        const std::uint64_t counted = eng.edges() - edges_before;
        const std::uint64_t macs = eng.macs() - macs_before;
        rep.advance_edges_per_chunk.push_back(counted);
        rep.advance_edges += counted;
        rep.macs_padded += macs;
        rep.macs_real += real;
        m_result.advance_edges += counted;
        m_result.macs_padded += macs;
        m_result.macs_real += real;
    }

    // The dataflow says which accumulators hold the tile's outputs, the buffer mode how they reach
    // DRAM.
    void drain(const plan_step& s, engine_type& eng) {
        const drained_block b = m_mapping->drained(s, eng);
        drain_counts d;
        const dma_status st = m_buffers->write(s, b, d);
        tile_report& rep = m_result.tiles.back();
        rep.real_outputs += d.real_outputs;
        m_result.partial_overflows += d.partial_overflows;
        m_result.saturated_outputs += d.saturated_outputs;
        check(st);
        if (s.last_chunk) {
            rep.masked_outputs = b.slots - rep.real_outputs;
            m_result.real_outputs += rep.real_outputs;
            m_result.masked_outputs += rep.masked_outputs;
        }
    }

    dma_status write_unbuffered(const plan_step& s, const drained_block& b, drain_counts& d) {
        return m_output.drain(m_job, s, b.acc, b.stride, b.rows, b.cols, m_dma, d);
    }
    // Into the C scratchpad, and from there to DRAM on the channel's time.
    dma_status write_buffered(const plan_step& s, const drained_block& b, drain_counts& d) {
        const tile& t = *s.where;
        dma_status st;
        const std::uint64_t latency = deferred([&] { return write_unbuffered(s, b, d); }, st);
        if (st.ok()) {
            m_c_array += c_block_bytes(t);
            tell(m_mem.write(c_block_bytes(t), latency), tlm::TLM_WRITE_COMMAND, m_job.c.address(t.r0, t.c0),
                 dma_stream::c, false);
        }
        return st;
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

    // Whether the observer hears each edge: it wants them, and the engine steps PEs.
    bool observed(const engine_type& eng) const {
        return m_observer && m_observer->wants_edges() && (eng.array() || eng.stationary_array());
    }

    // Tells the observer about each edge, stamped with the controller's own time.
    struct edge_relay final : edge_callback {
        edge_relay(tile_controller& c, const plan_step& s, sc_core::sc_time t0, const engine_type& e)
            : ctrl(c), step(s), start(t0), eng(e) {}
        void after_edge(std::uint64_t edge) override {
            ctrl.m_observer->on_edge(edge_event<Format>{step, edge,
                                                        start + ctrl.m_cfg.clock_period * double(edge),
                                                        eng.array(), eng.stationary_array()});
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
        if (m_observer)
            m_observer->on_step_begin(step_event<Format>{s, mark, eng.array(), eng.stationary_array()});
        struct add_on_exit {
            tile_controller& self;
            sc_core::sc_time& phase;
            sc_core::sc_time mark;
            ~add_on_exit() { phase += self.now() - mark; }
        } guard{*this, phase, mark};
        body();
        if (m_observer)
            m_observer->on_step_end(step_event<Format>{s, now(), eng.array(), eng.stationary_array()});
    }

    // timed() for a step that may wait for its unit's operands inside it: those waits are the
    // stall phase's, so they leave the step's own phase.
    template <class F>
    void timed_less_stalls(const plan_step& s, const engine_type& eng, sc_core::sc_time& phase, F&& body) {
        const sc_core::sc_time stalled = m_result.phases.stall;
        timed(s, eng, phase, body);
        phase -= m_result.phases.stall - stalled;
    }

    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) { m_dma.invalidate(start, end); }

    // The job's dataflow and buffer mode, chosen once when it starts.
    os_mapping m_os{*this};
    stationary_mapping<dataflow_kind::ws> m_ws{*this};
    stationary_mapping<dataflow_kind::is> m_is{*this};
    mapping* m_mapping = &m_os;
    buffers_none m_buffers_none{*this};
    buffers_double m_buffers_double{*this};
    buffers* m_buffers = &m_buffers_none;

    // Weight and input stationary: the fold's operands and the tile's accumulators.
    fold_type m_fold{};
    std::uint64_t m_preloaded = 0;  // the fold's preload edges, for the DRAM channel's clock
    aligned_vector<typename Format::operand_type> m_fold_a, m_fold_b;  // buffers none: the fold's blocks
    aligned_vector<typename Format::accumulator_type> m_fold_acc;

    // Buffers double: the job's units, the DRAM channel, the scratchpads' contents (every block read
    // so far, where it sits in A and in B: a block held is never read again, and the memory does
    // not change under a job) and where the job is.
    buffer_plan m_bplan;
    memory_timeline m_mem;
    const tile_plan* m_read_plan = nullptr;
    aligned_vector<typename Format::operand_type> m_a_pad, m_b_pad;  // the A and B scratchpads' contents
    std::optional<std::array<std::uint64_t, 4>> m_fed_a;       // the A block in the feeder: r0, rows, k0, kc
    std::vector<std::array<std::uint64_t, 2>> m_unit_latency;  // A and B reads' latency per unit, cycles
    std::size_t m_units_read = 0;
    std::size_t m_next_unit = 0;
    std::uint64_t m_a_array = 0, m_b_array = 0, m_c_array = 0;  // scratchpad <-> array bytes
    // Buffers none: the first load's cycles and the busiest tile's bandwidth.
    bool m_first_load = true;
    std::uint64_t m_prefetch_none = 0;
    sc_core::sc_time m_tile_mark = sc_core::SC_ZERO_TIME;
    std::uint64_t m_tile_mark_bytes = 0;
    double m_peak_none = 0;

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
