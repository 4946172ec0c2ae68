/* Runs in the guest of qemu_pci_boot_test: finds the tiny device (qemu_tiny_device.h) on the PCI bus
   through sysfs, enables its memory space and bus mastering through its config space, maps BAR0,
   and checks its registers and a DMA into a page of this process (its physical address read from
   /proc/self/pagemap). Writes its verdict to TINY_EXIT: 0, or the number of the first check that
   failed; each check also prints one line on the console. Static, no driver needed. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qemu_tiny_device.h"

static volatile uint32_t* regs;

static unsigned read_hex(const char* dir, const char* name) {
    char path[512], text[32] = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(text, sizeof text, f)) text[0] = 0;
    fclose(f);
    return (unsigned)strtoul(text, NULL, 16);
}

static int fail(int check, const char* what) {
    printf("probe: check %d failed: %s\n", check, what);
    if (regs) regs[TINY_EXIT / 4] = (uint32_t)check;
    return check;
}

int main(void) {
    char dev[300] = {0};
    DIR* d = opendir("/sys/bus/pci/devices");
    struct dirent* e;
    while (d && (e = readdir(d))) {
        char path[300];
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", e->d_name);
        if (read_hex(path, "vendor") == TINY_VENDOR && read_hex(path, "device") == TINY_DEVICE)
            strcpy(dev, path);
    }
    if (d) closedir(d);
    if (!dev[0]) return fail(1, "no tiny device on the bus");

    /* Memory space and bus mastering on: the command register through the config file. */
    char path[400];
    snprintf(path, sizeof path, "%s/config", dev);
    int cfg = open(path, O_RDWR);
    uint16_t command = 0;
    if (cfg < 0 || pread(cfg, &command, 2, 4) != 2) return fail(2, "cannot read the config space");
    command |= 0x6;
    if (pwrite(cfg, &command, 2, 4) != 2) return fail(2, "cannot write the command register");
    close(cfg);

    snprintf(path, sizeof path, "%s/resource0", dev);
    int bar = open(path, O_RDWR | O_SYNC);
    if (bar < 0) return fail(3, "cannot open resource0");
    regs = mmap(NULL, TINY_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, bar, 0);
    if (regs == MAP_FAILED) {
        regs = NULL;
        return fail(3, "cannot map BAR0");
    }
    if (regs[TINY_ID / 4] != TINY_ID_VALUE) return fail(4, "the ID register");
    regs[TINY_SCRATCH / 4] = 0xc0ffee42u;
    if (regs[TINY_SCRATCH / 4] != 0xc0ffee42u) return fail(5, "the scratch register");

    /* A page of ours, its physical address from pagemap (root sees the frame numbers). */
    long page = sysconf(_SC_PAGESIZE);
    uint8_t* buf = aligned_alloc((size_t)page, (size_t)page);
    if (!buf || mlock(buf, (size_t)page) != 0) return fail(6, "cannot lock a page");
    for (int i = 0; i < 2 * TINY_DMA_BYTES; ++i)
        buf[i] = (uint8_t)(i < TINY_DMA_BYTES ? 3 * i : 0);
    int map = open("/proc/self/pagemap", O_RDONLY);
    uint64_t entry = 0;
    if (map < 0 || pread(map, &entry, 8, (off_t)((uintptr_t)buf / (uintptr_t)page * 8)) != 8 ||
        !(entry >> 63) || (entry & ((1ull << 55) - 1)) == 0)
        return fail(6, "no physical address in pagemap");
    close(map);
    uint64_t phys = (entry & ((1ull << 55) - 1)) * (uint64_t)page;
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
