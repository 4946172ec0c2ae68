/* Runs in the guest of qemu_accel_boot_test: finds the accelerator (its vendor and device IDs in hex
   as arguments, SYSTOLIC_PCI_VENDOR and _DEVICE unless a platform gives it others) on the PCI bus through
   sysfs, enables its memory space and bus mastering, maps BAR0 and drives it with the project's C driver
   (<systolic/accelerator_driver.h>) from user space: an int8 job whose A, B and C live in one locked page of
   this process (its physical address from /proc/self/pagemap), then C against the product worked out here.
   Prints "accel: PASS" and the counters, or "accel: FAIL" and why; exit status 0 or 1. Static, no driver
   needed. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <systolic/accelerator_driver.h>
#include <unistd.h>

#define M 5
#define K 7
#define P 6

static uint32_t read32(void* ctx, uint32_t offset) {
    return ((volatile uint32_t*)ctx)[offset / 4];
}
static void write32(void* ctx, uint32_t offset, uint32_t value) {
    ((volatile uint32_t*)ctx)[offset / 4] = value;
}

static unsigned read_hex(const char* dir, const char* name) {
    char path[512], text[32] = {0};
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    if (!fgets(text, sizeof text, f)) text[0] = 0;
    fclose(f);
    return (unsigned)strtoul(text, NULL, 16);
}

static int fail(const char* what) {
    printf("accel: FAIL: %s\n", what);
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 3) return fail("usage: accel VENDOR DEVICE");
    const unsigned vendor = (unsigned)strtoul(argv[1], NULL, 16),
                   device = (unsigned)strtoul(argv[2], NULL, 16);
    char dev[300] = {0}, path[400];
    DIR* d = opendir("/sys/bus/pci/devices");
    struct dirent* e;
    while (d && (e = readdir(d))) {
        snprintf(path, sizeof path, "/sys/bus/pci/devices/%s", e->d_name);
        if (read_hex(path, "vendor") == vendor && read_hex(path, "device") == device) strcpy(dev, path);
    }
    if (d) closedir(d);
    if (!dev[0]) return fail("no accelerator on the bus");
    snprintf(path, sizeof path, "%s/config", dev);
    int cfg = open(path, O_RDWR);
    uint16_t command = 0;
    if (cfg < 0 || pread(cfg, &command, 2, 4) != 2) return fail("cannot read the config space");
    command |= 0x6; /* memory space, bus master */
    if (pwrite(cfg, &command, 2, 4) != 2) return fail("cannot write the command register");
    close(cfg);
    snprintf(path, sizeof path, "%s/resource0", dev);
    int bar = open(path, O_RDWR | O_SYNC);
    void* regs = bar < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, bar, 0);
    if (regs == MAP_FAILED) return fail("cannot map BAR0");
    systolic_dev acc = {regs, read32, write32};
    uint32_t n = 0;
    if (systolic_probe(&acc, &n) != 0) return fail("the ID or VERSION register");

    long page = sysconf(_SC_PAGESIZE);
    uint8_t* buf = aligned_alloc((size_t)page, (size_t)page);
    if (!buf || mlock(buf, (size_t)page) != 0) return fail("cannot lock a page");
    memset(buf, 0, (size_t)page);
    int8_t* a = (int8_t*)buf;
    int8_t* b = (int8_t*)(buf + 64);
    int32_t* c = (int32_t*)(buf + 128);
    for (int i = 0; i < M * K; ++i)
        a[i] = (int8_t)((i * 37) % 251 - 125);
    for (int i = 0; i < K * P; ++i)
        b[i] = (int8_t)((i * 53) % 241 - 120);
    int map = open("/proc/self/pagemap", O_RDONLY);
    uint64_t entry = 0;
    if (map < 0 || pread(map, &entry, 8, (off_t)((uintptr_t)buf / (uintptr_t)page * 8)) != 8 ||
        !(entry >> 63) || (entry & ((1ull << 55) - 1)) == 0)
        return fail("no physical address in pagemap");
    close(map);
    const uint64_t phys = (entry & ((1ull << 55) - 1)) * (uint64_t)page;

    systolic_job job;
    systolic_job_init(&job);
    job.m = M;
    job.k = K;
    job.p = P;
    job.dtype = SYSTOLIC_DTYPE_INT8;
    job.a_addr = phys;
    job.b_addr = phys + 64;
    job.c_addr = phys + 128;
    systolic_program(&acc, &job);
    systolic_start(&acc, 0);
    int outcome = 0;
    for (int tries = 0; tries < 1000000 && outcome == 0; ++tries)
        outcome = systolic_outcome(&acc);
    if (outcome != 1) {
        printf("accel: FAIL: the job ended with ERROR %u\n", systolic_error(&acc));
        return 1;
    }
    for (int i = 0; i < M; ++i)
        for (int j = 0; j < P; ++j) {
            int32_t want = 0;
            for (int k = 0; k < K; ++k)
                want += (int32_t)a[i * K + k] * b[k * P + j];
            if (c[i * P + j] != want) {
                printf("accel: FAIL: C(%d,%d) is %d, not %d\n", i, j, c[i * P + j], want);
                return 1;
            }
        }
    systolic_counters counters;
    systolic_read_counters(&acc, &counters);
    printf("accel: PASS on a %ux%u array: edges %llu, MACs %llu of which real %llu, cycles %llu\n", n, n,
           (unsigned long long)counters.edges, (unsigned long long)counters.macs,
           (unsigned long long)counters.macs_real, (unsigned long long)counters.cycles);
    return 0;
}
