// libFuzzer target: the hart's ELF loader (components/elf_loader.h, parse_elf) on arbitrary bytes, for --isa
// rv32 and rv64 against the RAM each hart sees. Every input must either give an image the platform can load
// as it is (at least one segment, each inside one RAM range, with no more file bytes than memory
// bytes) or be refused with an elf_error on one line that starts with the file's name and holds no
// control characters; anything else is a bug. Seeds: fuzz/corpus/elf (the project's firmware,
// stripped).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "elf_loader.h"
#include "soc_regions.h"

namespace {

using namespace systolic::components;
using systolic::soc::soc_region;
using systolic::soc::soc_regions;

// The RAM a hart of `arch` reaches, as platform::cpu_ram gives it (platform.cpp runs SystemC, so
// the rule is repeated here from the same table): RV32 only what lies below 4 GiB.
std::vector<memory_range> cpu_ram(isa arch) {
    std::vector<memory_range> out;
    for (const soc_region& r : soc_regions)
        if (r.ram && (arch == isa::rv64 || r.base + r.size <= std::uint64_t{1} << 32))
            out.push_back({r.base, r.size, r.name});
    return out;
}

bool inside(const elf_segment& s, const std::vector<memory_range>& ram) {
    for (const memory_range& r : ram)
        if (s.address >= r.base && s.address - r.base < r.size && s.size <= r.size - (s.address - r.base))
            return true;
    return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::vector<memory_range> rams[] = {cpu_ram(isa::rv32), cpu_ram(isa::rv64)};
    const std::string file(reinterpret_cast<const char*>(data), size);
    for (const isa arch : {isa::rv32, isa::rv64}) {
        const auto& ram = rams[arch == isa::rv64];
        try {
            const elf_image image = parse_elf("fuzz.elf", file, arch, ram);
            if (image.segments.empty()) std::abort();
            for (const elf_segment& s : image.segments)
                if (s.size == 0 || s.bytes.size() > s.size || !inside(s, ram)) std::abort();
        } catch (const elf_error& e) {
            const std::string what = e.what();
            if (what.rfind("fuzz.elf: ", 0) != 0) std::abort();
            for (const char ch : what)  // one line, no control characters
                if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();
        }
    }
    return 0;
}
