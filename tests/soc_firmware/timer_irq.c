/* The timer interrupt wakes main from wfi: three deadlines 10 us apart, each taken by the handler,
 * which moves mtimecmp on; main sleeps between them and checks the times it sees. */
#include <stdio.h>

#include "soc.h"

#define STEP_NS 10000u
static volatile unsigned ticks;
static volatile uint64_t deadline;

static void on_timer(void) {
    ++ticks;
    deadline += STEP_NS;
    soc_timer_at(ticks < 3 ? deadline : UINT64_MAX);
}

int main(void) {
    const uint64_t start = soc_time_ns();
    deadline = start + STEP_NS;
    soc_set_timer_handler(on_timer);
    soc_timer_at(deadline);
    soc_enable_timer_irq();
    soc_interrupts_on();
    unsigned wakes = 0;
    while (ticks < 3) {
        soc_wfi();
        ++wakes;
    }
    soc_interrupts_off();
    const uint64_t took = soc_time_ns() - start;
    printf("ticks=%u wakes=%u took=%llu ns\n", ticks, wakes, (unsigned long long)took);
    const int ok = ticks == 3 && took >= 3 * STEP_NS && took < 3 * STEP_NS + 5000;
    printf("%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
