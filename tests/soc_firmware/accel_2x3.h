/* The job that accel_smoke.c and accel_meddle.c run: int32 C = A * B, 2x3 by 3x2, packed, with the
 * interrupt or without. Both include this header, so they start the same job the same way;
 * accel_refused.c spoils one field of it. */
#ifndef SOC_TESTS_ACCEL_2X3_H
#define SOC_TESTS_ACCEL_2X3_H

#include <stdio.h>

#include "soc.h"

static int32_t a[2 * 3] = {1, 2, 3, 4, 5, 6};
static int32_t b[3 * 2] = {7, 8, 9, 10, 11, 12};
static int64_t c[2 * 2];

/* The 2x3 job on a, b and c, with every other field at its default. */
static inline void job_2x3(systolic_job* job) {
    systolic_job_init(job);
    job->m = 2;
    job->k = 3;
    job->p = 2;
    job->a_addr = (uintptr_t)a;
    job->b_addr = (uintptr_t)b;
    job->c_addr = (uintptr_t)c;
}

/* Probes the accelerator, programs the job and starts it (the interrupt raised at its end when
 * `irq`). Returns the array size N, or 0, with a line, when no accelerator answers. */
static inline uint32_t start_2x3(const systolic_dev* dev, int irq) {
    uint32_t n = 0;
    if (systolic_probe(dev, &n) != 0) {
        printf("no accelerator\n");
        return 0;
    }
    systolic_job job;
    job_2x3(&job);
    systolic_program(dev, &job);
    systolic_start(dev, irq);
    return n;
}

/* 1 when C holds A * B. */
static inline int c_is_a_times_b(void) {
    static const int64_t want[2 * 2] = {58, 64, 139, 154};
    for (int i = 0; i < 2 * 2; ++i)
        if (c[i] != want[i]) return 0;
    return 1;
}

#endif
