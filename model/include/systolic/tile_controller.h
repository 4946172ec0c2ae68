// The tile controller: runs a matmul_job on a systolic_array. It tiles C into
// ceil(M/N) x ceil(P/N) output tiles and, for each, issues
//   clear -> load -> advance x (K + 2(N-1)) -> drain
// With K-splitting (job.k_tile) the reduction runs as chunks in k order, each
// load -> advance x (chunk + 2(N-1)); k_policy::preserve keeps the accumulators between chunks
// and drains once, k_policy::partials clears before each chunk, drains its wide partial sums to a
// buffer where they are combined by read-modify-write, and writes C once, after the last chunk.
//
// Load reads the tile's real A rows and B columns through the initiator socket (DMI when the
// target grants it, b_transport otherwise); rows and columns outside the matrix are never read and
// enter the array as valid zero tokens. Drain writes only the in-range results (the output mask),
// one b_transport per tile row, optionally requantized to int8, and only once every PE has
// consumed all the terms so far; otherwise the watchdog ends the job with an error naming the
// stuck PEs. Time: one clock per clear and per advance edge, plus the latencies the target
// annotates, kept by a TLM quantum keeper.
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/tlm_quantumkeeper.h>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <systemc>
#include <tlm>
#include <utility>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/log.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/systolic_array.h"
#include "systolic/tiling.h"

namespace systolic {

// Known defects the testbench can plant to prove that it catches them (testbench use only; a
// virtual platform never sets one). None costs anything on the per-edge path: they change the
// per-tile feed tables, the schedule or the drain.
enum class fault {
    none,
    clear_between_k,  // zero the accumulators between K chunks (k_policy::preserve)
    invalid_padding,  // feed padding rows and columns as invalid tokens instead of valid zeros
    no_mask,          // drain all N x N results, in range or not
    global_skew,      // skew the streams by global row/column instead of local
    skip_advance,     // issue one advance edge too few per tile
};
std::string_view to_string(fault f);
std::optional<fault> parse_fault(std::string_view name);  // "clear-between-k", ...

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

    // Plants a known defect in the jobs that follow (testbench use only).
    void inject(fault f) { m_fault = f; }

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
        const std::uint64_t chunks = m_job.chunks();
        const std::uint64_t kt = effective_k_tile(s.k, m_job.k_tile);
        m_array.set_overflow(m_job.overflow);
        m_a_buf.assign(n * kt, operand_type{});
        m_b_buf.assign(kt * n, operand_type{});
        m_west.assign(n, token_type::bubble());
        m_north.assign(n, token_type::bubble());
        m_acc_row.resize(n);
        m_wide_row.resize(n);
        m_out_row.resize(n * sizeof(accumulator_type));
        m_row_delay.resize(n);
        m_col_delay.resize(n);
        m_row_valid.resize(n);
        m_col_valid.resize(n);
        m_result.k_chunks = chunks;

        const auto tiles = plan_tiles(s.m, s.p, n, m_job.order, m_job.seed);
        m_log->info("job M={} K={} P={} on {}x{} array: {} tiles, {} chunk(s) of up to {}, order {}", s.m,
                    s.k, s.p, n, n, tiles.size(), chunks, kt, to_string(m_job.order));
        for (const auto& t : tiles) {
            m_log->debug("tile {} origin ({},{}) {}x{} real", t.index, t.r0, t.c0, t.rows, t.cols);
            plan_feed(t);
            m_result.tiles.push_back(tile_report{});
            tile_report& rep = m_result.tiles.back();  // a tile that fails below still shows what it did
            rep.where = t;

            std::uint64_t k0 = 0;
            for (std::uint64_t c = 0; c < chunks; ++c) {
                const std::uint64_t kc = chunk_length(s.k, m_job.k_tile, c);
                const bool fresh = c == 0 || m_job.policy == k_policy::partials;
                if (fresh) {
                    timed(m_result.phases.clear, [&] {
                        m_array.clear();
                        tick();
                    });
                } else if (m_fault == fault::clear_between_k) {
                    m_array.clear_accumulators();
                }
                timed(m_result.phases.load, [&] { load(t, k0, kc); });

                // Counters since the last clear, read before this chunk: its share is the difference.
                const std::uint64_t edges_before = m_array.core().edges();
                const std::uint64_t macs_before = m_array.core().macs();
                const std::uint64_t macs_real_before = m_array.core().macs_in(t.rows, t.cols);
                std::uint64_t edges = advance_edges_per_tile(n, kc);
                if (m_fault == fault::skip_advance && c + 1 == chunks) --edges;
                timed(m_result.phases.advance, [&] {
                    for (std::uint64_t e = 0; e < edges; ++e) {
                        feed(e, kc);
                        m_array.advance(m_west.data(), m_north.data());
                        tick();
                    }
                });
                const std::uint64_t chunk_edges = m_array.core().edges() - edges_before;
                rep.advance_edges_per_chunk.push_back(chunk_edges);
                rep.advance_edges += chunk_edges;
                m_result.advance_edges += chunk_edges;
                // Accounted before the completion check, so a failing chunk still shows its work.
                const std::uint64_t macs = m_array.core().macs() - macs_before;
                const std::uint64_t macs_real = m_array.core().macs_in(t.rows, t.cols) - macs_real_before;
                rep.macs_padded += macs;
                rep.macs_real += macs_real;
                m_result.macs_padded += macs;
                m_result.macs_real += macs_real;

                check_complete(t, c, fresh ? kc : k0 + kc, edges);
                k0 += kc;

                if (m_job.policy == k_policy::partials || c + 1 == chunks) {
                    const std::uint64_t ovf = m_array.core().overflows_in(t.rows, t.cols);
                    m_result.overflows += ovf;
                    timed(m_result.phases.drain, [&] { drain(t, c, chunks); });
                }
            }
            rep.masked_outputs = n * n - rep.real_outputs;
            m_result.real_outputs += rep.real_outputs;
            m_result.masked_outputs += rep.masked_outputs;
        }
    }

    template <class F>
    void timed(sc_core::sc_time& phase, F&& body) {
        const sc_core::sc_time mark = now();
        body();
        phase += now() - mark;
    }

    // The per-tile feed tables: when each row and column stream starts (its skew) and whether its
    // tokens are valid. Padding rows and columns carry valid zeros; the faults change only these.
    void plan_feed(const tile& t) {
        const std::size_t n = m_array.size();
        const bool global = m_fault == fault::global_skew;
        const bool invalid_padding = m_fault == fault::invalid_padding;
        for (std::size_t i = 0; i < n; ++i) {
            m_row_delay[i] = global ? t.r0 + i : i;
            m_col_delay[i] = global ? t.c0 + i : i;
            m_row_valid[i] = !(invalid_padding && i >= t.rows);
            m_col_valid[i] = !(invalid_padding && i >= t.cols);
        }
    }

    // Loads terms k0 .. k0 + kc - 1 of the tile's real A rows (N x kc buffer) and real B columns
    // (kc x N buffer); the rest of each buffer is zero, which the feed turns into padding tokens.
    void load(const tile& t, std::uint64_t k0, std::uint64_t kc) {
        const std::size_t n = m_array.size();
        for (std::size_t i = 0; i < n; ++i) {
            operand_type* row = &m_a_buf[i * kc];
            if (i < t.rows) {
                transfer(tlm::TLM_READ_COMMAND, m_job.a.address(t.r0 + i, k0), row, kc * sizeof(operand_type),
                         "A");
            } else {
                std::fill(row, row + kc, operand_type{});
            }
        }
        for (std::uint64_t k = 0; k < kc; ++k) {
            operand_type* row = &m_b_buf[k * n];
            transfer(tlm::TLM_READ_COMMAND, m_job.b.address(k0 + k, t.c0), row, t.cols * sizeof(operand_type),
                     "B");
            std::fill(row + t.cols, row + n, operand_type{});
        }
    }

    // The skewed edge inputs for advance edge e of a chunk of kc terms: row i of A and column j of
    // B start i (or j) edges late, so term k meets at PE(i, j) on edge k + i + j. Outside a stream
    // the token is a bubble.
    void feed(std::uint64_t e, std::uint64_t kc) {
        const std::size_t n = m_array.size();
        for (std::size_t i = 0; i < n; ++i) {
            const std::uint64_t k = e - m_row_delay[i];  // wraps to a huge value when e < delay
            m_west[i] = (e >= m_row_delay[i] && k < kc) ? token_type{m_a_buf[i * kc + k], m_row_valid[i] != 0}
                                                        : token_type::bubble();
        }
        for (std::size_t j = 0; j < n; ++j) {
            const std::uint64_t k = e - m_col_delay[j];
            m_north[j] = (e >= m_col_delay[j] && k < kc) ? token_type{m_b_buf[k * n + j], m_col_valid[j] != 0}
                                                         : token_type::bubble();
        }
    }

    void check_complete(const tile& t, std::uint64_t chunk, std::uint64_t terms, std::uint64_t edges) {
        if (m_array.core().complete(terms)) return;
        const auto stuck = m_array.core().stuck(terms);
        std::ostringstream os;
        os << "watchdog: tile " << t.index << " at origin (" << t.r0 << "," << t.c0 << ")";
        if (m_job.chunks() > 1) os << " chunk " << chunk;
        os << " did not complete within " << edges << " advance edges: ";
        for (std::size_t i = 0; i < stuck.size() && i < m_cfg.watchdog_names; ++i) {
            os << (i ? ", " : "") << m_array.pe_name(stuck[i].row, stuck[i].col) << " consumed "
               << stuck[i].consumed << " of " << terms << " terms";
        }
        if (stuck.size() > m_cfg.watchdog_names)
            os << " (and " << stuck.size() - m_cfg.watchdog_names << " more)";
        throw job_failure{job_status::watchdog, os.str()};
    }

    // Drains chunk c of `chunks`: in-range results only (the output mask), one transaction per
    // real row. Without a partial-sum buffer that is the final write to C. With one, every chunk
    // but the last stores (first chunk) or adds (read-modify-write) its partials there, and the
    // last adds the buffer to its own partials and writes C.
    void drain(const tile& t, std::uint64_t c, std::uint64_t chunks) {
        const std::size_t n = m_array.size();
        const bool buffered = m_job.uses_partial_buffer();
        const bool last = c + 1 == chunks;
        const bool no_mask = m_fault == fault::no_mask;
        const std::size_t rows = no_mask ? n : t.rows, cols = no_mask ? n : t.cols;
        const std::uint64_t acc_size = sizeof(accumulator_type);
        for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t j = 0; j < cols; ++j) {
                m_acc_row[j] = m_array.core().accumulator(i, j);
                if (m_job.quant.per_partial) m_acc_row[j] = rounded_partial(m_acc_row[j], m_job.quant);
            }
            if (buffered && c > 0) {  // combine with the partial sums of the earlier chunks
                transfer(tlm::TLM_READ_COMMAND, m_job.partial.address(t.r0 + i, t.c0), m_wide_row.data(),
                         cols * acc_size, "partial sums");
                for (std::size_t j = 0; j < cols; ++j) {
                    bool overflowed = false;
                    m_acc_row[j] = add<Format>(m_job.overflow, m_wide_row[j], m_acc_row[j], overflowed);
                    m_result.partial_overflows += overflowed;
                }
            }
            if (buffered && !last) {
                transfer(tlm::TLM_WRITE_COMMAND, m_job.partial.address(t.r0 + i, t.c0), m_acc_row.data(),
                         cols * acc_size, "partial sums");
            } else {
                const std::uint64_t bytes = encode_outputs(cols);
                transfer(tlm::TLM_WRITE_COMMAND, m_job.c.address(t.r0 + i, t.c0), m_out_row.data(), bytes,
                         "C");
                m_result.tiles.back().real_outputs += cols;
            }
        }
    }

    // The final values of one drained row as C's bytes: accumulators, or int8 codes.
    std::uint64_t encode_outputs(std::size_t cols) {
        if (!m_job.quant.enabled) {
            std::memcpy(m_out_row.data(), m_acc_row.data(), cols * sizeof(accumulator_type));
            return cols * sizeof(accumulator_type);
        }
        for (std::size_t j = 0; j < cols; ++j) {
            bool saturated = false;
            const std::int8_t q =
                m_job.quant.per_partial
                    ? saturate_int8(double(m_acc_row[j]), m_job.quant.zero_point, &saturated)
                    : requantize(double(m_acc_row[j]), m_job.quant, &saturated);
            m_out_row[j] = static_cast<std::uint8_t>(q);
            m_result.saturated_outputs += saturated;
        }
        return cols;
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

    fault m_fault = fault::none;
    std::vector<operand_type> m_a_buf;  // N x chunk: this tile's A rows, zero rows for padding
    std::vector<operand_type> m_b_buf;  // chunk x N: this tile's B columns, zero columns for padding
    std::vector<token_type> m_west;
    std::vector<token_type> m_north;
    std::vector<std::uint64_t> m_row_delay, m_col_delay;  // per-tile feed tables (see plan_feed)
    std::vector<std::uint8_t> m_row_valid, m_col_valid;
    std::vector<accumulator_type> m_acc_row;   // one drained row
    std::vector<accumulator_type> m_wide_row;  // the same row of the partial-sum buffer
    std::vector<std::uint8_t> m_out_row;       // the row as C's bytes
};

}  // namespace systolic
