// The shell of the platforms' small devices (uart.h, timer.h, finisher.h): a TLM target of `size`
// bytes of registers that the router reaches with offsets. Each access is 1 to 8 bytes, no byte
// enables, no streaming, inside the window, and is handed to the device's read() or write() with
// the time it happens at (the kernel's plus the initiator's offset); an access the device refuses,
// or outside the window, gets TLM_ADDRESS_ERROR_RESPONSE and changes nothing. The devices answer
// with no latency of their own. Debug reads see what a read would, without its effects (the devices
// have none on reads); debug writes are refused.
#pragma once

#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <string>
#include <systemc>
#include <tlm>

namespace systolic::components {

// One register of a device, by its offset in the device's window, for traces and logs. Each device
// lists its own (uart::registers, ...); a platform's C header re-exports the offsets for firmware.
struct mmio_register {
    std::uint64_t offset;
    const char* name;
};

// The name of the register at `offset` ("" when none starts there).
template <std::size_t N>
std::string register_name(const mmio_register (&registers)[N], std::uint64_t offset) {
    for (const mmio_register& r : registers)
        if (r.offset == offset) return r.name;
    return "";
}

class mmio_device : public sc_core::sc_module {
public:
    tlm_utils::simple_target_socket<mmio_device> target_socket;

protected:
    mmio_device(const sc_core::sc_module_name& name, std::uint64_t size)
        : sc_core::sc_module(name), target_socket("target_socket"), m_size(size) {
        target_socket.register_b_transport(this, &mmio_device::b_transport);
        target_socket.register_transport_dbg(this, &mmio_device::transport_dbg);
    }

    // false: refused (an error response, and nothing happened).
    virtual bool read(std::uint64_t offset, unsigned char* data, unsigned length,
                      const sc_core::sc_time& at) = 0;
    virtual bool write(std::uint64_t offset, const unsigned char* data, unsigned length,
                       const sc_core::sc_time& at) = 0;

    // The bytes [offset, offset + length) of a little-endian register at `reg` of `bytes` bytes,
    // when the access lies inside it.
    static bool within(std::uint64_t offset, unsigned length, std::uint64_t reg, unsigned bytes) {
        return offset >= reg && offset - reg < bytes && length <= bytes - (offset - reg);
    }

private:
    tlm::tlm_response_status check(const tlm::tlm_generic_payload& t) const {
        const std::uint64_t offset = t.get_address();
        const unsigned length = t.get_data_length();
        if (t.get_byte_enable_ptr()) return tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE;
        if (t.get_streaming_width() < length) return tlm::TLM_BURST_ERROR_RESPONSE;
        if (length == 0 || length > 8 || offset >= m_size || length > m_size - offset)
            return tlm::TLM_ADDRESS_ERROR_RESPONSE;
        return tlm::TLM_OK_RESPONSE;
    }

    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        tlm::tlm_response_status status = check(t);
        const sc_core::sc_time at = sc_core::sc_time_stamp() + delay;
        if (status == tlm::TLM_OK_RESPONSE) {
            bool ok = true;
            if (t.is_read())
                ok = read(t.get_address(), t.get_data_ptr(), t.get_data_length(), at);
            else if (t.is_write())
                ok = write(t.get_address(), t.get_data_ptr(), t.get_data_length(), at);
            status = ok ? tlm::TLM_OK_RESPONSE : tlm::TLM_ADDRESS_ERROR_RESPONSE;
        }
        t.set_response_status(status);
    }

    unsigned int transport_dbg(tlm::tlm_generic_payload& t) {
        if (!t.is_read() || check(t) != tlm::TLM_OK_RESPONSE) return 0;
        return read(t.get_address(), t.get_data_ptr(), t.get_data_length(), sc_core::sc_time_stamp())
                   ? t.get_data_length()
                   : 0;
    }

    std::uint64_t m_size;
};

}  // namespace systolic::components
