// Guest RAM as QEMU's proxy hands it over (SYNC_SYSMEM): regions of guest-physical addresses, each
// backed by a memory fd that this process maps shared, so that the device's DMA reads and writes
// the guest's own RAM. QEMU sends the whole map again many times during boot, with fresh fds: each
// map() replaces the last one, unmapping it, and counts a generation, so that whoever handed out a
// pointer into it (a TLM DMI) knows to take it back. Plain C++.
#pragma once

#include <cstdint>
#include <vector>

#include "systolic/qemu_pci/mpqemu_link.h"

namespace systolic::qemu_pci {

class guest_memory {
public:
    guest_memory() = default;
    guest_memory(const guest_memory&) = delete;
    guest_memory& operator=(const guest_memory&) = delete;
    ~guest_memory() { unmap(); }

    // The regions of the latest SYNC_SYSMEM; the old ones are unmapped first. Throws link_error
    // (naming the region) when a region cannot be mapped, leaving no region mapped.
    void map(std::vector<sysmem_region> regions);

    // The host address of the len bytes at guest-physical gpa, when they lie inside one region;
    // nullptr otherwise.
    std::uint8_t* find(std::uint64_t gpa, std::uint64_t len) const;
    // The region holding gpa: its first guest-physical address, its length and host address.
    struct span {
        std::uint64_t gpa = 0, size = 0;
        std::uint8_t* host = nullptr;
    };
    bool region_of(std::uint64_t gpa, span& out) const;

    std::uint64_t generation() const { return m_generation; }
    std::size_t regions() const { return m_maps.size(); }

private:
    struct mapping {
        std::uint64_t gpa, size;
        std::uint8_t* host;  // gpa's byte
        void* base;          // what mmap returned (page-aligned) and its length
        std::size_t length;
    };
    void unmap();
    std::vector<mapping> m_maps;  // in the order QEMU sent them; a handful, searched in turn
    std::uint64_t m_generation = 0;
};

}  // namespace systolic::qemu_pci
