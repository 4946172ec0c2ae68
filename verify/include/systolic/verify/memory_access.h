// How the verification environment reaches the memory a DUT works on: bytes read, written and
// copied by address, before and after a job (never on the DUT's path, where the bus monitor sees
// the DUT's own accesses). Two ways in: straight into a systolic::memory's core, and over TLM debug
// transport into a platform's own RAM, so a platform with its own memory and bus can be checked too.
#pragma once

#include <cstdint>
#include <tlm>
#include <vector>

#include "systolic/memory.h"

namespace systolic::verify {

// Bytes of memory from `base`, as they were when taken.
struct memory_snapshot {
    std::uint64_t base = 0;
    std::vector<std::uint8_t> bytes;
};

class memory_access {
public:
    virtual ~memory_access() = default;
    // The lowest address the environment may place a job at.
    virtual std::uint64_t base() const = 0;
    // Makes `size` bytes from base() usable for the next job (owned memory grows to fit); throws
    // std::length_error when a fixed memory is too small.
    virtual void reserve(std::uint64_t size) = 0;
    virtual void read(std::uint64_t address, std::uint8_t* data, std::uint64_t size) = 0;
    virtual void write(std::uint64_t address, const std::uint8_t* data, std::uint64_t size) = 0;
    // The bytes [address, address + size) in place, when the memory can show them without a copy;
    // null otherwise. Valid until the simulation runs on (a DMI grant may be revoked then).
    virtual const std::uint8_t* view(std::uint64_t /*address*/, std::uint64_t /*size*/) { return nullptr; }

    std::vector<std::uint8_t> snapshot(std::uint64_t size) {
        if (const std::uint8_t* p = view(base(), size)) return {p, p + size};
        std::vector<std::uint8_t> bytes(size);
        read(base(), bytes.data(), size);
        return bytes;
    }
};

// A systolic::memory reached through its core: it is resized to fit each job.
class core_memory_access final : public memory_access {
public:
    explicit core_memory_access(systolic::memory& mem) : m_mem(mem) {}
    std::uint64_t base() const override { return m_mem.core().base(); }
    void reserve(std::uint64_t size) override { m_mem.resize(size); }
    void read(std::uint64_t address, std::uint8_t* data, std::uint64_t size) override;
    void write(std::uint64_t address, const std::uint8_t* data, std::uint64_t size) override;
    const std::uint8_t* view(std::uint64_t address, std::uint64_t size) override;

private:
    systolic::memory& m_mem;
};

// A platform's RAM at [base, base + size), reached with transport_dbg through `socket` (bound,
// directly or over the platform's bus, to that RAM before the first job). Reads and views go
// through a DMI pointer when the RAM grants one for reading, asked for at each access and used at
// once, so a job's megabytes are one memcpy rather than a debug transaction per megabyte.
class debug_memory_access final : public memory_access {
public:
    debug_memory_access(tlm::tlm_initiator_socket<>& socket, std::uint64_t base, std::uint64_t size)
        : m_socket(socket), m_base(base), m_size(size) {}
    std::uint64_t base() const override { return m_base; }
    std::uint64_t size() const { return m_size; }
    void reserve(std::uint64_t size) override;
    void read(std::uint64_t address, std::uint8_t* data, std::uint64_t size) override;
    void write(std::uint64_t address, const std::uint8_t* data, std::uint64_t size) override;
    const std::uint8_t* view(std::uint64_t address, std::uint64_t size) override;

private:
    void transfer(tlm::tlm_command cmd, std::uint64_t address, std::uint8_t* data, std::uint64_t size);

    tlm::tlm_initiator_socket<>& m_socket;
    std::uint64_t m_base, m_size;
};

}  // namespace systolic::verify
