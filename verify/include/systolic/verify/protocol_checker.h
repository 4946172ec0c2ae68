// A TLM-2.0 base-protocol checker for the loosely-timed style (IEEE 1666-2011, clauses 14-15), to
// sit between an initiator and a target: it forwards b_transport, transport_dbg, get_direct_mem_ptr
// and invalidate_direct_mem_ptr unchanged and checks each against the rules below. A violation is
// reported as one line through the handler (default: SC_REPORT_ERROR, message type
// "systolic/protocol_checker"), and kept in violations().
//
// The initiator's obligations, checked before forwarding:
//   b_transport   command READ, WRITE or IGNORE; response status INCOMPLETE; DMI hint false;
//                 for READ and WRITE a data pointer, a length > 0 and a streaming width > 0;
//                 a byte-enable array has a length > 0 and holds only 0x00 and 0xff
//   transport_dbg command READ, WRITE or IGNORE; a data pointer when the length is > 0
//   get_direct_mem_ptr  command READ or WRITE
// A transaction that breaks one of them is not forwarded (it could make the target write through a
// null pointer): b_transport answers TLM_GENERIC_ERROR_RESPONSE, transport_dbg 0, DMI false.
//
// The target's obligations, checked on return:
//   b_transport   a response status other than INCOMPLETE; command, address, data pointer, length,
//                 streaming width and byte enables unchanged; a WRITE's data unchanged
//   transport_dbg returns at most the length; no side effects: payload attributes and a WRITE's data
//                 unchanged, no delta cycle or time passed, and memory the target maps for DMI
//                 unchanged around the access (for a READ, also inside it)
//   get_direct_mem_ptr  start <= end and the requested address inside [start, end], granted or
//                 not; a grant has a pointer and allows the requested access; a refusal allows none;
//                 a new grant that overlaps a live one maps the same addresses to the same bytes
//                 (the target must invalidate before it moves or resizes its storage)
//   invalidate_direct_mem_ptr  start <= end; the range stops every grant it covers being live
//
// What it cannot see: an initiator that keeps using a DMI pointer after its invalidation (those
// accesses never pass a socket). The checker forwards every invalidation, and the tests check the
// initiator's record of them.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <functional>
#include <string>
#include <systemc>
#include <tlm>
#include <vector>

namespace systolic::verify {

class protocol_checker : public sc_core::sc_module {
public:
    struct config {
        std::size_t write_data_limit = 1 << 16;  // bytes of a WRITE compared before and after (0: none)
        std::size_t debug_window = 64;           // bytes either side of a debug access watched via DMI
        bool probe_dmi_for_debug = true;         // ask the target for DMI to watch debug accesses
    };
    using violation_handler = std::function<void(const std::string&)>;

    tlm_utils::simple_target_socket<protocol_checker> target_socket;
    tlm_utils::simple_initiator_socket<protocol_checker> initiator_socket;

    explicit protocol_checker(const sc_core::sc_module_name& name) : protocol_checker(name, config{}) {}
    protocol_checker(const sc_core::sc_module_name& name, const config& cfg);

    // Replaces the default handler (SC_REPORT_ERROR); nullptr restores it. violations() records
    // them either way.
    void on_violation(violation_handler handler);
    const std::vector<std::string>& violations() const { return m_violations; }
    void clear_violations() { m_violations.clear(); }
    // Transactions and calls checked so far, so that a test can tell "no violations" from "nothing seen".
    std::uint64_t checked() const { return m_checked; }

private:
    struct grant {
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        unsigned char* ptr = nullptr;  // the byte for `start`
        bool read = false;
        bool write = false;
    };
    // Attributes a target must not change.
    struct attributes {
        tlm::tlm_command command;
        std::uint64_t address;
        unsigned char* data;
        unsigned int length;
        unsigned int streaming_width;
        unsigned char* byte_enable;
        unsigned int byte_enable_length;
    };
    static attributes attributes_of(const tlm::tlm_generic_payload& t);

    void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end);

    bool initiator_ok(const tlm::tlm_generic_payload& t, const char* call);
    void check_unchanged(const attributes& before, const tlm::tlm_generic_payload& t, const char* call);
    void check_grant(std::uint64_t addr, tlm::tlm_command cmd, bool granted, const tlm::tlm_dmi& dmi);
    const grant* live_grant(std::uint64_t addr, std::uint64_t len) const;
    void violation(const std::string& rule, const tlm::tlm_generic_payload* t = nullptr);

    config m_cfg;
    violation_handler m_handler;
    std::vector<std::string> m_violations;
    std::vector<grant> m_grants;
    std::uint64_t m_checked = 0;
    std::vector<unsigned char> m_written;  // b_transport: a WRITE's data before the call
    bool m_in_transport = false;           // m_written is in use by a b_transport
};

}  // namespace systolic::verify
