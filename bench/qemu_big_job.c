/* Runs in systolic-qemu's guest for scripts/qemu_bench: one int8 M x K x P GEMM (arguments) with
   random operands through systolic.ko and its runtime (<systolic/linux/runtime.h>), in bands of rows
   where C exceeds one DMA buffer, and prints the wall time of the submission
   ("job_seconds=S bands=N macs_real=X"). C is not checked here (the reference would take TCG
   minutes): the passive checker checks every band on the host, and the platform's exit status says
   how that went. Static, for the guest. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systolic/linux/runtime.h>
#include <time.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t pages(size_t bytes) {
    return (bytes + 4095) / 4096 * 4096;
}

int main(int argc, char** argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: qemu_big_job M K P\n");
        return 2;
    }
    const uint32_t m = (uint32_t)atoi(argv[1]), k = (uint32_t)atoi(argv[2]), p = (uint32_t)atoi(argv[3]);
    systolic_handle h;
    int ret = systolic_open(&h, NULL);
    if (ret != 0) {
        fprintf(stderr, "qemu_big_job: %s: %s\n", SYSTOLIC_LINUX_DEVICE, strerror(-ret));
        return 1;
    }
    const size_t max = h.info.max_buffer, c_row = (size_t)p * 4;
    if (m == 0 || (size_t)m * k > max || (size_t)k * p > max || c_row > max) {
        fprintf(stderr, "qemu_big_job: A, B and a row of C must each fit one %zu-byte buffer\n", max);
        return 2;
    }
    size_t n;
    const uint32_t band_rows = systolic_plan_rows(m, c_row, max, &n);
    systolic_rows* bands = calloc(n, sizeof *bands);
    int8_t* a = systolic_alloc(&h, pages((size_t)m * k));
    int8_t* b = systolic_alloc(&h, pages((size_t)k * p));
    if (!bands || !a || !b) {
        fprintf(stderr, "qemu_big_job: allocation: %s\n", strerror(errno));
        return 1;
    }
    srand(1);
    for (size_t i = 0; i < (size_t)m * k; ++i)
        a[i] = (int8_t)(rand() & 0xff);
    for (size_t i = 0; i < (size_t)k * p; ++i)
        b[i] = (int8_t)(rand() & 0xff);
    for (size_t i = 0; i < n; ++i) {
        bands[i].rows = i + 1 < n ? band_rows : m - band_rows * (uint32_t)i;
        bands[i].a = a + (size_t)band_rows * i * k;
        if (!(bands[i].c = systolic_alloc(&h, pages(bands[i].rows * c_row)))) {
            fprintf(stderr, "qemu_big_job: C band %zu: %s\n", i, strerror(errno));
            return 1;
        }
    }
    systolic_job job;
    systolic_job_init(&job);
    job.k = k;
    job.p = p;
    job.dtype = SYSTOLIC_DTYPE_INT8;
    job.b_addr = systolic_addr(b);
    systolic_result r;
    const double begin = now();
    ret = systolic_run_rows(&h, &job, bands, n, &r, NULL);
    const double seconds = now() - begin;
    if (ret != 0) {
        fprintf(stderr, "qemu_big_job: %s (%s)\n", strerror(-ret), systolic_error_name(r.error));
        return 1;
    }
    printf("job_seconds=%.3f bands=%zu macs_real=%llu\n", seconds, n,
           (unsigned long long)r.counters.macs_real);
    systolic_close(&h);
    return 0;
}
