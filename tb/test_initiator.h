// A reusable TLM-2.0 initiator for tests: typed read<T>/write<T>, block and debug accesses, DMI
// requests and a record of DMI invalidations, each returning what the target answered. Accesses go
// through b_transport from the caller's context without wait(), so they may be made from sc_main or
// a test body, as long as the targets behind the socket never call wait() either.
// Free of GoogleTest on purpose; the EXPECT_TLM_* macros live in tests/tlm_expect.h.
#pragma once

#include <tlm_utils/simple_initiator_socket.h>
#include <cstdint>
#include <systemc>
#include <tlm>
#include <type_traits>

namespace systolic::tb {

class test_initiator : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<test_initiator> initiator_socket;

    explicit test_initiator(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name), initiator_socket("initiator_socket") {
        initiator_socket.register_invalidate_direct_mem_ptr(this, &test_initiator::invalidate_direct_mem_ptr);
    }

    // Reads sizeof(T) bytes straight into value: on an error response, value is whatever the target
    // left there (a well-behaved target leaves it alone). The target's annotated delay is added to
    // *delay when given, and kept in last_delay() either way.
    template <class T>
    tlm::tlm_response_status read(std::uint64_t addr, T& value, sc_core::sc_time* delay = nullptr) {
        static_assert(std::is_trivially_copyable_v<T>, "read<T> copies raw bytes");
        return read_block(addr, &value, sizeof(T), delay);
    }

    template <class T>
    tlm::tlm_response_status write(std::uint64_t addr, const T& value, sc_core::sc_time* delay = nullptr) {
        static_assert(std::is_trivially_copyable_v<T>, "write<T> copies raw bytes");
        return write_block(addr, &value, sizeof(T), delay);
    }

    tlm::tlm_response_status read_block(std::uint64_t addr, void* data, unsigned int len,
                                        sc_core::sc_time* delay = nullptr) {
        return access(tlm::TLM_READ_COMMAND, addr, data, len, delay);
    }

    tlm::tlm_response_status write_block(std::uint64_t addr, const void* data, unsigned int len,
                                         sc_core::sc_time* delay = nullptr) {
        // The payload's data pointer is not const, but a target must not modify it on a write.
        return access(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len, delay);
    }

    // For payloads built by hand (byte enables, streaming width, TLM_IGNORE_COMMAND): sent as is,
    // except that the response status is reset to TLM_INCOMPLETE_RESPONSE first.
    tlm::tlm_response_status transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay) {
        trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        const sc_core::sc_time before = delay;
        initiator_socket->b_transport(trans, delay);
        m_last_dmi_allowed = trans.is_dmi_allowed();
        m_last_delay = delay >= before ? delay - before : sc_core::SC_ZERO_TIME;
        return trans.get_response_status();
    }

    // Debug transport: no delay, no side effects beyond the data. Returns the bytes transferred.
    unsigned int debug_read(std::uint64_t addr, void* data, unsigned int len) {
        return debug(tlm::TLM_READ_COMMAND, addr, data, len);
    }
    unsigned int debug_write(std::uint64_t addr, const void* data, unsigned int len) {
        return debug(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(data), len);
    }

    // Asks for a DMI pointer covering addr. dmi is reset first, so on return it holds exactly what
    // the target filled in: the granted region, or the region it denies DMI for.
    bool get_dmi(std::uint64_t addr, tlm::tlm_dmi& dmi, tlm::tlm_command cmd = tlm::TLM_READ_COMMAND) {
        tlm::tlm_generic_payload trans;
        trans.set_command(cmd);
        trans.set_address(addr);
        dmi.init();
        return initiator_socket->get_direct_mem_ptr(trans, dmi);
    }

    // What the last b_transport through this initiator answered besides the status: the DMI hint,
    // and the delay the target added to the annotation.
    bool last_dmi_allowed() const { return m_last_dmi_allowed; }
    const sc_core::sc_time& last_delay() const { return m_last_delay; }

    // Calls to invalidate_direct_mem_ptr so far, and the range of the latest one.
    std::uint64_t invalidations() const { return m_invalidations; }
    std::uint64_t last_invalidate_start() const { return m_last_invalidate_start; }
    std::uint64_t last_invalidate_end() const { return m_last_invalidate_end; }

private:
    tlm::tlm_response_status access(tlm::tlm_command cmd, std::uint64_t addr, void* data, unsigned int len,
                                    sc_core::sc_time* delay) {
        tlm::tlm_generic_payload trans;
        setup(trans, cmd, addr, data, len);
        sc_core::sc_time local = sc_core::SC_ZERO_TIME;
        const auto status = transport(trans, local);
        if (delay != nullptr) *delay += local;
        return status;
    }

    unsigned int debug(tlm::tlm_command cmd, std::uint64_t addr, void* data, unsigned int len) {
        tlm::tlm_generic_payload trans;
        setup(trans, cmd, addr, data, len);
        return initiator_socket->transport_dbg(trans);
    }

    static void setup(tlm::tlm_generic_payload& trans, tlm::tlm_command cmd, std::uint64_t addr, void* data,
                      unsigned int len) {
        trans.set_command(cmd);
        trans.set_address(addr);
        trans.set_data_ptr(static_cast<unsigned char*>(data));
        trans.set_data_length(len);
        trans.set_streaming_width(len);
        trans.set_byte_enable_ptr(nullptr);
        trans.set_byte_enable_length(0);
        trans.set_dmi_allowed(false);
        trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    }

    void invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
        ++m_invalidations;
        m_last_invalidate_start = start;
        m_last_invalidate_end = end;
    }

    bool m_last_dmi_allowed = false;
    sc_core::sc_time m_last_delay = sc_core::SC_ZERO_TIME;
    std::uint64_t m_invalidations = 0;
    std::uint64_t m_last_invalidate_start = 0;
    std::uint64_t m_last_invalidate_end = 0;
};

}  // namespace systolic::tb
