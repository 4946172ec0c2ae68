// libFuzzer target: systolic-run --config's SCALE-Sim .cfg reader on arbitrary text. Every input must
// either give a configuration whose values are in their ranges (array sides in [1, max_array],
// scratchpads in [1, max_sram_kb] kB, a Bandwidth in [1, 2^32] whenever USER asks for one) and whose
// memory system has exactly those sizes, or be refused with a config_error whose message is one line
// without control characters; anything else is a bug. Seeds: fuzz/corpus/scale_config.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "run_options.h"
#include "scale_config.h"

namespace {

bool in(std::uint64_t v, std::uint64_t lo, std::uint64_t hi) {
    return v >= lo && v <= hi;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace systolic::run;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const scale_config c = parse_scale_config(text, "fuzz.cfg", max_array);
        if (!in(c.array.rows, 1, max_array) || !in(c.array.cols, 1, max_array)) std::abort();
        for (const std::uint64_t kb : {c.ifmap_sram_kb, c.filter_sram_kb, c.ofmap_sram_kb})
            if (!in(kb, 1, max_sram_kb)) std::abort();
        if (c.mode == interface_bandwidth::user && !in(c.bandwidth, 1, std::uint64_t{1} << 32)) std::abort();
        if (c.bandwidth > std::uint64_t{1} << 32) std::abort();
        for (const std::uint64_t word : {1, 2, 4, 8}) {
            const systolic::memory_config m = memory_of(c, word);
            if (m.a_sram != c.ifmap_sram_kb * 1024 || m.b_sram != c.filter_sram_kb * 1024 ||
                m.c_sram != c.ofmap_sram_kb * 1024)
                std::abort();
            if (c.mode == interface_bandwidth::user ? !(m.dram_bandwidth >= 1) : m.dram_bandwidth != 0)
                std::abort();
        }
    } catch (const config_error& e) {
        for (const char ch : std::string(e.what()))  // one line, no control characters
            if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();
    }
    return 0;
}
