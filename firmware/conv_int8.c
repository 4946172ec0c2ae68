/* A tiled int8 convolution layer with requantization, lowered to GEMMs by the firmware itself.
 *
 * The layer: a 16x16 input of 16 channels (int8, HWC), 32 filters of 3x3x16, stride 1, zero
 * padding 1, giving a 16x16x32 int8 output: q = saturate(round(acc x 1/16) - 5). The firmware
 * lowers it band by band (im2col): a band of 4 output rows is a 64 x 144 matrix A (one row per
 * output pixel, one column per (ky, kx, channel)), the filters are B, 144 x 32, and the band's
 * output is the 64 x 32 GEMM C = A x B requantized to int8, written in place in the output. Each
 * band is one accelerator job (int8 operands, OUT_DTYPE int8, K split in chunks of 48), and the
 * hart lowers the next band while the accelerator runs the current one (two A buffers).
 *
 * Then the hart computes the same layer on its own (im2col of the whole input, a software GEMM,
 * the requantization in software) and compares every output. Both runs are timed in simulated
 * time (mtime), which gives the accelerator's speed-up over the hart. */
#include <stdio.h>

#include "fw.h"

enum {
    H = 16,
    W = 16,
    CIN = 16,
    COUT = 32,
    KSIZE = 3,
    K = KSIZE * KSIZE * CIN, /* the GEMM's reduction: one column of A per filter tap */
    BAND = 4,                /* output rows per job */
    BAND_PIXELS = BAND * W,
    K_TILE = 48,
};
static const float scale = 0.0625f;
static const int32_t zero_point = -5;

static int8_t input[H * W * CIN];
static int8_t filters[K * COUT]; /* B: row (ky, kx, c), column: the filter */
static int8_t band_a[2][BAND_PIXELS * K];
static int8_t out_accel[H * W * COUT];
static int8_t full_a[H * W * K];
static int32_t acc_soft[H * W * COUT];
static int8_t out_soft[H * W * COUT];

/* im2col of output rows [row0, row0 + rows): one row of `a` per output pixel. */
static void lower(int8_t* a, int row0, int rows) {
    for (int oy = row0; oy < row0 + rows; ++oy)
        for (int ox = 0; ox < W; ++ox) {
            int8_t* row = a + ((oy - row0) * W + ox) * K;
            for (int ky = 0; ky < KSIZE; ++ky)
                for (int kx = 0; kx < KSIZE; ++kx) {
                    const int iy = oy + ky - 1, ix = ox + kx - 1;
                    const int inside = iy >= 0 && iy < H && ix >= 0 && ix < W;
                    for (int c = 0; c < CIN; ++c)
                        *row++ = inside ? input[(iy * W + ix) * CIN + c] : 0;
                }
        }
}

static void band_job(systolic_job* job, int band, const int8_t* a) {
    fw_job(job, SYSTOLIC_DTYPE_INT8, BAND_PIXELS, K, COUT, (uintptr_t)a, (uintptr_t)filters,
           (uintptr_t)(out_accel + band * BAND_PIXELS * COUT));
    job->out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
    job->scale = scale;
    job->zero_point = zero_point;
    job->k_tile = K_TILE;
}

int main(void) {
    uint32_t n = 0;
    if (fw_init("conv_int8", &n) != 0) return 1;
    uint32_t seed = 0x2545f491u;
    for (int i = 0; i < H * W * CIN; ++i)
        input[i] = (int8_t)fw_rand_range(&seed, -20, 20);
    for (int i = 0; i < K * COUT; ++i)
        filters[i] = (int8_t)fw_rand_range(&seed, -10, 10);

    /* The accelerator: lower band b + 1 while band b runs. */
    const uint64_t accel_t0 = soc_time_ns();
    uint64_t waited_ns = 0; /* the hart asleep: the next band was lowered before the job ended */
    systolic_job job;
    lower(band_a[0], 0, BAND);
    for (int band = 0; band < H / BAND; ++band) {
        band_job(&job, band, band_a[band % 2]);
        fw_start(&job);
        if (band + 1 < H / BAND) lower(band_a[(band + 1) % 2], (band + 1) * BAND, BAND);
        const uint64_t wait_t0 = soc_time_ns();
        const int outcome = fw_wait();
        waited_ns += soc_time_ns() - wait_t0;
        if (outcome != 1) {
            printf("conv_int8: FAIL: band %d ended with ERROR %u\n", band,
                   (unsigned)systolic_error(&fw_accel));
            return 1;
        }
    }
    const uint64_t accel_ns = soc_time_ns() - accel_t0;

    /* The hart alone: the whole input lowered, one software GEMM, requantized in software. */
    const uint64_t soft_t0 = soc_time_ns();
    lower(full_a, 0, H);
    fw_gemm_i8(full_a, filters, acc_soft, H * W, K, COUT, K, COUT, COUT);
    unsigned saturated = 0;
    for (int i = 0; i < H * W * COUT; ++i) {
        out_soft[i] = fw_requantize(acc_soft[i], scale, zero_point, SYSTOLIC_ROUNDING_NEAREST_EVEN);
        saturated += out_soft[i] == 127 || out_soft[i] == -128;
    }
    const uint64_t soft_ns = soc_time_ns() - soft_t0;

    printf(
        "conv 16x16x16 -> 16x16x32 (3x3, pad 1) as %d GEMMs of %dx%dx%d on a %ux%u array, int8 out "
        "(scale 1/16, zero point %d): %u of %d outputs saturated\n",
        H / BAND, BAND_PIXELS, K, COUT, (unsigned)n, (unsigned)n, (int)zero_point, saturated, H * W * COUT);
    printf(
        "simulated time: accelerator %llu ns (the hart asleep in wfi for %llu of them), hart alone %llu ns, "
        "speed-up %llu.%02llux\n",
        (unsigned long long)accel_ns, (unsigned long long)waited_ns, (unsigned long long)soft_ns,
        (unsigned long long)(soft_ns / accel_ns), (unsigned long long)(soft_ns * 100 / accel_ns % 100));
    if (fw_compare_i8("conv_int8: FAIL: the accelerator's output", out_accel, out_soft, H * W * COUT) != 0)
        return 1;
    if (saturated == 0 || saturated == H * W * COUT) {
        printf("conv_int8: FAIL: the data should saturate some outputs and not all (%u)\n", saturated);
        return 1;
    }
    printf("conv_int8: PASS\n");
    return 0;
}
