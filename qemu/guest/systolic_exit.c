/* systolic-exit CODE: the last thing systolic-qemu's /init runs. Writes CODE (the status of the
   program the guest ran) to the test-exit register in BAR0 of the accelerator's PCI function
   (<systolic/qemu_map.h>), which systolic-qemu exits with once QEMU has powered off. From user space
   through sysfs, after the driver has let the function go. Static, for the guest. */
#include <stdio.h>
#include <stdlib.h>
#include <systolic/accelerator_regs.h>
#include <systolic/qemu_map.h>

#include "guest_pci.h"

int main(int argc, char** argv) {
    char* end = NULL;
    const long code = argc == 2 ? strtol(argv[1], &end, 10) : -1;
    if (argc != 2 || !end || *end || code < 0 || code > 255) {
        fprintf(stderr, "usage: systolic-exit CODE (0 to 255)\n");
        return 2;
    }
    volatile uint32_t* bar0;
    const char* failed =
        guest_open_function(SYSTOLIC_PCI_VENDOR, SYSTOLIC_PCI_DEVICE, SYSTOLIC_QEMU_BAR0_SIZE, &bar0);
    if (failed) {
        fprintf(stderr, "systolic-exit: the accelerator's BAR0: %s\n", failed);
        return 1;
    }
    bar0[SYSTOLIC_QEMU_EXIT_OFFSET / 4] = (uint32_t)code;
    return 0;
}
