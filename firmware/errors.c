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

/* One refusal: what it is, the job, and the code ERROR must then hold. */
typedef struct refusal {
    const char* what;
    systolic_job job;
    uint32_t error;
    const char* error_name;
} refusal;

/* The job every refusal starts from: int32, M x K x P, packed, accepted as it is. A refusal lists
 * the fields it changes after these: a later designator overrides an earlier one (C99 6.7.8),
 * which is what -Woverride-init warns about, and is meant here. */
#define BASE_JOB                                                                                    \
    .m = M, .k = K, .p = P, .a_addr = (uintptr_t)a, .b_addr = (uintptr_t)b, .c_addr = (uintptr_t)c, \
    .dtype = SYSTOLIC_DTYPE_INT32, .scale = 1.0f
#define REFUSAL(what, error, ...) \
    { what, {BASE_JOB, __VA_ARGS__}, error, #error }
#define INT8_OUT .out_dtype = SYSTOLIC_OUT_DTYPE_INT8
/* K = 5 in three chunks of partial sums, which need a partial-sum buffer. */
#define PARTIALS .k_tile = 2, .k_policy = SYSTOLIC_K_POLICY_PARTIALS

static systolic_job base_job(void) {
    const systolic_job job = {BASE_JOB};
    return job;
}

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

/* 0 when the job just started ended as expected: ERROR and STATUS hold `error` and `status`, and
 * the interrupt's causes under `mask` are `causes`; else a FAIL line and -1. */
static int expect_end(const char* what, uint32_t error, uint32_t status, uint32_t mask, uint32_t causes) {
    const uint32_t got_error = systolic_error(&fw_accel), got_status = systolic_status(&fw_accel);
    if (got_error == error && got_status == status && (irq_causes & mask) == causes) return 0;
    printf("errors: FAIL: %s: ERROR %u (expected %u), STATUS 0x%x (expected 0x%x), interrupt causes 0x%x\n",
           what, (unsigned)got_error, (unsigned)error, (unsigned)got_status, (unsigned)status,
           (unsigned)irq_causes);
    return -1;
}

static int check_refusal(const refusal* r) {
    systolic_reset(&fw_accel); /* STATUS from this start only (an earlier DONE stays otherwise) */
    memset(c, sentinel, sizeof c);
    start_and_sleep(&r->job);
    printf("refused: %-44s ERROR %2u (%s)\n", r->what, (unsigned)systolic_error(&fw_accel), r->error_name);
    if (expect_end(r->what, r->error, SYSTOLIC_STATUS_ERROR, ~0u, SYSTOLIC_IRQ_ERROR) != 0) return -1;
    if (!c_untouched(sizeof c)) {
        printf("errors: FAIL: %s: a refused job wrote C\n", r->what);
        return -1;
    }
    return 0;
}

static systolic_job big_job(void) {
    systolic_job job = base_job();
    job.m = job.k = job.p = BIG;
    return job;
}

static int check_big_result(const char* what) {
    char line[64];
    snprintf(line, sizeof line, "errors: FAIL: %s: C", what);
    return fw_compare_i64(line, c, want, (size_t)BIG * BIG);
}

/* START while busy: refused, and the running job completes as if nothing had happened. */
static int check_busy(void) {
    const systolic_job job = big_job();
    systolic_reset(&fw_accel);
    start(&job);
    fw_accel.write32(fw_accel.ctx, SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_START | SYSTOLIC_CTRL_IRQ_EN);
    printf("refused: %-44s ERROR %2u (%s)\n", "START while a job runs", (unsigned)systolic_error(&fw_accel),
           "SYSTOLIC_ERR_BUSY");
    /* Refused while the job runs, whatever interrupt has come yet ... */
    if (expect_end("START while busy", SYSTOLIC_ERR_BUSY, SYSTOLIC_STATUS_BUSY | SYSTOLIC_STATUS_ERROR, 0,
                   0) != 0)
        return -1;
    /* ... then the refusal's interrupt, then the job's end. */
    fw_sleep_until(&irq_done);
    if (expect_end("START while busy, the running job's end", SYSTOLIC_ERR_BUSY,
                   SYSTOLIC_STATUS_DONE | SYSTOLIC_STATUS_ERROR, SYSTOLIC_IRQ_DONE, SYSTOLIC_IRQ_DONE) != 0)
        return -1;
    return check_big_result("START while busy");
}

static int check_dma(const char* what, uint64_t a_addr, uint64_t c_addr, uint64_t lo, uint64_t bytes) {
    systolic_job job = base_job();
    job.a_addr = a_addr;
    job.c_addr = c_addr;
    systolic_reset(&fw_accel);
    start_and_sleep(&job);
    const uint64_t at = systolic_error_address(&fw_accel);
    printf("failed: %-45s ERROR %2u (SYSTOLIC_ERR_DMA) at 0x%llx\n", what,
           (unsigned)systolic_error(&fw_accel), (unsigned long long)at);
    if (expect_end(what, SYSTOLIC_ERR_DMA, SYSTOLIC_STATUS_ERROR, ~0u, SYSTOLIC_IRQ_ERROR) != 0) return -1;
    if (at < lo || at >= lo + bytes) {
        printf("errors: FAIL: %s: ERROR_ADDR outside the unmapped matrix\n", what);
        return -1;
    }
    return 0;
}

/* Every refusal of the register map, in docs/accelerator.md's order. The table is made at run
 * time: on RV32 a uint64_t address from a pointer is no constant. */
static int check_refusals(void) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
    const refusal refusals[] = {
        REFUSAL("M = 0", SYSTOLIC_ERR_ZERO_DIM, .m = 0),
        REFUSAL("K = 0", SYSTOLIC_ERR_ZERO_DIM, .k = 0),
        REFUSAL("P = 0", SYSTOLIC_ERR_ZERO_DIM, .p = 0),
        REFUSAL("DTYPE 4", SYSTOLIC_ERR_DTYPE, .dtype = 4),
        REFUSAL("OUT_DTYPE 2", SYSTOLIC_ERR_DTYPE, .out_dtype = 2),
        REFUSAL("ORDER 3", SYSTOLIC_ERR_OPTION, .order = 3),
        REFUSAL("K_POLICY 2", SYSTOLIC_ERR_OPTION, .k_policy = 2),
        REFUSAL("OVERFLOW 2", SYSTOLIC_ERR_OPTION, .overflow = 2),
        REFUSAL("ROUNDING 3", SYSTOLIC_ERR_OPTION, .rounding = 3),
        REFUSAL("int8 output, SCALE -0.5", SYSTOLIC_ERR_OPTION, INT8_OUT, .scale = -0.5f),
        REFUSAL("int8 output, SCALE infinite", SYSTOLIC_ERR_OPTION, INT8_OUT, .scale = INFINITY),
        REFUSAL("partial sums in 3 chunks, PARTIAL_ADDR 0", SYSTOLIC_ERR_PARTIAL, PARTIALS),
        REFUSAL("A at an odd multiple of 2 (int32)", SYSTOLIC_ERR_ALIGN, .a_addr = (uintptr_t)a + 2),
        REFUSAL("C_STRIDE not a multiple of 8 (int64 C)", SYSTOLIC_ERR_ALIGN, .c_stride = P * 8 + 4),
        REFUSAL("A_STRIDE shorter than a row", SYSTOLIC_ERR_STRIDE, .a_stride = (K - 1) * 4),
        /* 128 bytes below 2^64, and C is M x P int64 = 192 bytes. */
        REFUSAL("C running past 2^64", SYSTOLIC_ERR_RANGE, .c_addr = 0xffffffffffffff80ull),
        REFUSAL("K = 2^31", SYSTOLIC_ERR_RANGE, .k = 0x80000000u),
        /* A plan of 2^32 tiles: far more than the model may allocate for one job (max_job_bytes). */
        REFUSAL("M = P = 2^20 (the tile plan)", SYSTOLIC_ERR_SIZE, .m = 1u << 20, .p = 1u << 20,
                .c_addr = 0x100000000000ull),
        REFUSAL("C overlapping A", SYSTOLIC_ERR_OVERLAP, .c_addr = (uintptr_t)a + 8),
        REFUSAL("the partial-sum buffer on C", SYSTOLIC_ERR_OVERLAP, PARTIALS, .partial_addr = (uintptr_t)c),
    };
#pragma GCC diagnostic pop
    int failed = 0;
    for (size_t i = 0; i < sizeof refusals / sizeof refusals[0]; ++i)
        failed |= check_refusal(&refusals[i]) != 0;
    return failed ? -1 : 0;
}

/* A soft reset while a job runs. */
static int check_reset(void) {
    const systolic_job job = big_job();
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
    failed |= check_refusals() != 0;
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
