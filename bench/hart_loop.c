/* systolic-bench's compute loop for the hart, run forever: rounds of integer work on a 16 KiB table
 * in RAM (loads, arithmetic, stores, branches), each round's number stored at
 * HART_LOOP_ROUNDS_ADDRESS, and a timer interrupt every HART_LOOP_TICK_NS, so that the platform's
 * interrupt delivery is at work too. The bench runs it on the platform's hart and on Unicorn alone
 * and compares the rounds each gets through per second. */
#include "hart_loop.h"
#include "soc.h"

enum { WORDS = 4096 };

static uint32_t table[WORDS];
static volatile uint32_t ticks;

static void tick(void) {
    ++ticks;
    soc_timer_at(soc_time_ns() + HART_LOOP_TICK_NS);
}

int main(void) {
    soc_set_timer_handler(tick);
    soc_timer_at(soc_time_ns() + HART_LOOP_TICK_NS);
    soc_enable_timer_irq();
    soc_interrupts_on();
    volatile uint32_t* rounds = (volatile uint32_t*)(uintptr_t)HART_LOOP_ROUNDS_ADDRESS;
    uint32_t x = 0x12345678u, sum = 0;
    for (uint32_t r = 1;; ++r) {
        for (int i = 0; i < WORDS; ++i) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            const uint32_t v = table[i] + (x & 0xffu);
            table[i] = v;
            sum += v >> (r & 7);
        }
        rounds[1] = sum;
        rounds[0] = r;
    }
}
