/* The accelerator reached from firmware: probe it, run one int32 job C = A * B (2x3 by 3x2) with
 * the interrupt, sleep in wfi until the handler has seen it end, and check C. */
#include "accel_2x3.h"

static volatile uint32_t causes;

static void on_irq(void) {
    const systolic_dev dev = soc_accel();
    causes |= systolic_irq_ack(&dev);
}

int main(void) {
    const systolic_dev dev = soc_accel();
    soc_set_irq_handler(on_irq);
    soc_enable_irq();
    soc_interrupts_on();
    const uint32_t n = start_2x3(&dev, 1);
    if (n == 0) return 1;
    while (!causes)
        soc_wfi();
    soc_interrupts_off();
    const int ok = causes == SYSTOLIC_IRQ_DONE && systolic_outcome(&dev) == 1 && c_is_a_times_b();
    printf("array %u, C = [%lld %lld; %lld %lld] %s\n", (unsigned)n, (long long)c[0], (long long)c[1],
           (long long)c[2], (long long)c[3], ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
