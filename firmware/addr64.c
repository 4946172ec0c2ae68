/* 64-bit addresses: operands and C in the RAM above 4 GiB (SOC_HIGH_RAM_BASE), which the
 * accelerator's DMA always reaches, programmed through the _LO/_HI register pairs.
 *
 * On both ISAs the accelerator itself moves the data across the 4 GiB line, since an RV32 hart
 * cannot address it: A and B are copied up by int8 jobs that multiply by the identity with int8
 * output at scale 1 (exact for these operands), the product runs with A, B and C all high, and a
 * last int32 job multiplies the high C by the identity into the low RAM, where the hart checks it
 * against its own GEMM. The hart also checks that each job's address registers read back with
 * their high halves, and the counters. On RV64 the hart reads the high RAM itself too: the copies
 * and C, and a job whose A it wrote there directly. */
#include <stdio.h>
#include <string.h>

#include "fw.h"

enum { M = 24, K = 40, P = 20 };

/* Where in the high RAM; the low halves are not zero either, so both registers of each pair matter. */
#define A_HIGH (SOC_HIGH_RAM_BASE + 0x12340u)
#define B_HIGH (SOC_HIGH_RAM_BASE + 0x20000u)
#define C_HIGH (SOC_HIGH_RAM_BASE + 0x30008u)
#define A2_HIGH (SOC_HIGH_RAM_BASE + 0x40000u)
#define C2_HIGH (SOC_HIGH_RAM_BASE + 0x50000u)

static int8_t a[M * K], b[K * P], eye_k[K * K], eye_p[P * P];
static int32_t eye32[P * P], want[M * P];
static int64_t c_back[M * P];

static int run(const char* what, uint64_t a_addr, uint64_t b_addr, uint64_t c_addr, uint32_t m, uint32_t k,
               uint32_t p, uint32_t dtype, uint32_t out_dtype) {
    systolic_job job;
    fw_job(&job, dtype, m, k, p, a_addr, b_addr, c_addr);
    job.out_dtype = out_dtype;
    fw_start(&job);
    const uint64_t a_reg = systolic_read64(&fw_accel, SYSTOLIC_REG_A_ADDR_LO);
    const uint64_t b_reg = systolic_read64(&fw_accel, SYSTOLIC_REG_B_ADDR_LO);
    const uint64_t c_reg = systolic_read64(&fw_accel, SYSTOLIC_REG_C_ADDR_LO);
    const int outcome = fw_wait();
    systolic_counters counters;
    systolic_read_counters(&fw_accel, &counters);
    printf("%-34s A 0x%09llx B 0x%09llx C 0x%09llx: MACS_REAL %llu, %llu cycles\n", what,
           (unsigned long long)a_reg, (unsigned long long)b_reg, (unsigned long long)c_reg,
           (unsigned long long)counters.macs_real, (unsigned long long)counters.cycles);
    if (a_reg != a_addr || b_reg != b_addr || c_reg != c_addr) {
        printf("addr64: FAIL: %s: the address registers do not read back as written\n", what);
        return -1;
    }
    if (outcome != 1) {
        printf("addr64: FAIL: %s: ERROR %u at 0x%llx\n", what, (unsigned)systolic_error(&fw_accel),
               (unsigned long long)systolic_error_address(&fw_accel));
        return -1;
    }
    if (counters.macs_real != (uint64_t)m * k * p) {
        printf("addr64: FAIL: %s: MACS_REAL should be M x K x P\n", what);
        return -1;
    }
    return 0;
}

#if UINTPTR_MAX > 0xffffffffu
/* The hart's own view of the high RAM. */
static int check_directly(void) {
    const int8_t* a_high = (const int8_t*)(uintptr_t)A_HIGH;
    const int8_t* b_high = (const int8_t*)(uintptr_t)B_HIGH;
    if (fw_compare_i8("addr64: FAIL: A as the hart reads it above 4 GiB", a_high, a, M * K) != 0 ||
        fw_compare_i8("addr64: FAIL: B as the hart reads it above 4 GiB", b_high, b, K * P) != 0 ||
        fw_compare_i32("addr64: FAIL: C as the hart reads it above 4 GiB", (const int32_t*)(uintptr_t)C_HIGH,
                       want, M * P) != 0)
        return -1;
    /* A job whose A the hart wrote above 4 GiB itself: -A, so C2 = -C. */
    int8_t* a2 = (int8_t*)(uintptr_t)A2_HIGH;
    for (int i = 0; i < M * K; ++i)
        a2[i] = (int8_t)-a[i];
    if (run("-A written by the hart, x B", A2_HIGH, B_HIGH, C2_HIGH, M, K, P, SYSTOLIC_DTYPE_INT8,
            SYSTOLIC_OUT_DTYPE_ACC) != 0)
        return -1;
    const int32_t* c2 = (const int32_t*)(uintptr_t)C2_HIGH;
    for (int i = 0; i < M * P; ++i)
        if (c2[i] != -want[i]) {
            printf("addr64: FAIL: C2 element %d is %ld, expected %ld\n", i, (long)c2[i], (long)-want[i]);
            return -1;
        }
    printf("the hart read A, B, C and C2 above 4 GiB\n");
    return 0;
}
#endif

int main(void) {
    uint32_t n = 0;
    if (fw_init("addr64", &n) != 0) return 1;
    uint32_t seed = 0xdeadbeefu;
    for (int i = 0; i < M * K; ++i)
        a[i] = (int8_t)fw_rand_range(&seed, -100, 100);
    for (int i = 0; i < K * P; ++i)
        b[i] = (int8_t)fw_rand_range(&seed, -100, 100);
    for (int i = 0; i < K; ++i)
        eye_k[i * K + i] = 1;
    for (int i = 0; i < P; ++i)
        eye_p[i * P + i] = eye32[i * P + i] = 1;
    fw_gemm_i8(a, b, want, M, K, P, K, P, P);

    if (run("copy A up: A x I, int8 codes", (uintptr_t)a, (uintptr_t)eye_k, A_HIGH, M, K, K,
            SYSTOLIC_DTYPE_INT8, SYSTOLIC_OUT_DTYPE_INT8) != 0 ||
        run("copy B up: B x I, int8 codes", (uintptr_t)b, (uintptr_t)eye_p, B_HIGH, K, P, P,
            SYSTOLIC_DTYPE_INT8, SYSTOLIC_OUT_DTYPE_INT8) != 0 ||
        run("C = A x B, all above 4 GiB", A_HIGH, B_HIGH, C_HIGH, M, K, P, SYSTOLIC_DTYPE_INT8,
            SYSTOLIC_OUT_DTYPE_ACC) != 0 ||
        run("copy C down: C x I, int32", C_HIGH, (uintptr_t)eye32, (uintptr_t)c_back, M, P, P,
            SYSTOLIC_DTYPE_INT32, SYSTOLIC_OUT_DTYPE_ACC) != 0)
        return 1;
    for (int i = 0; i < M * P; ++i)
        if (c_back[i] != want[i]) {
            printf("addr64: FAIL: C (copied down) element %d is %lld, expected %ld\n", i,
                   (long long)c_back[i], (long)want[i]);
            return 1;
        }
#if UINTPTR_MAX > 0xffffffffu
    if (check_directly() != 0) return 1;
#else
    printf("an RV32 hart cannot address the high RAM: C checked after the accelerator copied it down\n");
#endif
    printf("addr64: PASS\n");
    return 0;
}
