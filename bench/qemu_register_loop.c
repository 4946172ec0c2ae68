/* Runs in systolic-qemu's guest for scripts/qemu_bench: times COUNT 32-bit reads of the register
   at OFFSET in BAR0 of the PCI function VENDOR:DEVICE (hex), from user space through sysfs, and
   prints "VENDOR:DEVICE ns_per_read=N". A driver bound to the function is unbound first (sysfs
   maps no BAR a driver holds) and bound again after. Static, for the guest. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guest_pci.h"

static double now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: qemu_register_loop VENDOR DEVICE OFFSET COUNT\n");
        return 2;
    }
    const unsigned vendor = (unsigned)strtoul(argv[1], NULL, 16),
                   device = (unsigned)strtoul(argv[2], NULL, 16);
    const unsigned offset = (unsigned)strtoul(argv[3], NULL, 0);
    const long count = strtol(argv[4], NULL, 10);
    char dev[300], driver[400];
    if (guest_find_function(vendor, device, dev, sizeof dev) != 0) {
        fprintf(stderr, "qemu_register_loop: no function %04x:%04x\n", vendor, device);
        return 1;
    }
    if (guest_unbind_function(dev, driver, sizeof driver) != 0) {
        fprintf(stderr, "qemu_register_loop: cannot unbind %s from its driver\n", dev);
        return 1;
    }
    volatile uint32_t* bar0;
    const char* failed = guest_open_function(vendor, device, offset + 4, &bar0);
    if (failed) {
        fprintf(stderr, "qemu_register_loop: %s\n", failed);
        return 1;
    }
    uint32_t sum = 0;
    for (long i = 0; i < count / 10 + 1; ++i) /* warm up: TCG translates the loop */
        sum += bar0[offset / 4];
    const double begin = now_ns();
    for (long i = 0; i < count; ++i)
        sum += bar0[offset / 4];
    const double per_read = (now_ns() - begin) / (double)count;
    printf("%04x:%04x ns_per_read=%.0f (value 0x%08x)\n", vendor, device, per_read, bar0[offset / 4]);
    munmap((void*)bar0, offset + 4);
    if (guest_rebind_function(dev, driver) != 0) {
        fprintf(stderr, "qemu_register_loop: cannot bind %s to its driver again\n", dev);
        return 1;
    }
    return sum == 0xdeadbeef; /* keeps the reads */
}
