/* A driver bug that the firmware's own check cannot see: the job C = A * B is started, and A is
 * changed while the accelerator still works on it. The firmware reports what it finds and returns
 * 0; the passive checker, which took A when START was written, must fail the job. */
#include "accel_2x3.h"

int main(void) {
    const systolic_dev dev = soc_accel();
    if (start_2x3(&dev, 0) == 0) return 1;
    a[0] = 100; /* the bug: the next job's operand written over this one's */
    while (systolic_outcome(&dev) == 0) {
    }
    printf("outcome %d, C(0,0) = %lld\n", systolic_outcome(&dev), (long long)c[0]);
    return 0;
}
