#include "systolic/dma_port.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "systolic/log.h"
#include "systolic/memory_system.h"

namespace systolic {

dma_port::dma_port(tlm_utils::tlm_quantumkeeper& keeper, std::shared_ptr<spdlog::logger> log,
                   const config& cfg)
    : m_qk(keeper), m_log(std::move(log)), m_cfg(cfg) {}

dma_status dma_port::read(std::uint64_t addr, void* data, std::uint64_t len, dma_stream what) {
    return transfer(tlm::TLM_READ_COMMAND, addr, static_cast<unsigned char*>(data), len, what);
}

dma_status dma_port::write(std::uint64_t addr, const void* data, std::uint64_t len, dma_stream what) {
    // b_transport takes a non-const pointer; a write's data is only read.
    return transfer(tlm::TLM_WRITE_COMMAND, addr, static_cast<unsigned char*>(const_cast<void*>(data)), len,
                    what);
}

dma_status dma_port::read_block(std::uint64_t addr, std::uint64_t rows, std::uint64_t row_bytes,
                                std::uint64_t stride, void* data, std::uint64_t data_stride,
                                dma_stream what) {
    if (rows == 0 || row_bytes == 0) return {};
    auto* out = static_cast<unsigned char*>(data);
    const std::uint64_t span = (rows - 1) * stride + row_bytes;
    if (const tlm::tlm_dmi* d = find_dmi(addr, span, true)) {
        const sc_core::sc_time begin = now();
        const unsigned char* p = d->get_dmi_ptr() + (addr - d->get_start_address());
        for (std::uint64_t r = 0; r < rows; ++r)
            std::memcpy(out + r * data_stride, p + r * stride, row_bytes);
        spend(d->get_read_latency() * double(rows), rows, row_bytes);
        m_dmi_accesses += rows;
        count(tlm::TLM_READ_COMMAND, what, rows * row_bytes);
        if (m_listener && !m_deferred)
            tell(tlm::TLM_READ_COMMAND, addr, span, what, begin, true, true);  // the whole block
        if (!m_deferred && m_qk.need_sync()) m_qk.sync();
        return {};
    }
    for (std::uint64_t r = 0; r < rows; ++r) {
        const dma_status st = read(addr + r * stride, out + r * data_stride, row_bytes, what);
        if (!st.ok()) return st;
    }
    return {};
}

const tlm::tlm_dmi* dma_port::find_dmi(std::uint64_t addr, std::uint64_t len, bool is_read) const {
    for (const auto& d : m_dmi) {
        if (addr >= d.get_start_address() && addr + len - 1 <= d.get_end_address() &&
            (is_read ? d.is_read_allowed() : d.is_write_allowed()))
            return &d;
    }
    return nullptr;
}

dma_status dma_port::transfer(tlm::tlm_command cmd, std::uint64_t addr, unsigned char* data,
                              std::uint64_t len, dma_stream what) {
    if (len == 0) return {};
    const bool is_read = cmd == tlm::TLM_READ_COMMAND;
    const sc_core::sc_time begin = m_listener ? now() : sc_core::SC_ZERO_TIME;
    if (const tlm::tlm_dmi* d = find_dmi(addr, len, is_read)) {
        unsigned char* p = d->get_dmi_ptr() + (addr - d->get_start_address());
        if (is_read) {
            std::memcpy(data, p, len);
            spend(d->get_read_latency(), 1, len);
        } else {
            std::memcpy(p, data, len);
            spend(d->get_write_latency(), 1, len);
        }
        ++m_dmi_accesses;
        count(cmd, what, len);
        if (m_listener && !m_deferred) tell(cmd, addr, len, what, begin, true, true);
        if (!m_deferred && m_qk.need_sync()) m_qk.sync();
        return {};
    }
    if (!m_fw)
        return {tlm::TLM_GENERIC_ERROR_RESPONSE,
                std::string("DMA port is not bound, moving ") + to_string(what)};

    m_trans.set_command(cmd);
    m_trans.set_address(addr);
    m_trans.set_data_ptr(data);
    m_trans.set_data_length(static_cast<unsigned int>(len));
    m_trans.set_streaming_width(static_cast<unsigned int>(len));
    m_trans.set_byte_enable_ptr(nullptr);
    m_trans.set_byte_enable_length(0);
    m_trans.set_dmi_allowed(false);
    m_trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    // The target adds its latency to the local time it is given; deferred, that is counted from zero.
    sc_core::sc_time delay = m_deferred ? sc_core::SC_ZERO_TIME : m_qk.get_local_time();
    m_fw->b_transport(m_trans, delay);
    if (m_deferred) {
        *m_deferred += delay;
    } else {
        m_qk.set(delay);  // a target that synchronised may hand back less than it was given
        spend(sc_core::SC_ZERO_TIME, 1, len);
    }
    ++m_transport_accesses;
    m_log->trace("{}", txn_to_string(m_trans));
    if (m_listener && !m_deferred) tell(cmd, addr, len, what, begin, false, m_trans.is_response_ok());
    if (m_trans.is_response_ok()) count(cmd, what, len);
    if (!m_trans.is_response_ok())
        return {m_trans.get_response_status(),
                "bus error while moving " + std::string(to_string(what)) + ": " + txn_to_string(m_trans)};
    if (!m_deferred && m_qk.need_sync()) m_qk.sync();
    // A range already cached for this address, even one without this direction's permission, is what
    // the target grants: asking again would only cache copies of it.
    if (m_trans.is_dmi_allowed() && !denied(addr) && !cached(addr)) request_dmi(addr, cmd);
    return {};
}

bool dma_port::cached(std::uint64_t addr) const {
    return std::any_of(m_dmi.begin(), m_dmi.end(), [addr](const tlm::tlm_dmi& d) {
        return addr >= d.get_start_address() && addr <= d.get_end_address();
    });
}

void dma_port::tell(tlm::tlm_command cmd, std::uint64_t addr, std::uint64_t len, dma_stream what,
                    const sc_core::sc_time& begin, bool dmi, bool ok) {
    dma_transfer t;
    t.command = cmd;
    t.address = addr;
    t.length = len;
    t.what = what;
    t.begin = begin;
    t.end = now();
    t.dmi = dmi;
    t.ok = ok;
    m_listener->on_transfer(t);
}

void dma_port::spend(const sc_core::sc_time& latency, std::uint64_t accesses, std::uint64_t bytes) {
    if (m_deferred) {
        *m_deferred += latency;
        return;
    }
    sc_core::sc_time t = latency;
    if (m_bandwidth > 0)
        t += m_clock * (double(accesses) * double(transfer_cycles(bytes, m_bandwidth)));  // never wraps
    m_qk.inc(t);
}

void dma_port::count(tlm::tlm_command cmd, dma_stream what, std::uint64_t bytes) {
    const bool read = cmd == tlm::TLM_READ_COMMAND;
    switch (what) {
        case dma_stream::a:
            if (read) m_traffic.a_read += bytes;
            break;
        case dma_stream::b:
            if (read) m_traffic.b_read += bytes;
            break;
        case dma_stream::c:
            if (!read) m_traffic.c_written += bytes;
            break;
        case dma_stream::partial_sums:
            (read ? m_traffic.partials_read : m_traffic.partials_written) += bytes;
            break;
        case dma_stream::scale_vector:  // the output stage's parameters: no traffic of a matrix
        case dma_stream::zero_point_vector:
            break;
    }
}

bool dma_port::denied(std::uint64_t addr) const {
    return std::any_of(m_denied.begin(), m_denied.end(),
                       [addr](const range& r) { return addr >= r.start && addr <= r.end; });
}

void dma_port::request_dmi(std::uint64_t addr, tlm::tlm_command cmd) {
    tlm::tlm_generic_payload trans;
    trans.set_address(addr);
    trans.set_command(cmd);
    tlm::tlm_dmi dmi;
    if (m_fw->get_direct_mem_ptr(trans, dmi)) {
        // A grant must cover the address it was asked for; anything else is not used.
        if (addr < dmi.get_start_address() || addr > dmi.get_end_address()) {
            m_log->warn("DMI grant 0x{:x}-0x{:x} does not cover 0x{:x}; ignored", dmi.get_start_address(),
                        dmi.get_end_address(), addr);
            m_denied.push_back({addr, addr});
            return;
        }
        m_log->debug("DMI granted 0x{:x}-0x{:x} read={} write={}", dmi.get_start_address(),
                     dmi.get_end_address(), dmi.is_read_allowed(), dmi.is_write_allowed());
        if (m_dmi.size() >= m_cfg.dmi_entries) m_dmi.erase(m_dmi.begin());
        m_dmi.push_back(dmi);
    } else {
        // The target names the range it will not grant; do not ask again inside it.
        m_denied.push_back({dmi.get_start_address(), dmi.get_end_address()});
    }
}

void dma_port::invalidate(std::uint64_t start, std::uint64_t end) {
    m_denied.clear();  // a target's map changed: it may grant again
    const auto before = m_dmi.size();
    m_dmi.erase(std::remove_if(m_dmi.begin(), m_dmi.end(),
                               [&](const tlm::tlm_dmi& d) {
                                   return start <= d.get_end_address() && end >= d.get_start_address();
                               }),
                m_dmi.end());
    if (m_dmi.size() != before) m_log->debug("DMI revoked 0x{:x}-0x{:x}", start, end);
}

}  // namespace systolic
