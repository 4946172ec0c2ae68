/* start.S: the entry of a systolic-soc firmware and its trap vector.
 * soc_start (the ELF entry, soc.ld) sets gp, sp (the top of RAM), tp (the TLS block, which the
 * platform has loaded in place) and mtvec (the trap vector), before any C runs, and calls
 * soc_start_c (soc.c): .bss zeroed, constructors, main, then exit with main's return value, which
 * soc.c's _exit writes to the finisher. picolibc.specs links picolibc's own crt0 into every program,
 * whose _start would leave main's return in an endless loop; it is not the entry, and the linker
 * drops it.
 * The trap vector saves the registers a C call may change, calls soc_trap(mcause, mepc, mtval) and
 * returns with mret. Only interrupts arrive here: the platform stops at synchronous exceptions. */
    .option arch, +zicsr

#if __riscv_xlen == 64
#define REG_S sd
#define REG_L ld
#define REG_BYTES 8
#else
#define REG_S sw
#define REG_L lw
#define REG_BYTES 4
#endif
/* ra, t0-t6, a0-a7: 16 registers, which keeps sp 16-byte aligned on both ISAs. */
#define FRAME (16 * REG_BYTES)

    .section .text.soc_start, "ax", @progbits
    .globl soc_start
    .type soc_start, @function
soc_start:
    .option push
    .option norelax /* gp cannot be set relative to itself */
    la gp, __global_pointer$
    .option pop
    la sp, __stack
    la tp, __tls_base
    la t0, soc_trap_vector
    csrw mtvec, t0
    call soc_start_c
    .size soc_start, . - soc_start

    .text
    .balign 4 /* mtvec's mode bits: direct */
    .globl soc_trap_vector
    .type soc_trap_vector, @function
soc_trap_vector:
    addi sp, sp, -FRAME
    REG_S ra, 0 * REG_BYTES(sp)
    REG_S t0, 1 * REG_BYTES(sp)
    REG_S t1, 2 * REG_BYTES(sp)
    REG_S t2, 3 * REG_BYTES(sp)
    REG_S a0, 4 * REG_BYTES(sp)
    REG_S a1, 5 * REG_BYTES(sp)
    REG_S a2, 6 * REG_BYTES(sp)
    REG_S a3, 7 * REG_BYTES(sp)
    REG_S a4, 8 * REG_BYTES(sp)
    REG_S a5, 9 * REG_BYTES(sp)
    REG_S a6, 10 * REG_BYTES(sp)
    REG_S a7, 11 * REG_BYTES(sp)
    REG_S t3, 12 * REG_BYTES(sp)
    REG_S t4, 13 * REG_BYTES(sp)
    REG_S t5, 14 * REG_BYTES(sp)
    REG_S t6, 15 * REG_BYTES(sp)
    csrr a0, mcause
    csrr a1, mepc
    csrr a2, mtval
    call soc_trap
    REG_L ra, 0 * REG_BYTES(sp)
    REG_L t0, 1 * REG_BYTES(sp)
    REG_L t1, 2 * REG_BYTES(sp)
    REG_L t2, 3 * REG_BYTES(sp)
    REG_L a0, 4 * REG_BYTES(sp)
    REG_L a1, 5 * REG_BYTES(sp)
    REG_L a2, 6 * REG_BYTES(sp)
    REG_L a3, 7 * REG_BYTES(sp)
    REG_L a4, 8 * REG_BYTES(sp)
    REG_L a5, 9 * REG_BYTES(sp)
    REG_L a6, 10 * REG_BYTES(sp)
    REG_L a7, 11 * REG_BYTES(sp)
    REG_L t3, 12 * REG_BYTES(sp)
    REG_L t4, 13 * REG_BYTES(sp)
    REG_L t5, 14 * REG_BYTES(sp)
    REG_L t6, 15 * REG_BYTES(sp)
    addi sp, sp, FRAME
    mret
    .size soc_trap_vector, . - soc_trap_vector
