/* An interrupt-driven queue: jobs of every number format and several K-splits, started back to
 * back from the accelerator's interrupt handler while main sleeps in wfi. The handler acknowledges
 * the interrupt, notes the job's outcome, counters and end time, and starts the next job at once;
 * after the last one it wakes main, which checks every C against its own software GEMM. */
#include <stdio.h>
#include <string.h>

#include "fw.h"

typedef struct queued {
    const char* what;
    uint32_t dtype, m, k, p, k_tile, k_policy, order, out_dtype, rounding;
    float scale;
    int32_t zero_point;
} queued;

static const queued queue[] = {
    {"int8", SYSTOLIC_DTYPE_INT8, 20, 33, 18, 0, SYSTOLIC_K_POLICY_PRESERVE, SYSTOLIC_ORDER_ROW,
     SYSTOLIC_OUT_DTYPE_ACC, 0, 1.0f, 0},
    {"int32, K in chunks of 16, partial sums, column order", SYSTOLIC_DTYPE_INT32, 17, 40, 9, 16,
     SYSTOLIC_K_POLICY_PARTIALS, SYSTOLIC_ORDER_COL, SYSTOLIC_OUT_DTYPE_ACC, 0, 1.0f, 0},
    {"fp32, K in chunks of 8, serpentine order", SYSTOLIC_DTYPE_FP32, 24, 30, 20, 8,
     SYSTOLIC_K_POLICY_PRESERVE, SYSTOLIC_ORDER_SNAKE, SYSTOLIC_OUT_DTYPE_ACC, 0, 1.0f, 0},
    {"bf16", SYSTOLIC_DTYPE_BF16, 19, 25, 21, 0, SYSTOLIC_K_POLICY_PRESERVE, SYSTOLIC_ORDER_ROW,
     SYSTOLIC_OUT_DTYPE_ACC, 0, 1.0f, 0},
    {"int8 to int8 codes, K in chunks of 20, partial sums", SYSTOLIC_DTYPE_INT8, 32, 64, 16, 20,
     SYSTOLIC_K_POLICY_PARTIALS, SYSTOLIC_ORDER_ROW, SYSTOLIC_OUT_DTYPE_INT8, SYSTOLIC_ROUNDING_NEAREST_AWAY,
     0.01f, 7},
    {"fp32, K in chunks of 7, partial sums", SYSTOLIC_DTYPE_FP32, 9, 29, 33, 7, SYSTOLIC_K_POLICY_PARTIALS,
     SYSTOLIC_ORDER_ROW, SYSTOLIC_OUT_DTYPE_ACC, 0, 1.0f, 0},
    {"bf16, K in chunks of 5", SYSTOLIC_DTYPE_BF16, 16, 23, 16, 5, SYSTOLIC_K_POLICY_PRESERVE,
     SYSTOLIC_ORDER_COL, SYSTOLIC_OUT_DTYPE_ACC, 0, 1.0f, 0},
};
enum { JOBS = sizeof queue / sizeof queue[0] };

/* What each job needs in memory, carved from one pool, 8-byte aligned. */
typedef struct buffers {
    void *a, *b, *c, *partial, *want;
} buffers;
static buffers bufs[JOBS];
static systolic_job jobs[JOBS];
static uint64_t pool[12 * 1024];
static size_t pool_used;

static void* take(size_t bytes) {
    void* p = (uint8_t*)pool + pool_used;
    pool_used += (bytes + 7) & ~(size_t)7;
    return pool_used <= sizeof pool ? p : NULL;
}

static size_t operand_bytes(uint32_t dtype) {
    return dtype == SYSTOLIC_DTYPE_INT8 ? 1 : dtype == SYSTOLIC_DTYPE_BF16 ? 2 : 4;
}
static size_t accumulator_bytes(uint32_t dtype) {
    return dtype == SYSTOLIC_DTYPE_INT32 ? 8 : 4;
}

/* Operands the format holds exactly; the int and float sums then test the k order. */
static void fill(uint32_t dtype, void* m, size_t count, uint32_t* seed) {
    for (size_t i = 0; i < count; ++i)
        switch (dtype) {
            case SYSTOLIC_DTYPE_INT8:
                ((int8_t*)m)[i] = (int8_t)fw_rand_range(seed, -100, 100);
                break;
            case SYSTOLIC_DTYPE_INT32:
                ((int32_t*)m)[i] = fw_rand_range(seed, -1000, 1000);
                break;
            case SYSTOLIC_DTYPE_FP32:
                ((float*)m)[i] = (float)fw_rand_range(seed, -1024, 1023) / 1024.0f;
                break;
            default:
                ((uint16_t*)m)[i] = fw_bf16_bits((float)fw_rand_range(seed, -128, 127) / 64.0f);
        }
}

/* The software GEMM of the job's format, into `want` (C's layout). */
static void reference(const queued* q, const buffers* b) {
    switch (q->dtype) {
        case SYSTOLIC_DTYPE_INT8:
            if (q->out_dtype == SYSTOLIC_OUT_DTYPE_INT8) {
                int32_t* acc = take((size_t)q->m * q->p * 4);
                fw_gemm_i8(b->a, b->b, acc, q->m, q->k, q->p, q->k, q->p, q->p);
                for (uint32_t i = 0; i < q->m * q->p; ++i)
                    ((int8_t*)b->want)[i] = fw_requantize(acc[i], q->scale, q->zero_point, q->rounding);
            } else {
                fw_gemm_i8(b->a, b->b, b->want, q->m, q->k, q->p, q->k, q->p, q->p);
            }
            break;
        case SYSTOLIC_DTYPE_INT32:
            fw_gemm_i32(b->a, b->b, b->want, q->m, q->k, q->p);
            break;
        case SYSTOLIC_DTYPE_FP32:
            fw_gemm_f32(b->a, b->b, b->want, q->m, q->k, q->p);
            break;
        default:
            fw_gemm_bf16(b->a, b->b, b->want, q->m, q->k, q->p);
    }
}

static int compare(const queued* q, const buffers* b, const char* what) {
    const size_t n = (size_t)q->m * q->p;
    if (q->out_dtype == SYSTOLIC_OUT_DTYPE_INT8) return fw_compare_i8(what, b->c, b->want, n);
    switch (q->dtype) {
        case SYSTOLIC_DTYPE_INT8:
            return fw_compare_i32(what, b->c, b->want, n);
        case SYSTOLIC_DTYPE_INT32:
            return fw_compare_i64(what, b->c, b->want, n);
        default:
            return fw_compare_f32(what, b->c, b->want, n);
    }
}

/* The handler's record of each job. */
static volatile int current, all_done;
static volatile unsigned interrupts, spurious;
static uint32_t status[JOBS], error[JOBS];
static uint64_t macs_real[JOBS], cycles[JOBS], end_ns[JOBS];

static void on_accelerator(void) {
    const uint32_t causes = systolic_irq_ack(&fw_accel);
    if (causes == 0) {
        ++spurious; /* the line had not yet fallen after the previous acknowledgement */
        return;
    }
    ++interrupts;
    const int i = current;
    status[i] = systolic_status(&fw_accel);
    error[i] = systolic_error(&fw_accel);
    macs_real[i] = systolic_read64(&fw_accel, SYSTOLIC_REG_MACS_REAL_LO);
    cycles[i] = systolic_read64(&fw_accel, SYSTOLIC_REG_CYCLES_LO);
    end_ns[i] = soc_time_ns();
    if (i + 1 < JOBS) {
        current = i + 1;
        systolic_program(&fw_accel, &jobs[i + 1]);
        systolic_start(&fw_accel, 1);
    } else {
        all_done = 1;
    }
}

int main(void) {
    uint32_t n = 0;
    if (fw_init("irq_queue", &n) != 0) return 1;
    uint32_t seed = 0x9e3779b9u;
    for (int i = 0; i < JOBS; ++i) {
        const queued* q = &queue[i];
        buffers* b = &bufs[i];
        const size_t out = q->out_dtype == SYSTOLIC_OUT_DTYPE_INT8 ? 1 : accumulator_bytes(q->dtype);
        b->a = take((size_t)q->m * q->k * operand_bytes(q->dtype));
        b->b = take((size_t)q->k * q->p * operand_bytes(q->dtype));
        b->c = take((size_t)q->m * q->p * out);
        b->want = take((size_t)q->m * q->p * out);
        b->partial = q->k_policy == SYSTOLIC_K_POLICY_PARTIALS
                         ? take((size_t)q->m * q->p * accumulator_bytes(q->dtype))
                         : NULL;
        if (!b->a || !b->b || !b->c || !b->want ||
            (q->k_policy == SYSTOLIC_K_POLICY_PARTIALS && !b->partial)) {
            printf("irq_queue: FAIL: the pool is too small\n");
            return 1;
        }
        fill(q->dtype, b->a, (size_t)q->m * q->k, &seed);
        fill(q->dtype, b->b, (size_t)q->k * q->p, &seed);
        systolic_job* job = &jobs[i];
        fw_job(job, q->dtype, q->m, q->k, q->p, (uintptr_t)b->a, (uintptr_t)b->b, (uintptr_t)b->c);
        job->partial_addr = (uintptr_t)b->partial;
        job->k_tile = q->k_tile;
        job->k_policy = q->k_policy;
        job->order = q->order;
        job->out_dtype = q->out_dtype;
        job->rounding = q->rounding;
        job->scale = q->scale;
        job->zero_point = q->zero_point;
    }

    /* The queue: the first job from here, every other from the handler. */
    soc_set_irq_handler(on_accelerator);
    soc_enable_irq();
    const uint64_t t0 = soc_time_ns();
    systolic_program(&fw_accel, &jobs[0]);
    systolic_start(&fw_accel, 1);
    fw_sleep_until(&all_done);
    const uint64_t queue_ns = soc_time_ns() - t0;

    int failed = 0;
    uint64_t previous = t0;
    for (int i = 0; i < JOBS; ++i) {
        const queued* q = &queue[i];
        reference(q, &bufs[i]);
        /* From one handler to the next: the job's CYCLES (1 ns each), the interrupt's latency and
         * the handler's own register accesses. */
        printf(
            "job %d: %s, %ux%ux%u: handled at +%llu ns (%llu ns after the last, CYCLES %llu), MACS_REAL "
            "%llu\n",
            i, q->what, (unsigned)q->m, (unsigned)q->k, (unsigned)q->p, (unsigned long long)(end_ns[i] - t0),
            (unsigned long long)(end_ns[i] - previous), (unsigned long long)cycles[i],
            (unsigned long long)macs_real[i]);
        previous = end_ns[i];
        char what[48];
        snprintf(what, sizeof what, "irq_queue: FAIL: job %d's C", i);
        if (!(status[i] & SYSTOLIC_STATUS_DONE) || error[i] != SYSTOLIC_ERR_NONE) {
            printf("irq_queue: FAIL: job %d: STATUS 0x%x, ERROR %u\n", i, (unsigned)status[i],
                   (unsigned)error[i]);
            failed = 1;
        } else if (macs_real[i] != (uint64_t)q->m * q->k * q->p) {
            printf("irq_queue: FAIL: job %d: MACS_REAL should be M x K x P\n", i);
            failed = 1;
        } else if (compare(q, &bufs[i], what) != 0) {
            failed = 1;
        }
    }
    printf("%d jobs in %llu ns of simulated time, %u interrupts (%u with nothing pending)\n", JOBS,
           (unsigned long long)queue_ns, interrupts, spurious);
    if (interrupts != JOBS) {
        printf("irq_queue: FAIL: one interrupt per job expected\n");
        failed = 1;
    }
    if (failed) return 1;
    printf("irq_queue: PASS\n");
    return 0;
}
