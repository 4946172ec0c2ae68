#include "elf_loader.h"

#include <elf.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "io/input_file.h"
#include "io/text.h"

namespace systolic::components {

namespace {

// A firmware larger than this is not one: the RAM holds far less.
constexpr std::uint64_t file_limit = std::uint64_t(1) << 30;

template <class T>
T at(const std::string& file, std::uint64_t offset) {
    T v;
    std::memcpy(&v, file.data() + offset, sizeof v);
    return v;
}

template <class Ehdr, class Phdr>
elf_image parse(const std::string& name, const std::string& file, const std::vector<memory_range>& ram) {
    const auto fail = [&](const std::string& why) { return elf_error(name + ": " + why); };
    if (file.size() < sizeof(Ehdr)) throw fail("truncated ELF header");
    const auto eh = at<Ehdr>(file, 0);
    if (eh.e_machine != EM_RISCV)
        throw fail("not a RISC-V ELF file (e_machine " + std::to_string(eh.e_machine) + ")");
    if (eh.e_type != ET_EXEC)
        throw fail("not an executable (e_type " + std::to_string(eh.e_type) + "; link it with soc.ld)");
    if (eh.e_flags & EF_RISCV_RVE) throw fail("built for RV32E; the hart has 32 integer registers");
    if ((eh.e_flags & EF_RISCV_FLOAT_ABI) != EF_RISCV_FLOAT_ABI_SOFT)
        throw fail(
            "built for a hardware floating-point ABI; the hart has no F or D extension "
            "(use -mabi=ilp32 or -mabi=lp64)");
    if (eh.e_phnum == 0) throw fail("no program headers");
    if (eh.e_phentsize != sizeof(Phdr)) throw fail("program headers of an unexpected size");
    if (eh.e_phoff > file.size() || std::uint64_t(eh.e_phnum) * sizeof(Phdr) > file.size() - eh.e_phoff)
        throw fail("truncated program headers");

    elf_image image;
    image.entry = eh.e_entry;
    bool entry_in_code = false;
    struct placed {
        std::uint64_t address, size;
        std::string name;
    };
    std::vector<placed> loaded;
    for (unsigned i = 0; i < eh.e_phnum; ++i) {
        const auto ph = at<Phdr>(file, eh.e_phoff + std::uint64_t(i) * sizeof(Phdr));
        if (ph.p_type != PT_LOAD || ph.p_memsz == 0) continue;
        const std::string seg = "segment " + std::to_string(i) + " at " + io::hex(ph.p_paddr) + " (" +
                                std::to_string(ph.p_memsz) + " bytes)";
        if (ph.p_filesz > ph.p_memsz) throw fail(seg + " holds more file bytes than memory bytes");
        if (ph.p_offset > file.size() || ph.p_filesz > file.size() - ph.p_offset)
            throw fail(seg + " runs past the end of the file");
        const memory_range* in = nullptr;
        for (const memory_range& r : ram)
            if (ph.p_paddr >= r.base && ph.p_paddr - r.base < r.size &&
                ph.p_memsz <= r.size - (ph.p_paddr - r.base))
                in = &r;
        if (!in) {
            std::string where;
            for (const memory_range& r : ram)
                where += (where.empty() ? "" : ", ") + r.name + " " + io::hex(r.base) + "-" +
                         io::hex(r.base + r.size - 1);
            throw fail(seg + " does not fit in RAM (" + where + ")");
        }
        // Code and data run where they are linked; nothing moves them from where they are loaded.
        if (ph.p_vaddr != ph.p_paddr)
            throw fail(
                seg + " is linked at " + io::hex(ph.p_vaddr) + " (p_vaddr) but loaded at " +
                io::hex(ph.p_paddr) +
                " (p_paddr); the hart has no MMU and nothing copies it: link it where it is loaded, as "
                "soc.ld does");
        loaded.push_back({ph.p_paddr, ph.p_memsz, seg});
        elf_segment s;
        s.address = ph.p_paddr;
        s.size = ph.p_memsz;
        s.bytes.assign(file.begin() + std::ptrdiff_t(ph.p_offset),
                       file.begin() + std::ptrdiff_t(ph.p_offset + ph.p_filesz));
        if ((ph.p_flags & PF_X) && eh.e_entry >= ph.p_vaddr && eh.e_entry - ph.p_vaddr < ph.p_memsz)
            entry_in_code = true;
        image.segments.push_back(std::move(s));
    }
    if (image.segments.empty()) throw fail("no loadable segment");
    // Two segments over one byte: which one the RAM would hold depends on the order of loading.
    std::sort(loaded.begin(), loaded.end(),
              [](const placed& x, const placed& y) { return x.address < y.address; });
    for (std::size_t i = 1; i < loaded.size(); ++i)
        if (loaded[i].address - loaded[i - 1].address < loaded[i - 1].size)
            throw fail(loaded[i].name + " overlaps " + loaded[i - 1].name);
    if (!entry_in_code) throw fail("no entry point: " + io::hex(eh.e_entry) + " is in no executable segment");
    return image;
}

}  // namespace

elf_image parse_elf(const std::string& name, const std::string& file, isa arch,
                    const std::vector<memory_range>& ram) {
    if (file.size() < EI_NIDENT || std::memcmp(file.data(), ELFMAG, SELFMAG) != 0)
        throw elf_error(name + ": not an ELF file");
    const unsigned char cls = static_cast<unsigned char>(file[EI_CLASS]);
    if (file[EI_DATA] != ELFDATA2LSB) throw elf_error(name + ": not a little-endian ELF file");
    if (arch == isa::rv32) {
        if (cls != ELFCLASS32)
            throw elf_error(name +
                            ": not a 32-bit ELF file; --isa rv32 runs RV32 firmware (this may be "
                            "one for --isa rv64)");
        return parse<Elf32_Ehdr, Elf32_Phdr>(name, file, ram);
    }
    if (cls != ELFCLASS64)
        throw elf_error(name +
                        ": not a 64-bit ELF file; --isa rv64 runs RV64 firmware (this may be one "
                        "for --isa rv32)");
    return parse<Elf64_Ehdr, Elf64_Phdr>(name, file, ram);
}

elf_image read_elf(const std::string& path, isa arch, const std::vector<memory_range>& ram) {
    io::input_file in(path);
    return parse_elf(path, in.read_all(file_limit), arch, ram);
}

}  // namespace systolic::components
