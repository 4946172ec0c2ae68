#include "systolic/memory.h"

#include "systolic/log.h"

namespace systolic {

memory::memory(const sc_core::sc_module_name& name, const config& cfg)
    : sc_core::sc_module(name),
      target_socket("target_socket"),
      m_cfg(cfg),
      m_core(cfg.base, cfg.size),
      m_log(get_logger(this->name())) {
    target_socket.register_b_transport(this, &memory::b_transport);
    target_socket.register_transport_dbg(this, &memory::transport_dbg);
    target_socket.register_get_direct_mem_ptr(this, &memory::get_direct_mem_ptr);
}

void memory::resize(std::uint64_t size) {
    target_socket->invalidate_direct_mem_ptr(0, ~std::uint64_t{0});
    m_core.resize(size);
    m_cfg.size = size;
}

tlm::tlm_response_status memory::access(tlm::tlm_generic_payload& trans) {
    const std::uint64_t addr = trans.get_address();
    const unsigned int len = trans.get_data_length();
    if (trans.get_byte_enable_ptr() != nullptr) return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
    if (trans.get_streaming_width() < len) return tlm::TLM_BURST_ERROR_RESPONSE;
    if (!m_core.contains(addr, len)) return tlm::TLM_ADDRESS_ERROR_RESPONSE;
    if (trans.is_read()) m_core.read(addr, trans.get_data_ptr(), len);
    if (trans.is_write()) m_core.write(addr, trans.get_data_ptr(), len);
    return tlm::TLM_OK_RESPONSE;  // an ignore command only has its address checked
}

void memory::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
    trans.set_response_status(access(trans));
    ++m_transactions;
    if (trans.is_response_ok() && trans.get_command() != tlm::TLM_IGNORE_COMMAND) {
        delay += trans.is_write() ? m_cfg.write_latency : m_cfg.read_latency;
        trans.set_dmi_allowed(true);
        m_log->trace("{}", txn_to_string(trans));
    } else {
        m_log->debug("{}", txn_to_string(trans));
    }
}

unsigned int memory::transport_dbg(tlm::tlm_generic_payload& trans) {
    // A debug initiator need only set command, address, data pointer and length (IEEE 1666 debug
    // transport rules, default TLM_MIN_PAYLOAD option): byte enables and streaming width may be left
    // unset (a default payload has a streaming width of 0), so unlike b_transport, no check on them.
    if (trans.get_command() == tlm::TLM_IGNORE_COMMAND) return 0;
    const std::uint64_t addr = trans.get_address();
    const unsigned int len = trans.get_data_length();
    const auto result = trans.is_read() ? m_core.read(addr, trans.get_data_ptr(), len)
                                        : m_core.write(addr, trans.get_data_ptr(), len);
    return result == memory_core::status::ok ? len : 0;
}

bool memory::get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) {
    const std::uint64_t addr = trans.get_address();
    if (!m_core.contains(addr, 1)) {
        // Tell the initiator the range it must not ask about again: the gap below or above us.
        dmi.allow_none();
        const bool below = addr < m_core.base();
        dmi.set_start_address(below ? 0 : m_core.base() + m_core.size());
        dmi.set_end_address(below ? m_core.base() - 1 : ~std::uint64_t{0});
        return false;
    }
    dmi.set_dmi_ptr(m_core.data());
    dmi.set_start_address(m_core.base());
    dmi.set_end_address(m_core.base() + m_core.size() - 1);
    dmi.set_read_latency(m_cfg.read_latency);
    dmi.set_write_latency(m_cfg.write_latency);
    dmi.allow_read_write();
    return true;
}

}  // namespace systolic
