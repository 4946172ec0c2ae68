/* The seed example on the accelerator: N = 2, A and B 3x3 (int32), C = A x B over four tiles.
 * Prints C over the UART and checks it, and the counters, against the values the seed gives:
 * C = [[7,2,5],[16,5,14],[25,8,23]], 20 advance edges, 48 MACs with padding, 27 real.
 * Run with `systolic-soc --array 2`. */
#include <stdio.h>

#include "fw.h"

static const int32_t a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const int32_t b[9] = {1, 0, 2, 0, 1, 0, 2, 0, 1};
static const int64_t expected[9] = {7, 2, 5, 16, 5, 14, 25, 8, 23};
static int64_t c[9];

int main(void) {
    uint32_t n = 0;
    if (fw_init("seed", &n) != 0) return 1;
    if (n != 2) {
        printf("seed: FAIL: the seed example needs a 2x2 array (--array 2), ARRAY_SIZE is %u\n", (unsigned)n);
        return 1;
    }
    systolic_job job;
    fw_job(&job, SYSTOLIC_DTYPE_INT32, 3, 3, 3, (uintptr_t)a, (uintptr_t)b, (uintptr_t)c);
    if (fw_run(&job) != 1) {
        printf("seed: FAIL: the job ended with ERROR %u\n", (unsigned)systolic_error(&fw_accel));
        return 1;
    }
    printf("C=[");
    for (int i = 0; i < 3; ++i)
        printf("%s[%lld,%lld,%lld]", i ? "," : "", (long long)c[3 * i], (long long)c[3 * i + 1],
               (long long)c[3 * i + 2]);
    printf("]\n");
    systolic_counters counters;
    systolic_read_counters(&fw_accel, &counters);
    printf("edges %llu, MACs %llu with padding, %llu real, %llu cycles\n", (unsigned long long)counters.edges,
           (unsigned long long)counters.macs, (unsigned long long)counters.macs_real,
           (unsigned long long)counters.cycles);
    if (fw_compare_i64("seed: C", c, expected, 9) != 0) return 1;
    if (counters.edges != 20 || counters.macs != 48 || counters.macs_real != 27) {
        printf("seed: FAIL: the seed counts 20 edges, 48 MACs, 27 real\n");
        return 1;
    }
    printf("seed: PASS\n");
    return 0;
}
