#include "systolic/verify/protocol_checker.h"

#include <algorithm>
#include <cstring>
#include <sstream>

#include "systolic/log.h"

namespace systolic::verify {
namespace {

bool is_read_or_write(tlm::tlm_command c) {
    return c == tlm::TLM_READ_COMMAND || c == tlm::TLM_WRITE_COMMAND;
}

bool is_valid_command(tlm::tlm_command c) {
    return is_read_or_write(c) || c == tlm::TLM_IGNORE_COMMAND;
}

std::string hex(std::uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

}  // namespace

protocol_checker::protocol_checker(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      target_socket("target_socket"),
      initiator_socket("initiator_socket"),
      m_cfg(cfg) {
    target_socket.register_b_transport(this, &protocol_checker::b_transport);
    target_socket.register_transport_dbg(this, &protocol_checker::transport_dbg);
    target_socket.register_get_direct_mem_ptr(this, &protocol_checker::get_direct_mem_ptr);
    initiator_socket.register_invalidate_direct_mem_ptr(this, &protocol_checker::invalidate_direct_mem_ptr);
    on_violation(nullptr);
}

void protocol_checker::on_violation(violation_handler handler) {
    if (!handler) {
        handler = [](const std::string& message) {
            SC_REPORT_ERROR("systolic/protocol_checker", message.c_str());
        };
    }
    m_handler = std::move(handler);
}

protocol_checker::attributes protocol_checker::attributes_of(const tlm::tlm_generic_payload& t) {
    return {t.get_command(),         t.get_address(),         t.get_data_ptr(),          t.get_data_length(),
            t.get_streaming_width(), t.get_byte_enable_ptr(), t.get_byte_enable_length()};
}

void protocol_checker::violation(const std::string& rule, const tlm::tlm_generic_payload* t) {
    std::string line = std::string(name()) + ": " + rule;
    if (t != nullptr) line += " [" + txn_to_string(*t) + "]";
    m_violations.push_back(line);
    m_handler(line);
}

bool protocol_checker::initiator_ok(const tlm::tlm_generic_payload& t, const char* call) {
    const std::size_t before = m_violations.size();
    const std::string in = std::string(call) + ": ";
    const tlm::tlm_command cmd = t.get_command();
    if (!is_valid_command(cmd))
        violation(in + "command " + std::to_string(int(cmd)) + " is not READ, WRITE or IGNORE");
    const bool b = std::strcmp(call, "b_transport") == 0;
    if (b) {
        if (t.get_response_status() != tlm::TLM_INCOMPLETE_RESPONSE)
            violation(in + "the initiator must set the response status to TLM_INCOMPLETE_RESPONSE", &t);
        if (t.is_dmi_allowed()) violation(in + "the initiator must set the DMI hint to false", &t);
        if (is_read_or_write(cmd)) {
            if (t.get_data_length() == 0) violation(in + "data length 0", &t);
            if (t.get_data_ptr() == nullptr) violation(in + "null data pointer", &t);
            if (t.get_streaming_width() == 0) violation(in + "streaming width 0", &t);
        }
        if (t.get_byte_enable_ptr() != nullptr) {
            if (t.get_byte_enable_length() == 0) {
                violation(in + "byte-enable pointer with a byte-enable length of 0", &t);
            } else {
                for (unsigned int i = 0; i < t.get_byte_enable_length(); ++i) {
                    const unsigned char be = t.get_byte_enable_ptr()[i];
                    if (be != 0x00 && be != 0xff) {
                        violation(
                            in + "byte enable " + std::to_string(i) + " is " + hex(be) + ", not 0x00 or 0xff",
                            &t);
                        break;
                    }
                }
            }
        }
    } else if (t.get_data_length() > 0 && t.get_data_ptr() == nullptr && cmd != tlm::TLM_IGNORE_COMMAND) {
        violation(in + "null data pointer", &t);
    }
    return m_violations.size() == before;
}

void protocol_checker::check_unchanged(const attributes& before, const tlm::tlm_generic_payload& t,
                                       const char* call) {
    const attributes after = attributes_of(t);
    if (after.command == before.command && after.address == before.address && after.data == before.data &&
        after.length == before.length && after.streaming_width == before.streaming_width &&
        after.byte_enable == before.byte_enable && after.byte_enable_length == before.byte_enable_length)
        return;  // the usual case, without building any message
    const std::string in = std::string(call) + ": the target changed the ";
    if (after.command != before.command) violation(in + "command", &t);
    if (after.address != before.address) violation(in + "address from " + hex(before.address), &t);
    if (after.data != before.data) violation(in + "data pointer", &t);
    if (after.length != before.length)
        violation(in + "data length from " + std::to_string(before.length), &t);
    if (after.streaming_width != before.streaming_width)
        violation(in + "streaming width from " + std::to_string(before.streaming_width), &t);
    if (after.byte_enable != before.byte_enable || after.byte_enable_length != before.byte_enable_length)
        violation(in + "byte enables", &t);
}

void protocol_checker::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    ++m_checked;
    if (!initiator_ok(trans, "b_transport")) {
        trans.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
        return;
    }
    const attributes before = attributes_of(trans);
    // A WRITE's data, to compare afterwards. The buffer is reused (no allocation per transaction)
    // unless a target that waits lets another b_transport in through this checker meanwhile.
    std::vector<unsigned char> nested;
    std::vector<unsigned char>& written = m_in_transport ? nested : m_written;
    written.clear();
    if (trans.is_write() && trans.get_data_length() <= m_cfg.write_data_limit)
        written.assign(trans.get_data_ptr(), trans.get_data_ptr() + trans.get_data_length());

    const bool outer = !m_in_transport;
    m_in_transport = true;
    initiator_socket->b_transport(trans, delay);
    if (outer) m_in_transport = false;

    if (trans.get_response_status() == tlm::TLM_INCOMPLETE_RESPONSE)
        violation("b_transport: the target left the response status TLM_INCOMPLETE_RESPONSE", &trans);
    check_unchanged(before, trans, "b_transport");
    if (!written.empty() && trans.get_data_ptr() == before.data &&
        std::memcmp(written.data(), before.data, written.size()) != 0)
        violation("b_transport: the target modified the data of a WRITE", &trans);
}

const protocol_checker::grant* protocol_checker::live_grant(std::uint64_t addr, std::uint64_t len) const {
    for (const grant& g : m_grants) {
        if (addr >= g.start && len > 0 && addr + len - 1 <= g.end && addr + len - 1 >= addr) return &g;
    }
    return nullptr;
}

unsigned int protocol_checker::transport_dbg(tlm::tlm_generic_payload& trans) {
    ++m_checked;
    if (!initiator_ok(trans, "transport_dbg")) return 0;
    const attributes before = attributes_of(trans);
    const std::uint64_t addr = trans.get_address();
    const unsigned int len = trans.get_data_length();

    // A window of memory around the access, seen through a live DMI grant (asked for if need be).
    const std::uint64_t w = m_cfg.debug_window;
    const std::uint64_t lo = addr >= w ? addr - w : 0;
    const std::uint64_t hi =
        addr + len + w < addr ? ~std::uint64_t{0} : addr + len + w;  // one past the window
    const grant* g = live_grant(addr, std::max(len, 1u));
    if (g == nullptr && m_cfg.probe_dmi_for_debug && is_read_or_write(trans.get_command())) {
        tlm::tlm_generic_payload probe;
        probe.set_command(tlm::TLM_READ_COMMAND);
        probe.set_address(addr);
        tlm::tlm_dmi dmi;
        get_direct_mem_ptr(probe, dmi);  // checked and recorded like any other request
        g = live_grant(addr, std::max(len, 1u));
    }
    std::uint64_t w_lo = 0, w_hi = 0;
    std::vector<unsigned char> image;
    if (g != nullptr && g->read) {
        w_lo = std::max(lo, g->start);
        w_hi = std::min(hi - 1, g->end) + 1;
        image.assign(g->ptr + (w_lo - g->start), g->ptr + (w_hi - g->start));
    }
    std::vector<unsigned char> written;
    if (trans.is_write() && trans.get_data_ptr() != nullptr)
        written.assign(trans.get_data_ptr(), trans.get_data_ptr() + len);
    const sc_core::sc_time time_before = sc_core::sc_time_stamp();
    const sc_dt::uint64 deltas_before = sc_core::sc_delta_count();

    const unsigned int n = initiator_socket->transport_dbg(trans);

    if (n > len)
        violation("transport_dbg: the target returned " + std::to_string(n) + " bytes for a length of " +
                      std::to_string(len),
                  &trans);
    check_unchanged(before, trans, "transport_dbg");
    if (sc_core::sc_time_stamp() != time_before || sc_core::sc_delta_count() != deltas_before)
        violation("transport_dbg: time or delta cycles passed during a debug access", &trans);
    if (!written.empty() && std::memcmp(written.data(), trans.get_data_ptr(), written.size()) != 0)
        violation("transport_dbg: the target modified the data of a WRITE", &trans);
    if (!image.empty()) {
        for (std::uint64_t a = w_lo; a < w_hi; ++a) {
            const bool inside = a >= addr && a < addr + len;
            if (trans.is_write() && inside) continue;  // a debug write may change exactly its bytes
            if (g->ptr[a - g->start] != image[a - w_lo]) {
                violation("transport_dbg: side effect: the byte at " + hex(a) + " changed during a debug " +
                              (trans.is_write() ? "write" : "read"),
                          &trans);
                break;
            }
        }
    }
    return n;
}

void protocol_checker::check_grant(std::uint64_t addr, tlm::tlm_command cmd, bool granted,
                                   const tlm::tlm_dmi& dmi) {
    const std::uint64_t start = dmi.get_start_address(), end = dmi.get_end_address();
    const std::string range = "[" + hex(start) + ", " + hex(end) + "]";
    const std::string in = "get_direct_mem_ptr(" + hex(addr) + "): ";
    if (start > end) violation(in + "start after end in " + range);
    if (addr < start || addr > end)
        violation(in + "the range " + range + " does not contain the requested address");
    if (!granted) {
        if (dmi.is_read_allowed() || dmi.is_write_allowed())
            violation(in + "refused, but the descriptor allows access");
        return;
    }
    if (dmi.get_dmi_ptr() == nullptr) violation(in + "granted with a null pointer");
    if (cmd == tlm::TLM_READ_COMMAND && !dmi.is_read_allowed())
        violation(in + "a read grant that does not allow reads");
    if (cmd == tlm::TLM_WRITE_COMMAND && !dmi.is_write_allowed())
        violation(in + "a write grant that does not allow writes");
    if (start > end || dmi.get_dmi_ptr() == nullptr) return;

    grant fresh{start, end, dmi.get_dmi_ptr(), dmi.is_read_allowed(), dmi.is_write_allowed()};
    for (const grant& old : m_grants) {
        const std::uint64_t lo = std::max(old.start, fresh.start), hi = std::min(old.end, fresh.end);
        if (lo > hi) continue;
        if (old.ptr + (lo - old.start) != fresh.ptr + (lo - fresh.start)) {
            violation(in + "the target maps [" + hex(lo) + ", " + hex(hi) +
                      "] to other memory than its live grant, without invalidate_direct_mem_ptr");
            break;
        }
    }
    m_grants.erase(
        std::remove_if(m_grants.begin(), m_grants.end(),
                       [&](const grant& g) { return g.start >= fresh.start && g.end <= fresh.end; }),
        m_grants.end());
    m_grants.push_back(fresh);
}

bool protocol_checker::get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) {
    ++m_checked;
    const tlm::tlm_command cmd = trans.get_command();
    if (!is_read_or_write(cmd)) {
        violation("get_direct_mem_ptr: command " + std::to_string(int(cmd)) + " is not READ or WRITE",
                  &trans);
        dmi.allow_none();
        return false;
    }
    const std::uint64_t addr = trans.get_address();
    const bool granted = initiator_socket->get_direct_mem_ptr(trans, dmi);
    check_grant(addr, cmd, granted, dmi);
    return granted;
}

void protocol_checker::invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
    ++m_checked;
    if (start > end) violation("invalidate_direct_mem_ptr: start " + hex(start) + " after end " + hex(end));
    m_grants.erase(std::remove_if(m_grants.begin(), m_grants.end(),
                                  [&](const grant& g) { return g.start <= end && g.end >= start; }),
                   m_grants.end());
    target_socket->invalidate_direct_mem_ptr(start, end);
}

}  // namespace systolic::verify
