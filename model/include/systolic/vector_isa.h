// Which vector instructions this machine gives the kernels that pick their own path at run time
// (gemm_kernel.cpp's micro-kernels, the action counter's and the cores' counting kernels): read
// once, when first needed. SYSTOLIC_ISA in the environment can force "avx2" or "generic", so that
// the tests cover every path on one machine.
#pragma once

namespace systolic {

struct vector_isa {
    bool avx512 = false;    // F, BW, DQ, VL
    bool vnni = false;      // and AVX512-VNNI
    bool popcount = false;  // and VPOPCNTDQ, BITALG: a bit count per lane
    bool avx2 = false;
};

const vector_isa& machine_isa();

// The best of "avx512", "avx2" and "generic" that machine_isa() allows.
const char* machine_isa_name();

}  // namespace systolic

// The instruction sets of the counting kernels' AVX-512 path (vector_isa::popcount) and AVX2 path,
// as target attributes for GCC and Clang on x86-64 (empty elsewhere: only the generic path runs).
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SYSTOLIC_X86_TARGETS 1
#define SYSTOLIC_TARGET_AVX512_POPCOUNT \
    __attribute__((target("avx512f,avx512bw,avx512dq,avx512vl,avx512vpopcntdq,avx512bitalg,avx2,popcnt")))
#define SYSTOLIC_TARGET_AVX2 __attribute__((target("avx2,fma,popcnt")))
#else
#define SYSTOLIC_X86_TARGETS 0
#define SYSTOLIC_TARGET_AVX512_POPCOUNT
#define SYSTOLIC_TARGET_AVX2
#endif
