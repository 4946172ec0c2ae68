/* Runs in the guest of qemu_accel_boot_test: finds the accelerator (its vendor and device IDs in hex
   as arguments, SYSTOLIC_PCI_VENDOR and _DEVICE unless a platform gives it others) on the PCI bus through
   sysfs, enables its memory space and bus mastering, maps BAR0 and drives it with the project's C driver
   (<systolic/accelerator_driver.h>) from user space: an int8 job whose A, B and C live in one locked page of
   this process (its physical address from /proc/self/pagemap), then C against the product worked out here.
   Prints "accel: PASS" and the counters, or "accel: FAIL" and why; exit status 0 or 1. Static, no driver
   needed. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <systolic/accelerator_driver.h>

#include "guest_pci.h"

#define M 5
#define K 7
#define P 6

static uint32_t read32(void* ctx, uint32_t offset) {
    return ((volatile uint32_t*)ctx)[offset / 4];
}
static void write32(void* ctx, uint32_t offset, uint32_t value) {
    ((volatile uint32_t*)ctx)[offset / 4] = value;
}

static int fail(const char* what) {
    printf("accel: FAIL: %s\n", what);
    return 1;
}

int main(int argc, char** argv) {
    if (argc != 3) return fail("usage: accel VENDOR DEVICE");
    const unsigned vendor = (unsigned)strtoul(argv[1], NULL, 16),
                   device = (unsigned)strtoul(argv[2], NULL, 16);
    volatile uint32_t* regs;
    const char* failed = guest_open_function(vendor, device, 4096, &regs);
    if (failed) return fail(failed);
    systolic_dev acc = {(void*)regs, read32, write32};
    uint32_t n = 0;
    if (systolic_probe(&acc, &n) != 0) return fail("the ID or VERSION register");

    uint8_t* buf;
    uint64_t phys;
    if ((failed = guest_locked_page(&buf, &phys))) return fail(failed);
    int8_t* a = (int8_t*)buf;
    int8_t* b = (int8_t*)(buf + 64);
    int32_t* c = (int32_t*)(buf + 128);
    for (int i = 0; i < M * K; ++i)
        a[i] = (int8_t)((i * 37) % 251 - 125);
    for (int i = 0; i < K * P; ++i)
        b[i] = (int8_t)((i * 53) % 241 - 120);

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
