/* Runs in the guest of qemu_cli_test's bad-input test: lets the accelerator go from its driver,
   turns bus mastering off, and makes COUNT (argument) random 8-, 16- and 32-bit reads and writes
   across the accelerator's page of BAR0 (<systolic/qemu_map.h>), a third of them START writes, with
   the configuration registers filled with values both sensible and wild: refusals, soft resets,
   jobs that fail their first DMA. The platform must answer every access and check every job; the
   guest prints "fuzz: done" and exits 0, having given the device back to the driver. Static. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <systolic/accelerator_regs.h>
#include <systolic/qemu_map.h>

#include "guest_pci.h"

static uint64_t state = 0x9e3779b97f4a7c15ull;
static uint32_t next(void) {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return (uint32_t)(state >> 16);
}

/* A value for a register: small, the register's field values, or anything. */
static uint32_t value(void) {
    switch (next() % 4) {
        case 0:
            return next() % 8;
        case 1:
            return next() % 300;
        case 2:
            return 1u << (next() % 32);
        default:
            return next();
    }
}

int main(int argc, char** argv) {
    const long count = argc == 2 ? strtol(argv[1], NULL, 10) : 0;
    char dev[300], driver[400], path[400];
    if (count <= 0) {
        fprintf(stderr, "usage: fuzz COUNT\n");
        return 2;
    }
    if (guest_find_function(SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE, dev, sizeof dev) != 0 ||
        guest_unbind_function(dev, driver, sizeof driver) != 0) {
        printf("fuzz: FAIL: cannot take the function from its driver\n");
        return 1;
    }
    volatile uint32_t* bar0;
    const char* failed =
        guest_open_function(SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE, SYSTOLIC_QEMU_ACCEL_SIZE, &bar0);
    if (failed) {
        printf("fuzz: FAIL: %s\n", failed);
        return 1;
    }
    /* Bus mastering off: a job that passes its checks fails its first DMA (ERR_DMA) rather than
       writing C over the guest's own memory. */
    snprintf(path, sizeof path, "%s/config", dev);
    int cfg = open(path, O_RDWR);
    uint16_t command = 0;
    if (cfg < 0 || pread(cfg, &command, 2, 4) != 2) return printf("fuzz: FAIL: config space\n"), 1;
    command &= (uint16_t)~0x4u;
    if (pwrite(cfg, &command, 2, 4) != 2) return printf("fuzz: FAIL: command register\n"), 1;
    close(cfg);
    volatile uint8_t* bytes = (volatile uint8_t*)bar0;
    uint32_t sink = 0;
    for (long i = 0; i < count; ++i) {
        const uint32_t offset = next() % SYSTOLIC_QEMU_ACCEL_SIZE, width = 1u << (next() % 3);
        const uint32_t at = offset & ~(width - 1);
        if (next() % 3 == 0) {
            if (next() % 2) { /* a shape that passes the first checks, so that later ones are reached */
                bar0[SYSTOLIC_REG_M / 4] = 1 + next() % 40;
                bar0[SYSTOLIC_REG_K / 4] = 1 + next() % 40;
                bar0[SYSTOLIC_REG_P / 4] = 1 + next() % 40;
                const uint32_t a = next() & ~0xfffu;
                bar0[SYSTOLIC_REG_A_ADDR_LO / 4] = a;
                bar0[SYSTOLIC_REG_B_ADDR_LO / 4] = a + 0x10000;
                bar0[SYSTOLIC_REG_C_ADDR_LO / 4] = a + 0x20000;
            }
            bar0[SYSTOLIC_REG_CTRL / 4] = next() % 8 == 0 ? SYSTOLIC_CTRL_RESET : SYSTOLIC_CTRL_START;
        } else if (next() % 2) {
            const uint32_t v = value();
            if (width == 4) bar0[at / 4] = v;
            if (width == 2) *(volatile uint16_t*)(bytes + at) = (uint16_t)v;
            if (width == 1) bytes[at] = (uint8_t)v;
        } else {
            sink += width == 4 ? bar0[at / 4] : width == 2 ? *(volatile uint16_t*)(bytes + at) : bytes[at];
        }
    }
    bar0[SYSTOLIC_REG_CTRL / 4] = SYSTOLIC_CTRL_RESET;
    munmap((void*)bar0, SYSTOLIC_QEMU_ACCEL_SIZE);
    if (guest_rebind_function(dev, driver) != 0) {
        printf("fuzz: FAIL: cannot give the function back to its driver\n");
        return 1;
    }
    printf("fuzz: done, %ld accesses (%u)\n", count, sink & 1);
    return 0;
}
