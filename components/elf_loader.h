// A firmware's ELF file, read and checked before the platform runs it (plain C++; <elf.h> gives the
// layouts). It must be a little-endian RISC-V executable of the hart's class (ELF32 for RV32,
// ELF64 for RV64) with the soft-float ABI and no RV32E, every loadable segment inside one of the
// RAM ranges (at its physical address), linked where it is loaded (p_vaddr == p_paddr: the hart
// has no MMU and the platform copies nothing), no two of them over the same byte, and an entry
// point inside an executable segment. Anything else is an elf_error: one line that starts with the
// file's name.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "hart_core.h"

namespace systolic::components {

class elf_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct memory_range {
    std::uint64_t base, size;
    std::string name;
};

struct elf_segment {
    std::uint64_t address = 0;        // physical: where the platform puts it
    std::vector<std::uint8_t> bytes;  // the file's bytes, then zeros up to size
    std::uint64_t size = 0;           // in memory
};

struct elf_image {
    std::uint64_t entry = 0;
    std::vector<elf_segment> segments;
};

// `name` is for messages; `file` is the whole file.
elf_image parse_elf(const std::string& name, const std::string& file, isa arch,
                    const std::vector<memory_range>& ram);
// The file read as every input is (io/input_file.h), then parsed.
elf_image read_elf(const std::string& path, isa arch, const std::vector<memory_range>& ram);

}  // namespace systolic::components
