#include "systolic/vector_isa.h"

#include <cstdlib>
#include <cstring>

namespace systolic {
namespace {

vector_isa detect() {
    vector_isa isa;
#if SYSTOLIC_X86_TARGETS
    const char* forced = std::getenv("SYSTOLIC_ISA");
    if (forced != nullptr && std::strcmp(forced, "generic") == 0) return isa;
    __builtin_cpu_init();
    isa.avx2 =
        __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("popcnt");
    if (forced != nullptr && std::strcmp(forced, "avx2") == 0) return isa;
    isa.avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                 __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
    isa.vnni = isa.avx512 && __builtin_cpu_supports("avx512vnni");
    isa.popcount = isa.avx512 && isa.avx2 && __builtin_cpu_supports("avx512vpopcntdq") &&
                   __builtin_cpu_supports("avx512bitalg");
#endif
    return isa;
}

}  // namespace

const vector_isa& machine_isa() {
    static const vector_isa chosen = detect();
    return chosen;
}

const char* machine_isa_name() {
    const vector_isa& isa = machine_isa();
    return isa.avx512 ? "avx512" : isa.avx2 ? "avx2" : "generic";
}

}  // namespace systolic
