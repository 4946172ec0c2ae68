// The tile controller: runs a matmul_job on a systolic_array. It tiles C into
// ceil(M/N) x ceil(P/N) output tiles and, for each, issues
//   clear -> load -> advance x (K + 2(N-1)) -> drain
// Load reads the tile's real A rows and B columns through the initiator socket (DMI when the
// target grants it, b_transport otherwise); rows and columns outside the matrix are never read and
// enter the array as valid zero tokens. Drain writes only the in-range results (the output mask),
// one b_transport per tile row, and only once every PE has consumed exactly K terms; otherwise the
// watchdog ends the job with an error naming the stuck PEs. Time: one clock per clear and per
// advance edge, plus the latencies the target annotates, kept by a TLM quantum keeper.
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>
#include <cstdint>
#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/log.h"
#include "systolic/systolic_array.h"
#include "systolic/tiling.h"

namespace systolic {

template <class Format>
class tile_controller : public sc_core::sc_module {
public:
    using array_type = systolic_array<Format>;
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;
    using token_type = token<operand_type>;

    struct config {
        sc_core::sc_time clock_period = sc_core::sc_time(1, sc_core::SC_NS);
        // How many stuck PEs a watchdog message names before it says "and N more".
        std::size_t watchdog_names = 8;
    };

    tlm_utils::simple_initiator_socket<tile_controller> initiator_socket;

    SC_HAS_PROCESS(tile_controller);

    tile_controller(const sc_core::sc_module_name& name, array_type& array, const config& cfg = config{})
        : sc_core::sc_module(name),
          initiator_socket("initiator_socket"),
          m_array(array),
          m_cfg(cfg),
          m_log(get_logger(this->name())) {
        initiator_socket.register_invalidate_direct_mem_ptr(this,
                                                            &tile_controller::invalidate_direct_mem_ptr);
        SC_THREAD(run);
    }

    ~tile_controller() override { unregister_local_time(&m_qk); }

    // Queues a job; it starts at the next delta cycle (or when the simulation starts). Throws
    // std::invalid_argument for a malformed job and std::logic_error while another job runs.
    void start(const matmul_job& job) {
        if (m_busy) throw std::logic_error(std::string(name()) + ": start() while a job is running");
        const auto err = validate_job(job, sizeof(operand_type), sizeof(accumulator_type));
        if (!err.empty()) throw std::invalid_argument(err);
        m_job = job;
        m_busy = true;
        m_result = job_result{};
        m_result.status = job_status::running;
        if (sc_core::sc_get_status() != sc_core::SC_ELABORATION &&
            sc_core::sc_get_status() != sc_core::SC_BEFORE_END_OF_ELABORATION) {
            m_start_event.notify(sc_core::SC_ZERO_TIME);
        }
    }

    bool busy() const { return m_busy; }
    const job_result& result() const { return m_result; }
    const sc_core::sc_event& done_event() const { return m_done_event; }
    const config& cfg() const { return m_cfg; }

private:
    // Thrown inside run_job to end the job with an error status.
    struct job_failure {
        job_status status;
        std::string message;
    };

    void run() {
        register_local_time(&m_qk);
        for (;;) {
            while (!m_busy)
                sc_core::wait(m_start_event);
            m_qk.reset();
            m_result.start = sc_core::sc_time_stamp();
            try {
                run_job();
                m_result.status = job_status::completed;
            } catch (const job_failure& f) {
                m_result.status = f.status;
                m_result.error = f.message;
                m_log->error("{}", f.message);
            }
            m_qk.sync();
            m_result.end = sc_core::sc_time_stamp();
            m_busy = false;
            m_done_event.notify(sc_core::SC_ZERO_TIME);
        }
    }

    sc_core::sc_time now() const { return sc_core::sc_time_stamp() + m_qk.get_local_time(); }

    void run_job() {
        const auto& s = m_job.shape;
        const std::size_t n = m_array.size();
        const std::uint64_t edges = advance_edges_per_tile(n, s.k);
        m_a_buf.assign(n * s.k, operand_type{});
        m_b_buf.assign(s.k * n, operand_type{});
        m_west.assign(n, token_type::bubble());
        m_north.assign(n, token_type::bubble());
        m_out_buf.resize(n);

        const auto tiles = plan_tiles(s.m, s.p, n, m_job.order, m_job.seed);
        m_log->info("job M={} K={} P={} on {}x{} array: {} tiles, {} edges each, order {}", s.m, s.k, s.p, n,
                    n, tiles.size(), edges, to_string(m_job.order));
        for (const auto& t : tiles) {
            tile_report rep;
            rep.where = t;
            m_log->debug("tile {} origin ({},{}) {}x{} real", t.index, t.r0, t.c0, t.rows, t.cols);

            sc_core::sc_time mark = now();
            m_array.clear();
            tick();
            m_result.phases.clear += now() - mark;

            mark = now();
            load(t);
            m_result.phases.load += now() - mark;

            mark = now();
            for (std::uint64_t e = 0; e < edges; ++e) {
                feed(e);
                m_array.advance(m_west.data(), m_north.data());
                tick();
            }
            m_result.phases.advance += now() - mark;
            rep.advance_edges = m_array.core().edges();
            rep.macs_padded = m_array.core().macs();
            rep.macs_real = m_array.core().macs_in(t.rows, t.cols);
            m_result.advance_edges += rep.advance_edges;
            m_result.macs_padded += rep.macs_padded;
            m_result.macs_real += rep.macs_real;
            m_result.tiles.push_back(rep);  // a tile that fails below still shows what it did

            check_complete(t);

            mark = now();
            drain(t);
            m_result.phases.drain += now() - mark;

            auto& done = m_result.tiles.back();
            done.real_outputs = t.rows * t.cols;
            done.masked_outputs = n * n - done.real_outputs;
            m_result.real_outputs += done.real_outputs;
            m_result.masked_outputs += done.masked_outputs;
        }
    }

    // Loads the real rows of A (N x K buffer) and real columns of B (K x N buffer); the rest of
    // each buffer is zero, which the feed turns into valid zero tokens.
    void load(const tile& t) {
        const auto& s = m_job.shape;
        const std::size_t n = m_array.size();
        for (std::size_t i = 0; i < n; ++i) {
            operand_type* row = &m_a_buf[i * s.k];
            if (i < t.rows) {
                transfer(tlm::TLM_READ_COMMAND, m_job.a.address(t.r0 + i, 0), row, s.k * sizeof(operand_type),
                         "A");
            } else {
                std::fill(row, row + s.k, operand_type{});
            }
        }
        for (std::uint64_t k = 0; k < s.k; ++k) {
            operand_type* row = &m_b_buf[k * n];
            transfer(tlm::TLM_READ_COMMAND, m_job.b.address(k, t.c0), row, t.cols * sizeof(operand_type),
                     "B");
            std::fill(row + t.cols, row + n, operand_type{});
        }
    }

    // The skewed edge inputs for advance edge e: row i of A and column j of B start i (or j) edges
    // late, so term k meets at PE(i, j) on edge k + i + j. Outside a stream the token is a bubble.
    void feed(std::uint64_t e) {
        const std::uint64_t k_len = m_job.shape.k;
        const std::size_t n = m_array.size();
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t k = e - i;  // wraps to a huge value when e < i
            m_west[i] = (e >= i && k < k_len) ? token_type::of(m_a_buf[i * k_len + k]) : token_type::bubble();
        }
        for (std::size_t j = 0; j < n; ++j) {
            const std::uint64_t k = e - j;
            m_north[j] = (e >= j && k < k_len) ? token_type::of(m_b_buf[k * n + j]) : token_type::bubble();
        }
    }

    void check_complete(const tile& t) {
        const std::uint64_t k = m_job.shape.k;
        if (m_array.core().complete(k)) return;
        const auto stuck = m_array.core().stuck(k);
        std::ostringstream os;
        os << "watchdog: tile " << t.index << " at origin (" << t.r0 << "," << t.c0
           << ") did not complete within " << advance_edges_per_tile(m_array.size(), k) << " advance edges: ";
        for (std::size_t i = 0; i < stuck.size() && i < m_cfg.watchdog_names; ++i) {
            os << (i ? ", " : "") << m_array.pe_name(stuck[i].row, stuck[i].col) << " consumed "
               << stuck[i].consumed << " of " << k << " terms";
        }
        if (stuck.size() > m_cfg.watchdog_names)
            os << " (and " << stuck.size() - m_cfg.watchdog_names << " more)";
        throw job_failure{job_status::watchdog, os.str()};
    }

    // Writes the in-range results, one transaction per real row; masked PEs are never written.
    void drain(const tile& t) {
        for (std::size_t i = 0; i < t.rows; ++i) {
            for (std::size_t j = 0; j < t.cols; ++j)
                m_out_buf[j] = m_array.core().accumulator(i, j);
            transfer(tlm::TLM_WRITE_COMMAND, m_job.c.address(t.r0 + i, t.c0), m_out_buf.data(),
                     t.cols * sizeof(accumulator_type), "C");
        }
    }

    void tick() {
        m_qk.inc(m_cfg.clock_period);
        if (m_qk.need_sync()) m_qk.sync();
    }

    // One bulk transfer: through DMI when a granted region covers it, else b_transport (which
    // may grant DMI for next time). A failed response ends the job with a bus error.
    void transfer(tlm::tlm_command cmd, std::uint64_t addr, void* data, std::uint64_t len, const char* what) {
        if (len == 0) return;
        const bool is_read = cmd == tlm::TLM_READ_COMMAND;
        if (m_dmi_valid && addr >= m_dmi.get_start_address() && addr + len - 1 <= m_dmi.get_end_address() &&
            (is_read ? m_dmi.is_read_allowed() : m_dmi.is_write_allowed())) {
            unsigned char* p = m_dmi.get_dmi_ptr() + (addr - m_dmi.get_start_address());
            if (is_read) {
                std::memcpy(data, p, len);
                m_qk.inc(m_dmi.get_read_latency());
            } else {
                std::memcpy(p, data, len);
                m_qk.inc(m_dmi.get_write_latency());
            }
            if (m_qk.need_sync()) m_qk.sync();
            return;
        }

        m_trans.set_command(cmd);
        m_trans.set_address(addr);
        m_trans.set_data_ptr(static_cast<unsigned char*>(data));
        m_trans.set_data_length(static_cast<unsigned int>(len));
        m_trans.set_streaming_width(static_cast<unsigned int>(len));
        m_trans.set_byte_enable_ptr(nullptr);
        m_trans.set_byte_enable_length(0);
        m_trans.set_dmi_allowed(false);
        m_trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time delay = m_qk.get_local_time();
        initiator_socket->b_transport(m_trans, delay);
        m_qk.set(delay);
        m_log->trace("{}", txn_to_string(m_trans));
        if (!m_trans.is_response_ok()) {
            throw job_failure{job_status::bus_error,
                              "bus error while moving " + std::string(what) + ": " + txn_to_string(m_trans)};
        }
        if (m_qk.need_sync()) m_qk.sync();
        if (m_trans.is_dmi_allowed() && !m_dmi_valid && !in_denied_range(addr)) request_dmi(addr);
    }

    void request_dmi(std::uint64_t addr) {
        tlm::tlm_generic_payload trans;
        trans.set_address(addr);
        trans.set_command(tlm::TLM_READ_COMMAND);
        m_dmi.init();
        m_dmi_valid = initiator_socket->get_direct_mem_ptr(trans, m_dmi);
        if (m_dmi_valid) {
            m_log->debug("DMI granted 0x{:x}-0x{:x} read={} write={}", m_dmi.get_start_address(),
                         m_dmi.get_end_address(), m_dmi.is_read_allowed(), m_dmi.is_write_allowed());
        } else {
            // The target names the range it will not grant; do not ask again inside it.
            m_dmi_denied = {m_dmi.get_start_address(), m_dmi.get_end_address()};
            m_has_dmi_denied = true;
        }
    }

    bool in_denied_range(std::uint64_t addr) const {
        return m_has_dmi_denied && addr >= m_dmi_denied.first && addr <= m_dmi_denied.second;
    }

    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
        m_has_dmi_denied = false;  // the target's map changed: it may grant again
        if (m_dmi_valid && start <= m_dmi.get_end_address() && end >= m_dmi.get_start_address()) {
            m_dmi_valid = false;
            m_log->debug("DMI revoked 0x{:x}-0x{:x}", start, end);
        }
    }

    array_type& m_array;
    config m_cfg;
    std::shared_ptr<spdlog::logger> m_log;
    tlm_utils::tlm_quantumkeeper m_qk;
    tlm::tlm_generic_payload m_trans;
    tlm::tlm_dmi m_dmi;
    bool m_dmi_valid = false;
    std::pair<std::uint64_t, std::uint64_t> m_dmi_denied{0, 0};
    bool m_has_dmi_denied = false;

    matmul_job m_job;
    job_result m_result;
    bool m_busy = false;
    sc_core::sc_event m_start_event;
    sc_core::sc_event m_done_event;

    std::vector<operand_type> m_a_buf;  // N x K: this tile's A rows, zero rows for padding
    std::vector<operand_type> m_b_buf;  // K x N: this tile's B columns, zero columns for padding
    std::vector<token_type> m_west;
    std::vector<token_type> m_north;
    std::vector<accumulator_type> m_out_buf;
};

}  // namespace systolic
