/* A driver bug that the firmware's own check cannot see: the job C = A * B is started, and A is
 * changed while the accelerator still works on it. The firmware reports what it finds and returns
 * 0; the passive checker, which took A when START was written, must fail the job. */
#include <stdio.h>

#include "soc.h"

static int32_t a[2 * 3] = {1, 2, 3, 4, 5, 6};
static int32_t b[3 * 2] = {7, 8, 9, 10, 11, 12};
static int64_t c[2 * 2];

int main(void) {
    const systolic_dev dev = soc_accel();
    const systolic_job job = {.m = 2,
                              .k = 3,
                              .p = 2,
                              .a_addr = (uintptr_t)a,
                              .b_addr = (uintptr_t)b,
                              .c_addr = (uintptr_t)c,
                              .dtype = SYSTOLIC_DTYPE_INT32,
                              .scale = 1.0f};
    systolic_program(&dev, &job);
    systolic_start(&dev, 0);
    a[0] = 100; /* the bug: the next job's operand written over this one's */
    while (systolic_outcome(&dev) == 0) {
    }
    printf("outcome %d, C(0,0) = %lld\n", systolic_outcome(&dev), (long long)c[0]);
    return 0;
}
