/* soc.c: the firmware side of systolic-soc's devices (soc.h): the UART as picolibc's stdio, the
 * finisher as exit(), interrupt enables and dispatch, wfi, the timer and the accelerator's register
 * accessors. */
#include "soc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SOC_MMIO32(addr) (*(volatile uint32_t*)(uintptr_t)(addr))

/* GCC 12's -march=rv32imac leaves out Zicsr, which the CSR instructions now belong to, so each asm
 * asks for it; mstatus and mie are the machine CSRs these functions change. */
#define SOC_CSR_SET(csr, bits)                                                                        \
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrs " #csr ", %0\n.option pop" ::"r"(bits) \
                     : "memory")
#define SOC_CSR_CLEAR(csr, bits)                                                                      \
    __asm__ volatile(".option push\n.option arch, +zicsr\ncsrc " #csr ", %0\n.option pop" ::"r"(bits) \
                     : "memory")

#define SOC_MSTATUS_MIE ((uintptr_t)1 << 3)

/* What soc.ld and picolibc provide to the start-up. */
extern char __bss_start[], __bss_end[];
extern void __libc_init_array(void);
extern int main(void);
void soc_start_c(void) __attribute__((noreturn));

/* From start.S, with gp, sp, tp and mtvec set. .data and TLS are in place (the platform loads them
 * where they run); .bss, and the TLS zeros below it, are zeroed here. */
void soc_start_c(void) {
    memset(__bss_start, 0, (size_t)(__bss_end - __bss_start));
    __libc_init_array();
    exit(main());
}

void soc_exit(int code) {
    SOC_MMIO32(SOC_FINISHER_BASE + SOC_FINISHER_CODE) = (uint32_t)code;
    for (;;) /* the platform has stopped at the write */
        __asm__ volatile("wfi");
}

/* picolibc's exit() (and so main's return) ends here, after the atexit handlers. */
void _exit(int code) {
    soc_exit(code);
}

void soc_putc(char c) {
    SOC_MMIO32(SOC_UART_BASE + SOC_UART_TX) = (uint8_t)c;
}

static int soc_stdio_put(char c, FILE* f) {
    (void)f;
    soc_putc(c);
    return (unsigned char)c;
}

/* One stream for all three: writes go to the UART, reads see end of file. */
static FILE soc_stdio = FDEV_SETUP_STREAM(soc_stdio_put, NULL, NULL, _FDEV_SETUP_WRITE);
FILE* const stdin = &soc_stdio;
FILE* const stdout = &soc_stdio;
FILE* const stderr = &soc_stdio;

static void (*volatile soc_irq_handler)(void);
static void (*volatile soc_timer_handler)(void);

void soc_set_irq_handler(void (*handler)(void)) {
    soc_irq_handler = handler;
}
void soc_set_timer_handler(void (*handler)(void)) {
    soc_timer_handler = handler;
}

void soc_enable_irq(void) {
    SOC_CSR_SET(mie, (uintptr_t)1 << SOC_ACCEL_IRQ);
}
void soc_disable_irq(void) {
    SOC_CSR_CLEAR(mie, (uintptr_t)1 << SOC_ACCEL_IRQ);
}
void soc_enable_timer_irq(void) {
    SOC_CSR_SET(mie, (uintptr_t)1 << SOC_TIMER_IRQ);
}
void soc_disable_timer_irq(void) {
    SOC_CSR_CLEAR(mie, (uintptr_t)1 << SOC_TIMER_IRQ);
}
void soc_interrupts_on(void) {
    SOC_CSR_SET(mstatus, SOC_MSTATUS_MIE);
}
void soc_interrupts_off(void) {
    SOC_CSR_CLEAR(mstatus, SOC_MSTATUS_MIE);
}

void soc_wfi(void) {
    __asm__ volatile("wfi" ::: "memory");
}

uint64_t soc_time_ns(void) {
#if __riscv_xlen == 32
    /* Two halves: read high, low, high again until the high half held still. */
    uint32_t hi, lo;
    do {
        hi = SOC_MMIO32(SOC_TIMER_BASE + SOC_TIMER_MTIME + 4);
        lo = SOC_MMIO32(SOC_TIMER_BASE + SOC_TIMER_MTIME);
    } while (hi != SOC_MMIO32(SOC_TIMER_BASE + SOC_TIMER_MTIME + 4));
    return (uint64_t)hi << 32 | lo;
#else
    return *(volatile uint64_t*)(uintptr_t)(SOC_TIMER_BASE + SOC_TIMER_MTIME);
#endif
}

void soc_timer_at(uint64_t ns) {
#if __riscv_xlen == 32
    /* The high half first set to its largest value, so that no mix of old and new halves is ever
     * below both the old and the new compare value (the privileged spec's sequence). */
    SOC_MMIO32(SOC_TIMER_BASE + SOC_TIMER_MTIMECMP + 4) = 0xffffffffu;
    SOC_MMIO32(SOC_TIMER_BASE + SOC_TIMER_MTIMECMP) = (uint32_t)ns;
    SOC_MMIO32(SOC_TIMER_BASE + SOC_TIMER_MTIMECMP + 4) = (uint32_t)(ns >> 32);
#else
    *(volatile uint64_t*)(uintptr_t)(SOC_TIMER_BASE + SOC_TIMER_MTIMECMP) = ns;
#endif
}

static uint32_t soc_accel_read32(void* ctx, uint32_t offset) {
    (void)ctx;
    return SOC_MMIO32(SOC_ACCEL_BASE + offset);
}
static void soc_accel_write32(void* ctx, uint32_t offset, uint32_t value) {
    (void)ctx;
    SOC_MMIO32(SOC_ACCEL_BASE + offset) = value;
}

systolic_dev soc_accel(void) {
    systolic_dev dev = {NULL, soc_accel_read32, soc_accel_write32};
    return dev;
}

/* Straight to the UART: the trap may have interrupted a printf. */
static void soc_trap_puts(const char* s) {
    while (*s)
        soc_putc(*s++);
}
static void soc_trap_puthex(uintptr_t v) {
    soc_trap_puts("0x");
    for (int shift = (int)sizeof v * 8 - 4; shift >= 0; shift -= 4)
        soc_putc("0123456789abcdef"[(v >> shift) & 0xf]);
}

void soc_trap(uintptr_t mcause, uintptr_t mepc, uintptr_t mtval) {
    const uintptr_t interrupt = (uintptr_t)1 << (sizeof(uintptr_t) * 8 - 1);
    void (*handler)(void) = NULL;
    if (mcause == (interrupt | SOC_ACCEL_IRQ))
        handler = soc_irq_handler;
    else if (mcause == (interrupt | SOC_TIMER_IRQ))
        handler = soc_timer_handler;
    if (handler) {
        handler();
        return;
    }
    soc_trap_puts("soc_trap: no handler for mcause ");
    soc_trap_puthex(mcause);
    soc_trap_puts(" at mepc ");
    soc_trap_puthex(mepc);
    soc_trap_puts(" (mtval ");
    soc_trap_puthex(mtval);
    soc_trap_puts(")\n");
    __asm__ volatile("ebreak"); /* the platform reports the fault and stops */
    for (;;) {
    }
}
