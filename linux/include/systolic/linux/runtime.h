/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/* <systolic/linux/runtime.h>: a small user-space runtime over systolic.ko (<systolic/linux/systolic.h>),
 * C99 and C++, linked statically (libsystolic_linux_runtime.a). Open the device, allocate DMA buffers,
 * run jobs whose addresses are pointers into those buffers; a job larger than one buffer runs as
 * several jobs over bands of rows (systolic_run_rows). Every call returns 0 or a negative errno.
 * docs/linux.md describes it. */
#ifndef SYSTOLIC_LINUX_RUNTIME_H
#define SYSTOLIC_LINUX_RUNTIME_H

#include <stddef.h>
#include <stdint.h>
#include <systolic/linux/systolic.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct systolic_handle {
    int fd;
    struct systolic_ioc_info info; /* as it was at systolic_open */
} systolic_handle;

/* What a job left: the counters and energy when it completed; the device's ERROR code (and for
 * SYSTOLIC_ERR_DMA the failing bus address) when it was refused or failed. */
typedef struct systolic_result {
    systolic_counters counters;
    uint64_t energy; /* pJ; 0 when the accelerator prices no jobs */
    uint32_t error;  /* SYSTOLIC_ERR_* */
    uint64_t error_addr;
} systolic_result;

/* Opens `path` (NULL: SYSTOLIC_LINUX_DEVICE) and reads its description into h->info. */
int systolic_open(systolic_handle* h, const char* path);
void systolic_close(systolic_handle* h);
/* The device's description now (its job and interrupt counts move). */
int systolic_info(const systolic_handle* h, struct systolic_ioc_info* info);

/* A zeroed DMA buffer of `bytes` (at most h->info.max_buffer), page-aligned; NULL with errno set.
 * Freed by systolic_free, or when the process ends (after any job using it has ended). */
void* systolic_alloc(systolic_handle* h, size_t bytes);
int systolic_free(void* buffer, size_t bytes);

/* Runs one job whose a_addr, b_addr, c_addr (and partial_addr, scale_vec_addr when non-zero) are
 * pointers into this process's buffers, cast with systolic_addr. 0 when it completed; -EFAULT when
 * an operand does not lie inside one buffer (the device never saw the job); the errno of the
 * device's ERROR code when it refused or failed the job, with the code in result->error.
 * result may be NULL. */
int systolic_run(systolic_handle* h, const systolic_job* job, systolic_result* result);

static inline uint64_t systolic_addr(const void* p) {
    return (uint64_t)(uintptr_t)p;
}

/* A band of rows of a job too large for one buffer: its rows of A, C and (for K_POLICY_PARTIALS)
 * of the partial-sum buffer, each at its own pointer, possibly in different buffers. */
typedef struct systolic_rows {
    uint32_t rows;
    const void* a;
    void* c;
    void* partial; /* NULL: none */
} systolic_rows;

/* Plans the bands of m rows that systolic_run_rows runs when each row takes row_bytes of a buffer
 * (of C, P times its element's size; or of A or C, whichever is wider, when each band holds its own
 * rows of both): every band but the last holds the most rows one buffer of max_buffer bytes holds,
 * the last the rest. Returns that number of rows, with the number of bands in *n; 0 (and *n = 0)
 * when m or row_bytes is 0, or a row is over max_buffer. */
uint32_t systolic_plan_rows(uint64_t m, uint64_t row_bytes, uint64_t max_buffer, size_t* n);

/* Runs `job` (its m, a_addr, c_addr and partial_addr ignored) as n jobs, one per band, in order,
 * with B and the scale vector shared; the bands' rows must add up to the rows wanted. Stops at the
 * first failure (its result in *result, and in *failed_band its index when failed_band is not NULL).
 * The counters in *result are the sums over the bands that ran. */
int systolic_run_rows(systolic_handle* h, const systolic_job* job, const systolic_rows* bands, size_t n,
                      systolic_result* result, size_t* failed_band);

/* "ERR_DTYPE" for SYSTOLIC_ERR_DTYPE; "ERR_?" for a code the runtime does not know. */
const char* systolic_error_name(uint32_t code);

#ifdef __cplusplus
}
#endif

#endif /* SYSTOLIC_LINUX_RUNTIME_H */
