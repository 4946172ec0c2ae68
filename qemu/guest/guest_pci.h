/* What guest programs of systolic-qemu (systolic_exit.c) and of the QEMU tests (qemu_guest_probe.c,
   qemu_guest_accel.c) do alike, from user space with no driver: find a PCI function by its IDs in sysfs, turn
   on its memory space and bus mastering through its config file, map BAR0; and lock a page of their own whose
   physical address (from /proc/self/pagemap) a device's DMA can use. Each returns NULL, or what failed. */
#ifndef SYSTOLIC_GUEST_PCI_H
#define SYSTOLIC_GUEST_PCI_H

#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static unsigned guest_read_hex(const char* dir, const char* name) {
    char path[512], text[32] = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(text, sizeof text, f)) text[0] = 0;
    fclose(f);
    return (unsigned)strtoul(text, NULL, 16);
}

/* The sysfs directory of the function vendor:device in dev (of size n); 0, or -1 when there is none. */
static int guest_find_function(unsigned vendor, unsigned device, char* dev, size_t n) {
    char path[400];
    int found = -1;
    DIR* d = opendir("/sys/bus/pci/devices");
    struct dirent* e;
    while (d && (e = readdir(d))) {
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", e->d_name);
        if (guest_read_hex(path, "vendor") == vendor && guest_read_hex(path, "device") == device) {
            snprintf(dev, n, "%s", path);
            found = 0;
        }
    }
    if (d) closedir(d);
    return found;
}

/* The function vendor:device, enabled, its BAR0's first `bytes` mapped at *bar0. */
static const char* guest_open_function(unsigned vendor, unsigned device, size_t bytes,
                                       volatile uint32_t** bar0) {
    char dev[300], path[400];
    if (guest_find_function(vendor, device, dev, sizeof dev) != 0) return "no such function on the bus";
    snprintf(path, sizeof path, "%s/config", dev);
    int cfg = open(path, O_RDWR);
    uint16_t command = 0;
    if (cfg < 0 || pread(cfg, &command, 2, 4) != 2) return "cannot read the config space";
    command |= 0x6; /* memory space, bus master */
    if (pwrite(cfg, &command, 2, 4) != 2) return "cannot write the command register";
    close(cfg);
    snprintf(path, sizeof path, "%s/resource0", dev);
    int bar = open(path, O_RDWR | O_SYNC);
    void* p = bar < 0 ? MAP_FAILED : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, bar, 0);
    if (p == MAP_FAILED) return "cannot map BAR0";
    *bar0 = (volatile uint32_t*)p;
    return NULL;
}

/* Writes `text` to the sysfs file `path`; 0 on success. */
static int guest_write_sysfs(const char* path, const char* text) {
    FILE* f = fopen(path, "w");
    if (!f) return -1;
    const int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok ? 0 : -1;
}

/* Lets the function at sysfs directory dev go from its driver, if one holds it (sysfs maps no BAR a
   driver holds), naming the driver's directory in driver (of size n; "" when none held it). 0, or
   -1 when it cannot. guest_rebind_function gives it back. */
static int guest_unbind_function(const char* dev, char* driver, size_t n) {
    char path[400], link[400];
    snprintf(path, sizeof path, "%s/driver", dev);
    const ssize_t len = readlink(path, link, sizeof link - 1);
    driver[0] = 0;
    if (len <= 0) return 0;
    link[len] = 0;
    snprintf(driver, n, "/sys/bus/pci/drivers/%s", strrchr(link, '/') + 1);
    snprintf(path, sizeof path, "%s/unbind", driver);
    return guest_write_sysfs(path, strrchr(dev, '/') + 1);
}

static int guest_rebind_function(const char* dev, const char* driver) {
    char path[400];
    if (!driver[0]) return 0;
    snprintf(path, sizeof path, "%s/bind", driver);
    return guest_write_sysfs(path, strrchr(dev, '/') + 1);
}

/* A zeroed, locked page of this process at *page, at physical address *phys. */
static const char* guest_locked_page(uint8_t** page, uint64_t* phys) {
    const long size = sysconf(_SC_PAGESIZE);
    uint8_t* buf = aligned_alloc((size_t)size, (size_t)size);
    if (!buf || mlock(buf, (size_t)size) != 0) return "cannot lock a page";
    memset(buf, 0, (size_t)size);
    int map = open("/proc/self/pagemap", O_RDONLY);
    uint64_t entry = 0;
    if (map < 0 || pread(map, &entry, 8, (off_t)((uintptr_t)buf / (uintptr_t)size * 8)) != 8 ||
        !(entry >> 63) || (entry & ((1ull << 55) - 1)) == 0)
        return "no physical address in pagemap";
    close(map);
    *page = buf;
    *phys = (entry & ((1ull << 55) - 1)) * (uint64_t)size;
    return NULL;
}

#endif
