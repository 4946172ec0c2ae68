// The storage behind the TLM memory target, with no TLM in it: a flat byte array at a base
// address, and the access rules (in range or not at all). The SystemC shell in memory.h maps
// these results to TLM responses and adds the latencies.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>

namespace systolic {

class memory_core {
public:
    enum class status { ok, address_error };

    memory_core(std::uint64_t base, std::uint64_t size) : m_base(base) { resize(size); }

    std::uint64_t base() const { return m_base; }
    std::uint64_t size() const { return m_size; }
    std::uint8_t* data() { return m_data.get(); }
    const std::uint8_t* data() const { return m_data.get(); }

    // Zeros. Resizing invalidates every pointer handed out by data(); the shell revokes DMI first.
    // calloc, not a std::vector: a large block comes as fresh pages that the system zeroes when
    // first touched, so a memory costs only what is used of it (systolic-soc's 144 MiB of RAM
    // took longer to clear than a GPT-2 layer's job to run).
    void resize(std::uint64_t size) {
        m_data.reset();
        m_size = 0;
        if (size > SIZE_MAX) throw std::bad_alloc();
        void* p = std::calloc(size ? std::size_t(size) : 1, 1);
        if (!p) throw std::bad_alloc();
        m_data.reset(static_cast<std::uint8_t*>(p));
        m_size = size;
    }

    bool contains(std::uint64_t addr, std::uint64_t len) const {
        return addr >= m_base && len <= m_size && addr - m_base <= m_size - len;
    }

    // An access that is not wholly inside the memory does nothing at all.
    status read(std::uint64_t addr, void* dst, std::uint64_t len) const {
        if (!contains(addr, len)) return status::address_error;
        std::memcpy(dst, m_data.get() + (addr - m_base), len);
        return status::ok;
    }
    status write(std::uint64_t addr, const void* src, std::uint64_t len) {
        if (!contains(addr, len)) return status::address_error;
        std::memcpy(m_data.get() + (addr - m_base), src, len);
        return status::ok;
    }

private:
    struct release {
        void operator()(std::uint8_t* p) const { std::free(p); }
    };
    std::uint64_t m_base;
    std::uint64_t m_size = 0;
    std::unique_ptr<std::uint8_t[], release> m_data;
};

}  // namespace systolic
