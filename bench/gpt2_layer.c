/* systolic-bench's firmware-driven layer: the GPT-2 projection, int8, 1024 x 1600 x 1600, as one
 * accelerator job started by the hart, which fills A and B first and sleeps in wfi while the job
 * runs. Every value is checked by the platform's passive checker; the firmware itself recomputes
 * a few elements of C as a spot check (the whole GEMM on the hart would take minutes). */
#include <stdio.h>

#include "fw.h"

enum { M = 1024, K = 1600, P = 1600, SPOT = 64 };

extern char __heap_start[], __heap_end[];

/* Random bytes a register at a time (8 bytes on RV64), from a linear congruential generator with
 * its high bits folded in: 7 instructions a word, so the hart's part of the run stays small. The
 * multiplier is 1 mod 4 in either width, so the sequence has the full period. */
static void fill(int8_t* m, size_t bytes, uintptr_t x) {
    uintptr_t* words = (uintptr_t*)m;
    for (size_t i = 0; i < bytes / sizeof *words; ++i) {
        x = x * (uintptr_t)0x9e3779b97f4a7c15ull + 1;
        words[i] = x ^ (x >> 29);
    }
}

int main(void) {
    uint32_t n = 0;
    if (fw_init("gpt2_layer", &n) != 0) return 1;
    /* The matrices (10.75 MiB) are carved from the heap's memory directly (soc.ld's __heap_start
     * and __heap_end): neither .bss nor malloc, both of which picolibc clears with a byte-wise
     * memset, 4 instructions a byte, 43 M instructions for memory written whole anyway. */
    int8_t* a = (int8_t*)(((uintptr_t)__heap_start + 63) & ~(uintptr_t)63);
    int8_t* b = a + (size_t)M * K;
    int32_t* c = (int32_t*)(b + (size_t)K * P);
    if ((char*)(c + (size_t)M * P) > __heap_end) {
        printf("gpt2_layer: FAIL: the matrices do not fit in the heap\n");
        return 1;
    }
    fill(a, (size_t)M * K, 0x1234abcdu);
    fill(b, (size_t)K * P, 0x9876fedcu);
    systolic_job job;
    fw_job(&job, SYSTOLIC_DTYPE_INT8, M, K, P, (uintptr_t)a, (uintptr_t)b, (uintptr_t)c);
    const uint64_t t0 = soc_time_ns();
    if (fw_run(&job) != 1) {
        printf("gpt2_layer: FAIL: ERROR %u\n", (unsigned)systolic_error(&fw_accel));
        return 1;
    }
    const uint64_t job_ns = soc_time_ns() - t0;
    systolic_counters counters;
    systolic_read_counters(&fw_accel, &counters);
    printf("gpt2_layer: %ux%ux%u int8 on %ux%u: %llu ns simulated, %llu edges, %llu MACs real\n", (unsigned)M,
           (unsigned)K, (unsigned)P, (unsigned)n, (unsigned)n, (unsigned long long)job_ns,
           (unsigned long long)counters.edges, (unsigned long long)counters.macs_real);
    uint32_t pick = 0x5eed;
    for (int s = 0; s < SPOT; ++s) {
        const uint32_t i = fw_rand(&pick) % M, j = fw_rand(&pick) % P;
        int32_t want;
        fw_gemm_i8(a + (size_t)i * K, b + j, &want, 1, K, 1, K, P, 1);
        if (c[(size_t)i * P + j] != want) {
            printf("gpt2_layer: FAIL: C(%u,%u) is %ld, expected %ld\n", (unsigned)i, (unsigned)j,
                   (long)c[(size_t)i * P + j], (long)want);
            return 1;
        }
    }
    printf("gpt2_layer: PASS\n");
    return 0;
}
