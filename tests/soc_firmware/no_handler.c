/* A pending, enabled timer interrupt with mtvec = 0: a trap with no handler, a firmware fault. */
#include "soc.h"

int main(void) {
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrw mtvec, zero\n.option pop");
    soc_timer_at(0);
    soc_enable_timer_irq();
    soc_interrupts_on();
    for (;;)
        soc_wfi();
}
