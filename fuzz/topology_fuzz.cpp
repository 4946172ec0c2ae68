// libFuzzer target: systolic-run's SCALE-Sim topology reader on arbitrary text. Every input must
// either parse into layers whose lowered GEMMs are within the accepted sizes, or be refused with a
// topology_error whose message is one line; anything else (a crash, a sanitizer report, another
// exception, a hang) is a bug. Seeds: fuzz/corpus/topology.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "topology.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace systolic::run;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const topology t = parse_topology(text, "fuzz.csv");
        for (const layer& l : t.layers) {
            const auto& g = l.gemm;
            if (g.m == 0 || g.k == 0 || g.p == 0) std::abort();
            if (g.m > max_dimension || g.k > max_dimension || g.p > max_dimension) std::abort();
        }
    } catch (const topology_error& e) {
        if (std::string(e.what()).find('\n') != std::string::npos) std::abort();  // one line
    }
    return 0;
}
