/* The accelerator reached from firmware: probe it, run one int32 job C = A * B (2x3 by 3x2) with
 * the interrupt, sleep in wfi until the handler has seen it end, and check C. */
#include <stdio.h>

#include "soc.h"

static int32_t a[2 * 3] = {1, 2, 3, 4, 5, 6};
static int32_t b[3 * 2] = {7, 8, 9, 10, 11, 12};
static int64_t c[2 * 2];
static volatile uint32_t causes;

static void on_irq(void) {
    const systolic_dev dev = soc_accel();
    causes |= systolic_irq_ack(&dev);
}

int main(void) {
    const systolic_dev dev = soc_accel();
    uint32_t n = 0;
    if (systolic_probe(&dev, &n) != 0) {
        printf("no accelerator\n");
        return 1;
    }
    systolic_job job;
    systolic_job_init(&job);
    job.m = 2;
    job.k = 3;
    job.p = 2;
    job.a_addr = (uintptr_t)a;
    job.b_addr = (uintptr_t)b;
    job.c_addr = (uintptr_t)c;
    systolic_program(&dev, &job);
    soc_set_irq_handler(on_irq);
    soc_enable_irq();
    soc_interrupts_on();
    systolic_start(&dev, 1);
    while (!causes)
        soc_wfi();
    soc_interrupts_off();
    const int64_t want[4] = {58, 64, 139, 154};
    int ok = causes == SYSTOLIC_IRQ_DONE && systolic_outcome(&dev) == 1;
    for (int i = 0; i < 4; ++i)
        ok = ok && c[i] == want[i];
    printf("array %u, C = [%lld %lld; %lld %lld] %s\n", (unsigned)n, (long long)c[0], (long long)c[1],
           (long long)c[2], (long long)c[3], ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
