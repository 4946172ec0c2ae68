#include "systolic/verify/fabric_outcome.h"

#include "systolic/counting.h"

namespace systolic::verify {

std::uint64_t fabric_outcome::halo_words(const std::string& kind, bool padding) const {
    std::uint64_t w = 0;
    for (const auto& l : links)
        if (l.kind == kind) w += padding ? l.padding_words : l.words;
    return w;
}

memory_traffic single_array_traffic(const matmul_job& job, std::uint64_t n, std::uint64_t operand_bytes,
                                    const memory_traffic& traffic) {
    const auto& s = job.shape;
    memory_traffic t = traffic;
    t.a_read = ceil_div(s.p, n) * s.m * s.k * operand_bytes;
    t.b_read = ceil_div(s.m, n) * s.k * s.p * operand_bytes;
    return t;
}

}  // namespace systolic::verify
