// A pass-through TLM monitor between an initiator and a target, so that the scoreboard sees every
// write on its way to memory. It forwards b_transport, transport_dbg and DMI, but grants DMI for
// reads only (a request for write access is refused): writes must stay on b_transport, where they
// are observed.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>
#include <functional>
#include <systemc>
#include <tlm>

namespace systolic::verify {

class bus_monitor : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<bus_monitor> target_socket;
    tlm_utils::simple_initiator_socket<bus_monitor> initiator_socket;

    // Called for every write (or read) attempt after the target answered (the response is set).
    std::function<void(const tlm::tlm_generic_payload&)> on_write;
    std::function<void(const tlm::tlm_generic_payload&)> on_read;
    // With false, reads are not granted DMI either, so that on_read sees every one of them.
    bool dmi_reads = true;

    explicit bus_monitor(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name), target_socket("target_socket"), initiator_socket("initiator_socket") {
        target_socket.register_b_transport(this, &bus_monitor::b_transport);
        target_socket.register_transport_dbg(this, &bus_monitor::transport_dbg);
        target_socket.register_get_direct_mem_ptr(this, &bus_monitor::get_direct_mem_ptr);
        initiator_socket.register_invalidate_direct_mem_ptr(this, &bus_monitor::invalidate_direct_mem_ptr);
    }

private:
    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
        initiator_socket->b_transport(trans, delay);
        if (trans.is_write() && on_write) on_write(trans);
        if (trans.is_read() && on_read) on_read(trans);
    }

    unsigned int transport_dbg(tlm::tlm_generic_payload& trans) {
        return initiator_socket->transport_dbg(trans);
    }

    // A request for write access is refused outright, over the range the target named: answering
    // it with a read-only grant would break the base protocol (a grant allows what was asked for),
    // and the protocol checker says so. The initiator then keeps its writes on b_transport.
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) {
        const bool granted = initiator_socket->get_direct_mem_ptr(trans, dmi);
        if (!granted || !dmi.is_read_allowed() || !dmi_reads || !trans.is_read()) {
            dmi.allow_none();
            return false;
        }
        dmi.allow_read();
        return true;
    }

    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
        target_socket->invalidate_direct_mem_ptr(start, end);
    }
};

}  // namespace systolic::verify
