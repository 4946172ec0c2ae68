/* The error paths of the register map (docs/accelerator.md, "Behaviour"), from firmware:
 *  - each refusal at START, with its code read back from ERROR: ZERO_DIM, DTYPE (DTYPE and
 *    OUT_DTYPE), OPTION, PARTIAL, ALIGN, STRIDE, RANGE, SIZE, OVERLAP; a refusal raises the
 *    interrupt with IRQ_STATUS.ERROR, sets STATUS to ERROR alone and writes nothing to C;
 *  - BUSY: a START while a job runs is refused and the running job still completes, correct;
 *  - DMA: a job whose A (a read) or C (a write) lies where nothing answers on the bus fails with
 *    ERR_DMA and the failing address in ERROR_ADDR;
 *  - a soft reset while a job runs: BUSY holds until the job has stopped, then every register is
 *    back at its reset value, the stopped job reports nothing, and the next job runs correctly.
 * (ERR_INTERNAL, the array's watchdog, would be a model defect; no configuration reaches it.) */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fw.h"

/* Nothing answers here: between the UART and the accelerator in <systolic/soc_map.h>. */
#define UNMAPPED 0x30000000u

enum { M = 4, K = 5, P = 6, BIG = 64 };
static int32_t a[BIG * BIG], b[BIG * BIG];
static int64_t c[BIG * BIG], want[BIG * BIG];

static volatile int irq_count, irq_done;
static volatile uint32_t irq_causes;

static void on_accelerator(void) {
    const uint32_t causes = systolic_irq_ack(&fw_accel);
    if (causes == 0) return; /* the line had not yet fallen after the previous acknowledgement */
    irq_causes |= causes;
    ++irq_count;
    if (causes & SYSTOLIC_IRQ_DONE) irq_done = 1;
}

/* The job every refusal starts from: int32, M x K x P, packed, accepted as it is. */
static void base_job(systolic_job* job) {
    fw_job(job, SYSTOLIC_DTYPE_INT32, M, K, P, (uintptr_t)a, (uintptr_t)b, (uintptr_t)c);
}

static void zero_m(systolic_job* j) {
    j->m = 0;
}
static void zero_k(systolic_job* j) {
    j->k = 0;
}
static void zero_p(systolic_job* j) {
    j->p = 0;
}
static void bad_dtype(systolic_job* j) {
    j->dtype = 4;
}
static void bad_out_dtype(systolic_job* j) {
    j->out_dtype = 2;
}
static void bad_order(systolic_job* j) {
    j->order = 3;
}
static void bad_policy(systolic_job* j) {
    j->k_policy = 2;
}
static void bad_overflow(systolic_job* j) {
    j->overflow = 2;
}
static void bad_rounding(systolic_job* j) {
    j->rounding = 3;
}
static void negative_scale(systolic_job* j) {
    j->out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
    j->scale = -0.5f;
}
static void infinite_scale(systolic_job* j) {
    j->out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
    j->scale = INFINITY;
}
static void no_partial_buffer(systolic_job* j) {
    j->k_tile = 2;
    j->k_policy = SYSTOLIC_K_POLICY_PARTIALS;
}
static void misaligned_a(systolic_job* j) {
    j->a_addr += 2;
}
static void misaligned_stride(systolic_job* j) {
    j->c_stride = P * 8 + 4;
}
static void short_stride(systolic_job* j) {
    j->a_stride = (K - 1) * 4;
}
/* 128 bytes below 2^64, and C is M x P int64 = 192 bytes. */
static void past_2_to_64(systolic_job* j) {
    j->c_addr = 0xffffffffffffff80ull;
}
static void k_too_long(systolic_job* j) {
    j->k = 0x80000000u;
}
/* A plan of 2^32 tiles: far more than the model may allocate for one job (max_job_bytes). */
static void huge_plan(systolic_job* j) {
    j->m = j->p = 1u << 20;
    j->c_addr = 0x100000000000ull;
}
static void c_on_a(systolic_job* j) {
    j->c_addr = j->a_addr + 8;
}
static void partial_on_c(systolic_job* j) {
    no_partial_buffer(j);
    j->partial_addr = j->c_addr;
}

typedef struct refusal {
    const char* what;
    void (*change)(systolic_job*);
    uint32_t error;
    const char* error_name;
} refusal;
#define REFUSAL(what, change, error) \
    { what, change, error, #error }
static const refusal refusals[] = {
    REFUSAL("M = 0", zero_m, SYSTOLIC_ERR_ZERO_DIM),
    REFUSAL("K = 0", zero_k, SYSTOLIC_ERR_ZERO_DIM),
    REFUSAL("P = 0", zero_p, SYSTOLIC_ERR_ZERO_DIM),
    REFUSAL("DTYPE 4", bad_dtype, SYSTOLIC_ERR_DTYPE),
    REFUSAL("OUT_DTYPE 2", bad_out_dtype, SYSTOLIC_ERR_DTYPE),
    REFUSAL("ORDER 3", bad_order, SYSTOLIC_ERR_OPTION),
    REFUSAL("K_POLICY 2", bad_policy, SYSTOLIC_ERR_OPTION),
    REFUSAL("OVERFLOW 2", bad_overflow, SYSTOLIC_ERR_OPTION),
    REFUSAL("ROUNDING 3", bad_rounding, SYSTOLIC_ERR_OPTION),
    REFUSAL("int8 output, SCALE -0.5", negative_scale, SYSTOLIC_ERR_OPTION),
    REFUSAL("int8 output, SCALE infinite", infinite_scale, SYSTOLIC_ERR_OPTION),
    REFUSAL("partial sums in 3 chunks, PARTIAL_ADDR 0", no_partial_buffer, SYSTOLIC_ERR_PARTIAL),
    REFUSAL("A at an odd multiple of 2 (int32)", misaligned_a, SYSTOLIC_ERR_ALIGN),
    REFUSAL("C_STRIDE not a multiple of 8 (int64 C)", misaligned_stride, SYSTOLIC_ERR_ALIGN),
    REFUSAL("A_STRIDE shorter than a row", short_stride, SYSTOLIC_ERR_STRIDE),
    REFUSAL("C running past 2^64", past_2_to_64, SYSTOLIC_ERR_RANGE),
    REFUSAL("K = 2^31", k_too_long, SYSTOLIC_ERR_RANGE),
    REFUSAL("M = P = 2^20 (the tile plan)", huge_plan, SYSTOLIC_ERR_SIZE),
    REFUSAL("C overlapping A", c_on_a, SYSTOLIC_ERR_OVERLAP),
    REFUSAL("the partial-sum buffer on C", partial_on_c, SYSTOLIC_ERR_OVERLAP),
};
enum { REFUSALS = sizeof refusals / sizeof refusals[0] };

static const uint8_t sentinel = 0x5a;

static int c_untouched(size_t bytes) {
    for (size_t i = 0; i < bytes; ++i)
        if (((const uint8_t*)c)[i] != sentinel) return 0;
    return 1;
}

/* Starts the job with the interrupt enabled. */
static void start(const systolic_job* job) {
    irq_count = irq_done = 0;
    irq_causes = 0;
    systolic_program(&fw_accel, job);
    systolic_start(&fw_accel, 1);
}

/* Starts the job and sleeps until its first interrupt. */
static void start_and_sleep(const systolic_job* job) {
    start(job);
    fw_sleep_until(&irq_count);
}

static int check_refusal(const refusal* r) {
    systolic_job job;
    base_job(&job);
    r->change(&job);
    systolic_reset(&fw_accel); /* STATUS from this start only (an earlier DONE stays otherwise) */
    memset(c, sentinel, sizeof c);
    start_and_sleep(&job);
    const uint32_t status = systolic_status(&fw_accel), error = systolic_error(&fw_accel);
    printf("refused: %-44s ERROR %2u (%s)\n", r->what, (unsigned)error, r->error_name);
    if (error != r->error || status != SYSTOLIC_STATUS_ERROR || irq_causes != SYSTOLIC_IRQ_ERROR) {
        printf("errors: FAIL: %s: ERROR %u (expected %u), STATUS 0x%x, interrupt causes 0x%x\n", r->what,
               (unsigned)error, (unsigned)r->error, (unsigned)status, (unsigned)irq_causes);
        return -1;
    }
    if (!c_untouched(sizeof c)) {
        printf("errors: FAIL: %s: a refused job wrote C\n", r->what);
        return -1;
    }
    return 0;
}

static void big_job(systolic_job* job) {
    base_job(job);
    job->m = job->k = job->p = BIG;
}

static int check_big_result(const char* what) {
    char line[64];
    snprintf(line, sizeof line, "errors: FAIL: %s: C", what);
    return fw_compare_i64(line, c, want, (size_t)BIG * BIG);
}

/* START while busy: refused, and the running job completes as if nothing had happened. */
static int check_busy(void) {
    systolic_job job;
    big_job(&job);
    systolic_reset(&fw_accel);
    start(&job);
    fw_accel.write32(fw_accel.ctx, SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_START | SYSTOLIC_CTRL_IRQ_EN);
    const uint32_t error = systolic_error(&fw_accel), status = systolic_status(&fw_accel);
    printf("refused: %-44s ERROR %2u (%s)\n", "START while a job runs", (unsigned)error, "SYSTOLIC_ERR_BUSY");
    if (error != SYSTOLIC_ERR_BUSY || status != (SYSTOLIC_STATUS_BUSY | SYSTOLIC_STATUS_ERROR)) {
        printf("errors: FAIL: START while busy: ERROR %u, STATUS 0x%x\n", (unsigned)error, (unsigned)status);
        return -1;
    }
    /* The refusal's interrupt first, then the job's end. */
    fw_sleep_until(&irq_done);
    const uint32_t end = systolic_status(&fw_accel);
    if (end != (SYSTOLIC_STATUS_DONE | SYSTOLIC_STATUS_ERROR) || (irq_causes & SYSTOLIC_IRQ_DONE) == 0) {
        printf("errors: FAIL: START while busy: the running job ended with STATUS 0x%x, causes 0x%x\n",
               (unsigned)end, (unsigned)irq_causes);
        return -1;
    }
    return check_big_result("START while busy");
}

static int check_dma(const char* what, uint64_t a_addr, uint64_t c_addr, uint64_t lo, uint64_t bytes) {
    systolic_job job;
    base_job(&job);
    job.a_addr = a_addr;
    job.c_addr = c_addr;
    systolic_reset(&fw_accel);
    start_and_sleep(&job);
    const uint32_t status = systolic_status(&fw_accel), error = systolic_error(&fw_accel);
    const uint64_t at = systolic_error_address(&fw_accel);
    printf("failed: %-45s ERROR %2u (SYSTOLIC_ERR_DMA) at 0x%llx\n", what, (unsigned)error,
           (unsigned long long)at);
    if (error != SYSTOLIC_ERR_DMA || status != SYSTOLIC_STATUS_ERROR || irq_causes != SYSTOLIC_IRQ_ERROR) {
        printf("errors: FAIL: %s: ERROR %u, STATUS 0x%x, causes 0x%x\n", what, (unsigned)error,
               (unsigned)status, (unsigned)irq_causes);
        return -1;
    }
    if (at < lo || at >= lo + bytes) {
        printf("errors: FAIL: %s: ERROR_ADDR outside the unmapped matrix\n", what);
        return -1;
    }
    return 0;
}

/* A soft reset while a job runs. */
static int check_reset(void) {
    systolic_job job;
    big_job(&job);
    systolic_reset(&fw_accel);
    memset(c, sentinel, sizeof c);
    start(&job);
    /* Well into the job (it takes tens of microseconds), then the reset. */
    const uint64_t t0 = soc_time_ns();
    while (soc_time_ns() - t0 < 2000) {
    }
    const uint32_t before = systolic_status(&fw_accel);
    systolic_reset(&fw_accel);
    const uint64_t reset_at = soc_time_ns();
    unsigned polls = 0;
    while (systolic_status(&fw_accel) & SYSTOLIC_STATUS_BUSY)
        ++polls;
    const uint64_t stopped_ns = soc_time_ns() - reset_at;
    printf("soft reset while busy: STATUS 0x%x before it, BUSY for %llu ns after it (%u polls)\n",
           (unsigned)before, (unsigned long long)stopped_ns, polls);
    if (before != SYSTOLIC_STATUS_BUSY) {
        printf("errors: FAIL: soft reset: the job was not running any more\n");
        return -1;
    }
    /* Let any event the stopped job might have left behind happen, then look. */
    const uint64_t t1 = soc_time_ns();
    while (soc_time_ns() - t1 < 100000) {
    }
    const uint32_t regs[] = {SYSTOLIC_REG_CTRL,       SYSTOLIC_REG_STATUS,    SYSTOLIC_REG_ERROR,
                             SYSTOLIC_REG_IRQ_STATUS, SYSTOLIC_REG_M,         SYSTOLIC_REG_K,
                             SYSTOLIC_REG_P,          SYSTOLIC_REG_A_ADDR_LO, SYSTOLIC_REG_DTYPE,
                             SYSTOLIC_REG_EDGES_LO};
    for (size_t i = 0; i < sizeof regs / sizeof regs[0]; ++i) {
        const uint32_t v = fw_accel.read32(fw_accel.ctx, regs[i]);
        if (v != 0) {
            printf("errors: FAIL: soft reset: register 0x%03x reads 0x%x, its reset value is 0\n",
                   (unsigned)regs[i], (unsigned)v);
            return -1;
        }
    }
    const uint32_t scale = fw_accel.read32(fw_accel.ctx, SYSTOLIC_REG_SCALE);
    if (scale != 0x3f800000u || irq_count != 0) {
        printf("errors: FAIL: soft reset: SCALE 0x%x (reset 0x3f800000), %d interrupts\n", (unsigned)scale,
               irq_count);
        return -1;
    }
    /* The next job runs normally. */
    start_and_sleep(&job);
    if (systolic_status(&fw_accel) != SYSTOLIC_STATUS_DONE) {
        printf("errors: FAIL: the job after the soft reset ended with ERROR %u\n",
               (unsigned)systolic_error(&fw_accel));
        return -1;
    }
    return check_big_result("the job after the soft reset");
}

int main(void) {
    uint32_t n = 0;
    if (fw_init("errors", &n) != 0) return 1;
    uint32_t seed = 0x1234567u;
    for (int i = 0; i < BIG * BIG; ++i) {
        a[i] = fw_rand_range(&seed, -1000, 1000);
        b[i] = fw_rand_range(&seed, -1000, 1000);
    }
    fw_gemm_i32(a, b, want, BIG, BIG, BIG);
    soc_set_irq_handler(on_accelerator);
    soc_enable_irq();

    int failed = 0;
    for (int i = 0; i < REFUSALS; ++i)
        failed |= check_refusal(&refusals[i]) != 0;
    failed |= check_busy() != 0;
    failed |=
        check_dma("A unmapped (a read fails)", UNMAPPED, (uintptr_t)c, UNMAPPED, (uint64_t)M * K * 4) != 0;
    failed |=
        check_dma("C unmapped (a write fails)", (uintptr_t)a, UNMAPPED, UNMAPPED, (uint64_t)M * P * 8) != 0;
    failed |= check_reset() != 0;
    if (failed) return 1;
    printf("errors: PASS\n");
    return 0;
}
