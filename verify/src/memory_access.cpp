#include "systolic/verify/memory_access.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>

namespace systolic::verify {

namespace {

std::string hex(std::uint64_t v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

}  // namespace

void core_memory_access::read(std::uint64_t address, std::uint8_t* data, std::uint64_t size) {
    if (const auto st = m_mem.core().read(address, data, size); st != decltype(st)::ok)
        throw std::out_of_range("verify: no memory at " + hex(address) + " for " + std::to_string(size) +
                                " bytes");
}

void core_memory_access::write(std::uint64_t address, const std::uint8_t* data, std::uint64_t size) {
    if (const auto st = m_mem.core().write(address, data, size); st != decltype(st)::ok)
        throw std::out_of_range("verify: no memory at " + hex(address) + " for " + std::to_string(size) +
                                " bytes");
}

const std::uint8_t* core_memory_access::view(std::uint64_t address, std::uint64_t size) {
    const auto& core = m_mem.core();
    if (address < core.base() || address - core.base() > core.size() ||
        size > core.size() - (address - core.base()))
        return nullptr;
    return m_mem.core().data() + (address - core.base());
}

void debug_memory_access::reserve(std::uint64_t size) {
    if (size > m_size)
        throw std::length_error("verify: the job needs " + std::to_string(size) + " bytes of memory from " +
                                hex(m_base) + ", the RAM has " + std::to_string(m_size));
}

void debug_memory_access::read(std::uint64_t address, std::uint8_t* data, std::uint64_t size) {
    if (const std::uint8_t* p = view(address, size))
        std::memcpy(data, p, size);
    else
        transfer(tlm::TLM_READ_COMMAND, address, data, size);
}

const std::uint8_t* debug_memory_access::view(std::uint64_t address, std::uint64_t size) {
    if (size == 0 || address + size < address) return nullptr;
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(address);
    tlm::tlm_dmi dmi;
    if (!m_socket->get_direct_mem_ptr(t, dmi) || !dmi.is_read_allowed() || dmi.get_dmi_ptr() == nullptr ||
        dmi.get_start_address() > address || dmi.get_end_address() < address + (size - 1))
        return nullptr;
    return dmi.get_dmi_ptr() + (address - dmi.get_start_address());
}

void debug_memory_access::write(std::uint64_t address, const std::uint8_t* data, std::uint64_t size) {
    // transport_dbg takes a non-const pointer for both directions; a write does not change the data.
    transfer(tlm::TLM_WRITE_COMMAND, address, const_cast<std::uint8_t*>(data), size);
}

void debug_memory_access::transfer(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data,
                                   std::uint64_t size) {
    // A target may serve less than asked per call (IEEE 1666-2011, 14.10): go on where it stopped.
    constexpr std::uint64_t chunk = 1 << 20;
    while (size > 0) {
        tlm::tlm_generic_payload t;
        const auto n = static_cast<unsigned int>(std::min(size, chunk));
        t.set_command(cmd);
        t.set_address(address);
        t.set_data_ptr(data);
        t.set_data_length(n);
        const unsigned int done = m_socket->transport_dbg(t);
        if (done == 0 || done > n)
            throw std::runtime_error(std::string("verify: debug ") +
                                     (cmd == tlm::TLM_READ_COMMAND ? "read" : "write") + " at " +
                                     hex(address) + " failed");
        address += done;
        data += done;
        size -= done;
    }
}

}  // namespace systolic::verify
