/* soc.h: what a firmware for systolic-soc needs besides picolibc (C99). stdout and stderr are the
 * UART, so printf works; main's return value ends the simulation through the finisher (exit()
 * and soc_exit do the same). Interrupts reach C handlers through the trap vector of start.S.
 * Synchronous exceptions (illegal instruction, unmapped or misaligned access, ecall, ebreak) never
 * reach the firmware: the platform reports them as faults and stops (docs/soc.md says why). */
#ifndef SOC_H
#define SOC_H

#include <stdint.h>

#include <systolic/accelerator_driver.h>
#include <systolic/soc_map.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Ends the simulation with `code` as the firmware's verdict (0: pass). */
void soc_exit(int code) __attribute__((noreturn));

/* One byte to the UART. */
void soc_putc(char c);

/* The handler of the machine external interrupt (the accelerator's irq) and of the machine timer
 * interrupt; null removes it. A handler runs with interrupts off and must clear its cause (the
 * accelerator's IRQ_STATUS, or a later mtimecmp), or it is entered again at once. */
void soc_set_irq_handler(void (*handler)(void));
void soc_set_timer_handler(void (*handler)(void));

/* mie.MEIE, mie.MTIE: whether each interrupt may be taken (and may end a wfi). */
void soc_enable_irq(void);
void soc_disable_irq(void);
void soc_enable_timer_irq(void);
void soc_disable_timer_irq(void);

/* mstatus.MIE: interrupts taken at all. */
void soc_interrupts_on(void);
void soc_interrupts_off(void);

/* Sleeps until an enabled interrupt (mie) is pending, whether or not mstatus.MIE is set. */
void soc_wfi(void);

/* mtime: simulated nanoseconds since the start. */
uint64_t soc_time_ns(void);
/* mtimecmp: the timer interrupt is pending from simulated time `ns` on (UINT64_MAX: never). */
void soc_timer_at(uint64_t ns);

/* The accelerator for <systolic/accelerator_driver.h>: its accessors are volatile 32-bit loads
 * and stores at SOC_ACCEL_BASE. */
systolic_dev soc_accel(void);

/* Called by start.S's trap vector with the trap's CSRs; dispatches interrupts to the handlers
 * above. An interrupt with no handler prints one line and stops the firmware with ebreak. */
void soc_trap(uintptr_t mcause, uintptr_t mepc, uintptr_t mtval);

#ifdef __cplusplus
}
#endif

#endif /* SOC_H */
