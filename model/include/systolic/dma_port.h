// The DMA port: bulk reads and writes through a TLM-2.0 initiator's forward path, timed by the
// owner's quantum keeper.
//  - A DMI cache keeps several granted ranges (A, B and C may sit in different memories) and
//    forgets the ones a target invalidates; a range a target refused is not asked for again until
//    that target's map changes.
//  - Everything else goes through b_transport, whose dmi_allowed hint triggers a DMI request.
//  - A failed access comes back as a value (dma_status), never an exception, and the caller
//    decides what it means.
// Plain C++ over tlm::tlm_fw_transport_if: a unit test can bind it to any forward interface.
#pragma once

#include <spdlog/spdlog.h>

#include <cstdint>
#include <memory>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

// After <systemc>: the keeper's header uses sc_core without including it.
#include <tlm_utils/tlm_quantumkeeper.h>

#include "systolic/job.h"
#include "systolic/names.h"

namespace systolic {

// The data a DMA transfer moves: what the traffic counters, the waveform and the timeline tell
// apart, and what an error message names ("bus error while moving C").
enum class dma_stream { a, b, c, partial_sums, scale_vector, zero_point_vector };
inline constexpr enum_name<dma_stream> dma_stream_names[] = {
    {dma_stream::a, "A", "the A operand, read"},
    {dma_stream::b, "B", "the B operand, read"},
    {dma_stream::c, "C", "the output C, written"},
    {dma_stream::partial_sums, "partial sums", "the partial-sum buffer, written and read back"},
    {dma_stream::scale_vector, "scale vector", "the per-column requantization scales, read"},
    {dma_stream::zero_point_vector, "zero-point vector", "the per-column zero points, read"},
};
static_assert(names_in_order(dma_stream_names));
constexpr const char* to_string(dma_stream s) {
    return name_of(dma_stream_names, s);
}

struct dma_status {
    tlm::tlm_response_status response = tlm::TLM_OK_RESPONSE;
    std::string message;  // one line naming the transaction, empty when ok

    bool ok() const { return response == tlm::TLM_OK_RESPONSE; }
};

// One finished transfer, as the port's owner sees it: its own times (kernel time plus the quantum
// keeper's offset) before and after the access, so that a timeline is right under temporal decoupling.
struct dma_transfer {
    tlm::tlm_command command = tlm::TLM_READ_COMMAND;
    std::uint64_t address = 0;
    std::uint64_t length = 0;
    dma_stream what = dma_stream::a;
    sc_core::sc_time begin, end;
    bool dmi = false;  // through a DMI pointer (else b_transport)
    bool ok = true;
    bool prefetch = false;  // issued ahead for a later tile while the array works (buffers double)
};

// Told about every transfer of a port that has one (waveforms, timelines). None: no extra work.
class dma_listener {
public:
    virtual void on_transfer(const dma_transfer&) = 0;

protected:
    ~dma_listener() = default;
};

struct dma_config {
    std::size_t dmi_entries = 8;  // granted ranges kept at once; the oldest goes first
};

class dma_port {
public:
    using config = dma_config;

    dma_port(tlm_utils::tlm_quantumkeeper& keeper, std::shared_ptr<spdlog::logger> log,
             const config& cfg = config{});

    // The forward path (the initiator socket's bound target, once elaboration has bound it).
    void bind(tlm::tlm_fw_transport_if<>& fw) { m_fw = &fw; }
    bool bound() const { return m_fw != nullptr; }

    // `what` is counted in traffic() and named in an error message ("A", "C", ...).
    dma_status read(std::uint64_t addr, void* data, std::uint64_t len, dma_stream what);
    dma_status write(std::uint64_t addr, const void* data, std::uint64_t len, dma_stream what);

    // A 2-D block: `rows` rows of `row_bytes`, `stride` bytes apart in the target, into `data` with
    // rows `data_stride` bytes apart. Through DMI when one granted range covers the whole block (one
    // copy per row, the same latency as row-by-row transfers, one sync check), else row by row.
    dma_status read_block(std::uint64_t addr, std::uint64_t rows, std::uint64_t row_bytes,
                          std::uint64_t stride, void* data, std::uint64_t data_stride, dma_stream what);
    // Told about each transfer after it ended (null: none). Not owned.
    void set_listener(dma_listener* listener) { m_listener = listener; }

    // DRAM bandwidth in bytes per cycle of `clock` (0: unlimited): each access then also takes
    // ceil(bytes / bandwidth) cycles on the keeper.
    void set_bandwidth(double bytes_per_cycle, const sc_core::sc_time& clock) {
        m_bandwidth = bytes_per_cycle;
        m_clock = clock;
    }
    // While set (non-null), the accesses' annotated latencies add up in *sink instead of on the
    // keeper, and the listener is not told: the owner times the transfers on its own channel
    // (memory_timeline) and tells the listener itself. Null: timed by the keeper again.
    void defer_timing(sc_core::sc_time* sink) { m_deferred = sink; }

    // The backward path's invalidate_direct_mem_ptr: drop every cached range that overlaps.
    void invalidate(std::uint64_t start, std::uint64_t end);

    // How the accesses went so far: through DMI, through b_transport, DMI grants received.
    std::uint64_t dmi_accesses() const { return m_dmi_accesses; }
    std::uint64_t transport_accesses() const { return m_transport_accesses; }
    std::size_t cached_ranges() const { return m_dmi.size(); }
    // Since the port was made.
    const memory_traffic& traffic() const { return m_traffic; }

private:
    dma_status transfer(tlm::tlm_command cmd, std::uint64_t addr, unsigned char* data, std::uint64_t len,
                        dma_stream what);
    const tlm::tlm_dmi* find_dmi(std::uint64_t addr, std::uint64_t len, bool is_read) const;
    bool denied(std::uint64_t addr) const;
    bool cached(std::uint64_t addr) const;
    sc_core::sc_time now() const { return sc_core::sc_time_stamp() + m_qk.get_local_time(); }
    void tell(tlm::tlm_command cmd, std::uint64_t addr, std::uint64_t len, dma_stream what,
              const sc_core::sc_time& begin, bool dmi, bool ok);
    void request_dmi(std::uint64_t addr, tlm::tlm_command cmd);
    void count(tlm::tlm_command cmd, dma_stream what, std::uint64_t bytes);
    // An access's time: its latency, plus `accesses` times ceil(bytes / bandwidth) clocks.
    void spend(const sc_core::sc_time& latency, std::uint64_t accesses, std::uint64_t bytes);

    tlm::tlm_fw_transport_if<>* m_fw = nullptr;
    tlm_utils::tlm_quantumkeeper& m_qk;
    std::shared_ptr<spdlog::logger> m_log;
    config m_cfg;
    tlm::tlm_generic_payload m_trans;
    std::vector<tlm::tlm_dmi> m_dmi;  // granted ranges, oldest first
    struct range {
        std::uint64_t start, end;
    };
    std::vector<range> m_denied;  // ranges targets refused to grant
    std::uint64_t m_dmi_accesses = 0;
    std::uint64_t m_transport_accesses = 0;
    memory_traffic m_traffic;
    dma_listener* m_listener = nullptr;
    double m_bandwidth = 0;
    sc_core::sc_time m_clock = sc_core::SC_ZERO_TIME;
    sc_core::sc_time* m_deferred = nullptr;
};

}  // namespace systolic
