// TLM-2.0 memory target: a memory_core behind a target socket, with b_transport (annotated
// latency), transport_dbg and DMI. Out-of-range accesses get TLM_ADDRESS_ERROR_RESPONSE and change
// nothing. Like the Accellera LT examples, it supports neither byte enables
// (TLM_BYTE_ENABLE_ERROR_RESPONSE) nor streaming (TLM_BURST_ERROR_RESPONSE).
#pragma once

#include <spdlog/spdlog.h>

#include <tlm_utils/simple_target_socket.h>
#include <cstdint>
#include <memory>
#include <systemc>
#include <tlm>

#include "systolic/memory_core.h"

namespace systolic {

class memory : public sc_core::sc_module {
public:
    struct config {
        std::uint64_t base = 0;
        std::uint64_t size = 0;
        sc_core::sc_time read_latency = sc_core::sc_time(10, sc_core::SC_NS);
        sc_core::sc_time write_latency = sc_core::sc_time(10, sc_core::SC_NS);
    };

    tlm_utils::simple_target_socket<memory> target_socket;

    memory(const sc_core::sc_module_name& name, const config& cfg);

    const config& cfg() const { return m_cfg; }
    memory_core& core() { return m_core; }
    const memory_core& core() const { return m_core; }

    // Changes the size between jobs. Revokes every DMI pointer first, since they point into the
    // old storage. The new contents are zero.
    void resize(std::uint64_t size);

    std::uint64_t transactions() const { return m_transactions; }

private:
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);

    // Checks and performs one access; no effect unless the response is TLM_OK_RESPONSE.
    tlm::tlm_response_status access(tlm::tlm_generic_payload& trans);

    config m_cfg;
    memory_core m_core;
    std::uint64_t m_transactions = 0;
    std::shared_ptr<spdlog::logger> m_log;
};

}  // namespace systolic
