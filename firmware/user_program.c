/* A user's program, built by CTest firmware_user_program with docs/soc.md's command against the
 * installed files only: the seed's 3x3 product on whatever array the platform has, by polling. */
#include <stdio.h>

#include "soc.h"

static const int32_t a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
static const int32_t b[9] = {1, 0, 2, 0, 1, 0, 2, 0, 1};
static int64_t c[9];

int main(void) {
    const systolic_dev dev = soc_accel();
    uint32_t n;
    if (systolic_probe(&dev, &n) != 0) return 2;
    systolic_job job;
    systolic_job_init(&job);
    job.m = job.k = job.p = 3;
    job.a_addr = (uintptr_t)a;
    job.b_addr = (uintptr_t)b;
    job.c_addr = (uintptr_t)c;
    systolic_program(&dev, &job);
    systolic_start(&dev, 0);
    int outcome;
    while ((outcome = systolic_outcome(&dev)) == 0) {
    }
    printf("user program: N=%u, C(0,0)=%lld C(2,2)=%lld\n", (unsigned)n, (long long)c[0], (long long)c[8]);
    return outcome == 1 && c[0] == 7 && c[8] == 23 ? 0 : 3;
}
