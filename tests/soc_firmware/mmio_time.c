/* Simulated time as the firmware sees it: a loop of known length costs its instructions (CPI /
 * clock each), and device accesses cost their instructions too (the UART answers at once), while
 * an accelerator register read adds the block's latency. Prints the three times for the test. */
#include <stdio.h>

#include "soc.h"

#define N 10000

int main(void) {
    uint64_t t0 = soc_time_ns();
    for (unsigned i = 0; i < N; ++i)
        __asm__ volatile("nop");
    uint64_t t1 = soc_time_ns();
    for (unsigned i = 0; i < N; ++i)
        (void)*(volatile uint32_t*)(uintptr_t)(SOC_UART_BASE + SOC_UART_STATUS);
    uint64_t t2 = soc_time_ns();
    const systolic_dev dev = soc_accel();
    for (unsigned i = 0; i < N; ++i)
        (void)dev.read32(dev.ctx, SYSTOLIC_REG_ID);
    uint64_t t3 = soc_time_ns();
    printf("loop=%llu uart=%llu accel=%llu\n", (unsigned long long)(t1 - t0), (unsigned long long)(t2 - t1),
           (unsigned long long)(t3 - t2));
    return 0;
}
