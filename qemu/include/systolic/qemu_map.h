/* <systolic/qemu_map.h>: BAR0 of the accelerator as systolic-qemu's PCI function, for guest software
 * (C99) and the platform (C++). Declared here once; docs/qemu.md's table is checked against it. The
 * function's IDs are the accelerator's own (<systolic/accelerator_regs.h>: SYSTOLIC_PCI_*). */
#ifndef SYSTOLIC_QEMU_MAP_H
#define SYSTOLIC_QEMU_MAP_H

/* BAR0: 32-bit, non-prefetchable memory, 8 KiB. */
#define SYSTOLIC_QEMU_BAR0_SIZE 0x2000u

/* The accelerator's registers (offsets SYSTOLIC_REG_*): the first 4 KiB page, all of it the driver's;
 * an access past the block (SYSTOLIC_REGS_SIZE) reads all-ones and writes nothing. */
#define SYSTOLIC_QEMU_ACCEL_OFFSET 0x0u
#define SYSTOLIC_QEMU_ACCEL_SIZE 0x1000u

/* The test-exit register, in a page of its own so that a driver that claims the accelerator's page
 * leaves it free: a 32-bit write of a code to EXIT is the guest's verdict, which systolic-qemu
 * exits with once QEMU has powered off (the first code written stands; it reads back, 0 before). */
#define SYSTOLIC_QEMU_EXIT_OFFSET 0x1000u
#define SYSTOLIC_QEMU_EXIT_SIZE 0x1000u

#endif /* SYSTOLIC_QEMU_MAP_H */
