/* Runs in the guest of qemu_pci_boot_test: finds the tiny device (qemu_tiny_device.h) on the PCI bus
   through sysfs, enables its memory space and bus mastering through its config space, maps BAR0,
   and checks its registers and a DMA into a page of this process (its physical address read from
   /proc/self/pagemap). Writes its verdict to TINY_EXIT: 0, or the number of the first check that
   failed; each check also prints one line on the console. Static, no driver needed. */
#include <stdint.h>
#include <stdio.h>

#include "guest_pci.h"
#include "qemu_tiny_device.h"

static volatile uint32_t* regs;

static int fail(int check, const char* what) {
    printf("probe: check %d failed: %s\n", check, what);
    if (regs) regs[TINY_EXIT / 4] = (uint32_t)check;
    return check;
}

int main(void) {
    const char* failed = guest_open_function(TINY_VENDOR, TINY_DEVICE, TINY_SIZE, &regs);
    if (failed) return fail(1, failed);
    if (regs[TINY_ID / 4] != TINY_ID_VALUE) return fail(4, "the ID register");
    regs[TINY_SCRATCH / 4] = 0xc0ffee42u;
    if (regs[TINY_SCRATCH / 4] != 0xc0ffee42u) return fail(5, "the scratch register");

    /* A page of ours, its physical address from pagemap (root sees the frame numbers). */
    uint8_t* buf;
    uint64_t phys;
    if ((failed = guest_locked_page(&buf, &phys))) return fail(6, failed);
    for (int i = 0; i < TINY_DMA_BYTES; ++i)
        buf[i] = (uint8_t)(3 * i);
    regs[TINY_DMA_LO / 4] = (uint32_t)phys;
    regs[TINY_DMA_HI / 4] = (uint32_t)(phys >> 32);
    /* The write returns once the device has done the copy (the platform settles before it answers),
       so the bytes are there before any other access to the device. */
    regs[TINY_GO / 4] = 1;
    for (int i = 0; i < TINY_DMA_BYTES; ++i)
        if (buf[TINY_DMA_BYTES + i] != (uint8_t)(3 * i + 1)) return fail(7, "the DMA's bytes");
    if (regs[TINY_STATUS / 4] != 1) return fail(8, "the DMA's status");
    printf("probe: every check passed (DMA at 0x%llx)\n", (unsigned long long)phys);
    regs[TINY_EXIT / 4] = 0;
    return 0;
}
