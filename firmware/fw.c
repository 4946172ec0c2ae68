#include "fw.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

systolic_dev fw_accel;

static volatile int fw_job_ended;

/* The interrupt of fw_start's job. Taken again with nothing pending (the line may still read high
 * for a moment after the clear), it only returns. */
static void fw_job_irq(void) {
    if (systolic_irq_ack(&fw_accel) != 0) fw_job_ended = 1;
}

void fw_job(systolic_job* job, uint32_t dtype, uint32_t m, uint32_t k, uint32_t p, uint64_t a, uint64_t b,
            uint64_t c) {
    systolic_job_init(job);
    job->dtype = dtype;
    job->m = m;
    job->k = k;
    job->p = p;
    job->a_addr = a;
    job->b_addr = b;
    job->c_addr = c;
}

int fw_init(const char* program, uint32_t* n) {
    fw_accel = soc_accel();
    if (systolic_probe(&fw_accel, n) != 0) {
        printf("%s: FAIL: no accelerator at 0x%08x (ID 0x%08x)\n", program, (unsigned)SOC_ACCEL_BASE,
               (unsigned)fw_accel.read32(fw_accel.ctx, SYSTOLIC_REG_ID));
        return -1;
    }
    return 0;
}

void fw_sleep_until(volatile int* flag) {
    soc_interrupts_off();
    while (!*flag) {
        soc_wfi();
        soc_interrupts_on();
        soc_interrupts_off();
    }
    soc_interrupts_on();
}

void fw_start(const systolic_job* job) {
    soc_set_irq_handler(fw_job_irq);
    soc_enable_irq();
    fw_job_ended = 0;
    systolic_program(&fw_accel, job);
    systolic_start(&fw_accel, 1);
}

int fw_wait(void) {
    fw_sleep_until(&fw_job_ended);
    return systolic_outcome(&fw_accel) == 1 ? 1 : -1;
}

int fw_run(const systolic_job* job) {
    fw_start(job);
    return fw_wait();
}

uint32_t fw_rand(uint32_t* state) {
    uint32_t x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    return *state = x;
}

int32_t fw_rand_range(uint32_t* state, int32_t lo, int32_t hi) {
    return lo + (int32_t)(fw_rand(state) % (uint32_t)(hi - lo + 1));
}

uint16_t fw_bf16_bits(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return (uint16_t)(bits >> 16);
}

float fw_bf16_value(uint16_t bits) {
    const uint32_t wide = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &wide, sizeof f);
    return f;
}

/* The four references' one loop nest: C(i, j) is the sum over t of TERM(A's index, B's index), in t
 * order from zero, kept in ACC (unsigned for the integers, so that a wrapping sum is defined in C as
 * it is in the accelerator). The functions give m, k, p, the strides lda, ldb, ldc and a, b, c. */
#define FW_GEMM(ACC, TERM, OUT)                                    \
    for (uint32_t i = 0; i < m; ++i)                               \
        for (uint32_t j = 0; j < p; ++j) {                         \
            ACC acc = 0;                                           \
            for (uint32_t t = 0; t < k; ++t)                       \
                acc = (ACC)(acc + TERM(i * lda + t, t * ldb + j)); \
            c[i * ldc + j] = (OUT)acc;                             \
        }
/* int8 x int8 fits in int32, int32 x int32 in int64; a float product is rounded before the sum, and
 * the product of two bf16 values is exact in float. */
#define FW_TERM_I8(x, y) (uint32_t)((int32_t)a[x] * b[y])
#define FW_TERM_I32(x, y) (uint64_t)((int64_t)a[x] * b[y])
#define FW_TERM_F32(x, y) (a[x] * b[y])
#define FW_TERM_BF16(x, y) (fw_bf16_value(a[x]) * fw_bf16_value(b[y]))

void fw_gemm_i8(const int8_t* a, const int8_t* b, int32_t* c, uint32_t m, uint32_t k, uint32_t p,
                uint32_t lda, uint32_t ldb, uint32_t ldc) {
    FW_GEMM(uint32_t, FW_TERM_I8, int32_t)
}

void fw_gemm_i32(const int32_t* a, const int32_t* b, int64_t* c, uint32_t m, uint32_t k, uint32_t p) {
    const uint32_t lda = k, ldb = p, ldc = p;
    FW_GEMM(uint64_t, FW_TERM_I32, int64_t)
}

void fw_gemm_f32(const float* a, const float* b, float* c, uint32_t m, uint32_t k, uint32_t p) {
    const uint32_t lda = k, ldb = p, ldc = p;
    FW_GEMM(float, FW_TERM_F32, float)
}

void fw_gemm_bf16(const uint16_t* a, const uint16_t* b, float* c, uint32_t m, uint32_t k, uint32_t p) {
    const uint32_t lda = k, ldb = p, ldc = p;
    FW_GEMM(float, FW_TERM_BF16, float)
}

/* An integer-valued double from x by the rounding mode, with floor and a comparison only. */
static double fw_round(double x, uint32_t rounding) {
    const double down = floor(x), frac = x - down;
    switch (rounding) {
        case SYSTOLIC_ROUNDING_TOWARD_ZERO:
            return x < 0 && frac != 0 ? down + 1 : down;
        case SYSTOLIC_ROUNDING_NEAREST_AWAY:
            if (frac == 0.5) return x < 0 ? down : down + 1;
            return frac > 0.5 ? down + 1 : down;
        default: /* nearest, ties to even */
            if (frac == 0.5) return fmod(down, 2.0) == 0 ? down : down + 1;
            return frac > 0.5 ? down + 1 : down;
    }
}

int8_t fw_requantize(int32_t acc, float scale, int32_t zero_point, uint32_t rounding) {
    const double q = fw_round((double)acc * (double)scale, rounding) + zero_point;
    if (q > 127) return 127;
    if (q < -128) return -128;
    return (int8_t)q;
}

#define FW_COMPARE(name, type, fmt, cast)                                                               \
    int name(const char* what, const type* got, const type* want, size_t n) {                           \
        for (size_t i = 0; i < n; ++i)                                                                  \
            if (memcmp(&got[i], &want[i], sizeof got[i]) != 0) {                                        \
                printf("%s: element %u is " fmt ", expected " fmt "\n", what, (unsigned)i, cast got[i], \
                       cast want[i]);                                                                   \
                return -1;                                                                              \
            }                                                                                           \
        return 0;                                                                                       \
    }
FW_COMPARE(fw_compare_i8, int8_t, "%d", (int))
FW_COMPARE(fw_compare_i32, int32_t, "%ld", (long))
FW_COMPARE(fw_compare_i64, int64_t, "%lld", (long long))
FW_COMPARE(fw_compare_f32, float, "%a", (double))
