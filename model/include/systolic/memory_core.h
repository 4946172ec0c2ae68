// The storage behind the TLM memory target, with no TLM in it: a flat byte array at a base
// address, and the access rules (in range or not at all). The SystemC shell in memory.h maps
// these results to TLM responses and adds the latencies.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace systolic {

class memory_core {
public:
    enum class status { ok, address_error };

    memory_core(std::uint64_t base, std::uint64_t size) : m_base(base), m_data(size) {}

    std::uint64_t base() const { return m_base; }
    std::uint64_t size() const { return m_data.size(); }
    std::uint8_t* data() { return m_data.data(); }
    const std::uint8_t* data() const { return m_data.data(); }

    // Resizing invalidates every pointer handed out by data(); the shell revokes DMI first.
    void resize(std::uint64_t size) { m_data.assign(size, 0); }

    bool contains(std::uint64_t addr, std::uint64_t len) const {
        return addr >= m_base && len <= m_data.size() && addr - m_base <= m_data.size() - len;
    }

    // An access that is not wholly inside the memory does nothing at all.
    status read(std::uint64_t addr, void* dst, std::uint64_t len) const {
        if (!contains(addr, len)) return status::address_error;
        std::memcpy(dst, m_data.data() + (addr - m_base), len);
        return status::ok;
    }
    status write(std::uint64_t addr, const void* src, std::uint64_t len) {
        if (!contains(addr, len)) return status::address_error;
        std::memcpy(m_data.data() + (addr - m_base), src, len);
        return status::ok;
    }

private:
    std::uint64_t m_base;
    std::vector<std::uint8_t> m_data;
};

}  // namespace systolic
