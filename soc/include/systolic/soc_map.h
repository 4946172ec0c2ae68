/* <systolic/soc_map.h>: the memory map of systolic-soc, the RISC-V platform around the accelerator,
 * for its firmware (C99) and for the platform itself (C++). Declared here once; docs/soc.md's table
 * is checked against it. Every base and size is a multiple of 4 KiB (the CPU maps pages). */
#ifndef SYSTOLIC_SOC_MAP_H
#define SYSTOLIC_SOC_MAP_H

/* Main RAM: code, data, heap, stack (at its top), matrices. */
#define SOC_RAM_BASE 0x80000000u
#define SOC_RAM_SIZE 0x08000000u /* 128 MiB */

/* RAM above 4 GiB: the accelerator's DMA reaches it always, the CPU on RV64 only. */
#define SOC_HIGH_RAM_BASE 0x100000000ull
#define SOC_HIGH_RAM_SIZE 0x01000000u /* 16 MiB */

/* The accelerator's registers (<systolic/accelerator_regs.h>: offsets SYSTOLIC_REG_*); the window
 * is larger than the block (SYSTOLIC_REGS_SIZE), and an access past the block is a bus error. */
#define SOC_ACCEL_BASE 0x40000000u
#define SOC_ACCEL_SIZE 0x1000u

/* UART: write a byte to TX to send it; STATUS bit 0 (READY) always reads 1. */
#define SOC_UART_BASE 0x10000000u
#define SOC_UART_SIZE 0x1000u
#define SOC_UART_TX 0x0u
#define SOC_UART_STATUS 0x4u
#define SOC_UART_STATUS_READY 0x1u

/* Timer, in the CLINT's layout: mtime counts simulated nanoseconds; the machine timer interrupt is
 * pending while mtime >= mtimecmp. Both registers are 64 bits, read and written as one 64-bit or
 * two 32-bit accesses (low word first at the lower address). */
#define SOC_TIMER_BASE 0x02000000u
#define SOC_TIMER_SIZE 0x10000u
#define SOC_TIMER_MTIMECMP 0x4000u
#define SOC_TIMER_MTIME 0xbff8u
#define SOC_TIMER_HZ 1000000000u

/* Test finisher: a 32-bit write of a code to CODE ends the simulation; the code is the firmware's
 * verdict (0: pass, systolic-soc exits 0; anything else: it exits 1 and prints the code). */
#define SOC_FINISHER_BASE 0x00100000u
#define SOC_FINISHER_SIZE 0x1000u
#define SOC_FINISHER_CODE 0x0u

/* Interrupt numbers (mcause with its top bit set; bits of mie and mip). */
#define SOC_ACCEL_IRQ 11 /* machine external interrupt: the accelerator's irq */
#define SOC_TIMER_IRQ 7  /* machine timer interrupt */

#endif /* SYSTOLIC_SOC_MAP_H */
