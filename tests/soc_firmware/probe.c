#include <stdio.h>

#include "soc.h"

int main(void) {
    const systolic_dev dev = soc_accel();
    uint32_t n = 0;
    if (systolic_probe(&dev, &n) != 0) return 1;
    printf("a %ux%u array, %llu ns\n", (unsigned)n, (unsigned)n, (unsigned long long)soc_time_ns());
    return 0; /* the finisher's code: systolic-soc exits 0 */
}
