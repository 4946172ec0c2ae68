// A plain TLM-2.0 interconnect for the platforms (vp, soc): initiators bind to target_socket, targets
// to initiator_socket (in the order of their map() entries' ports), and each access is routed by
// address to the target whose range holds all of it, with the range's base subtracted (targets see
// offsets). DMI grants and invalidations are translated both ways. An address no range holds gets
// TLM_ADDRESS_ERROR_RESPONSE. No latency of its own.
#pragma once

#include <tlm_utils/multi_passthrough_initiator_socket.h>
#include <tlm_utils/multi_passthrough_target_socket.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

namespace systolic::components {

class router : public sc_core::sc_module {
public:
    tlm_utils::multi_passthrough_target_socket<router> target_socket;
    tlm_utils::multi_passthrough_initiator_socket<router> initiator_socket;

    explicit router(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name), target_socket("target_socket"), initiator_socket("initiator_socket") {
        target_socket.register_b_transport(this, &router::b_transport);
        target_socket.register_transport_dbg(this, &router::transport_dbg);
        target_socket.register_get_direct_mem_ptr(this, &router::get_direct_mem_ptr);
        initiator_socket.register_invalidate_direct_mem_ptr(this, &router::invalidate_direct_mem_ptr);
    }

    // [base, base + size) goes to the target bound as initiator_socket's port `port`.
    void map(std::uint64_t base, std::uint64_t size, unsigned port, std::string name) {
        m_map.push_back({base, size, port, std::move(name)});
    }

    struct range {
        std::uint64_t base, size;
        unsigned port;
        std::string name;
        std::uint64_t last() const { return base + size - 1; }
    };
    const std::vector<range>& address_map() const { return m_map; }

private:
    const range* decode(std::uint64_t addr, std::uint64_t len) const {
        for (const range& r : m_map)
            if (addr >= r.base && addr - r.base < r.size && len <= r.size - (addr - r.base)) return &r;
        return nullptr;
    }

    void b_transport(int, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        const std::uint64_t addr = t.get_address();
        const range* r = decode(addr, std::max(1u, t.get_data_length()));
        if (!r) {
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        t.set_address(addr - r->base);
        initiator_socket[r->port]->b_transport(t, delay);
        t.set_address(addr);
    }

    unsigned int transport_dbg(int, tlm::tlm_generic_payload& t) {
        const std::uint64_t addr = t.get_address();
        const range* r = decode(addr, std::max(1u, t.get_data_length()));
        if (!r) return 0;
        t.set_address(addr - r->base);
        const unsigned int n = initiator_socket[r->port]->transport_dbg(t);
        t.set_address(addr);
        return n;
    }

    bool get_direct_mem_ptr(int, tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
        const std::uint64_t addr = t.get_address();
        const range* r = decode(addr, 1);
        if (!r) {  // nothing here to grant
            dmi.allow_none();
            dmi.set_start_address(addr);
            dmi.set_end_address(addr);
            return false;
        }
        t.set_address(addr - r->base);
        const bool granted = initiator_socket[r->port]->get_direct_mem_ptr(t, dmi);
        t.set_address(addr);
        // Back to platform addresses, clipped to the range (the pointer moves with the start).
        std::uint64_t start = dmi.get_start_address(),
                      end = std::min<std::uint64_t>(dmi.get_end_address(), r->size - 1);
        dmi.set_start_address(start + r->base);
        dmi.set_end_address(end + r->base);
        return granted;
    }

    void invalidate_direct_mem_ptr(int port, sc_dt::uint64 start, sc_dt::uint64 end) {
        for (const range& r : m_map) {
            if (r.port != unsigned(port) || start >= r.size) continue;
            const std::uint64_t s = r.base + start, e = r.base + std::min<std::uint64_t>(end, r.size - 1);
            for (unsigned i = 0; i < target_socket.size(); ++i)
                target_socket[i]->invalidate_direct_mem_ptr(s, e);
        }
    }

    std::vector<range> m_map;
};

}  // namespace systolic::components
