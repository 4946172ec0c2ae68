/* systolic-linux-test: the guest side of the Linux tests. Runs inside the guest after systolic.ko is
 * loaded, as `systolic-linux-test NAME [ARGS]`, and drives /dev/systolic0 through the runtime
 * (<systolic/linux/runtime.h>). Every C element is checked against a reference worked out here, on its own
 * (no code shared with the model), in the accelerator's order of summation (docs/formats.md), so
 * fp32 and bf16 are compared exactly too; the bytes after C must be untouched, and the counters
 * must match the counting rules. Prints "linux-test NAME: PASS ..." or "linux-test NAME: FAIL: why";
 * exit status 0 or 1 (2: bad usage). The tests are listed in `tests[]` below and in docs/linux.md. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systolic/linux/runtime.h>

static const char* g_test = "?";

static int fail(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("linux-test %s: FAIL: ", g_test);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
    return 1;
}

static void note(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("linux-test %s: ", g_test);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    fflush(stdout);
}

/* ---- Data ---- */

static uint32_t g_seed = 1;
static uint32_t next_random(void) {
    g_seed = g_seed * 1664525u + 1013904223u;
    return g_seed >> 8; /* 24 bits */
}

static uint32_t operand_size(uint32_t dtype) {
    return dtype == SYSTOLIC_DTYPE_INT8 ? 1 : dtype == SYSTOLIC_DTYPE_BF16 ? 2 : 4;
}
static uint32_t accumulator_size(uint32_t dtype) {
    return dtype == SYSTOLIC_DTYPE_INT32 ? 8 : 4;
}
static uint32_t c_size(const systolic_job* j) {
    return j->out_dtype == SYSTOLIC_OUT_DTYPE_INT8 ? 1 : accumulator_size(j->dtype);
}

static float bf16_to_float(uint16_t bits) {
    const uint32_t w = (uint32_t)bits << 16;
    float f;
    memcpy(&f, &w, sizeof f);
    return f;
}
static float f32_of(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* One random operand element of `dtype` at p; `wide`: int32 over the full range (sums overflow). */
static void random_element(uint32_t dtype, int wide, uint8_t* p) {
    const uint32_t r = next_random();
    switch (dtype) {
        case SYSTOLIC_DTYPE_INT8:
            *(int8_t*)p = (int8_t)(r & 0xff);
            break;
        case SYSTOLIC_DTYPE_INT32: {
            const int32_t v = wide ? (int32_t)(r << 8 | (next_random() & 0xff)) : (int32_t)(r % 2001) - 1000;
            memcpy(p, &v, 4);
            break;
        }
        case SYSTOLIC_DTYPE_FP32: {
            const float v = (float)r / 8388608.0f - 1.0f; /* [-1, 1) */
            memcpy(p, &v, 4);
            break;
        }
        default: { /* bf16: sign, exponent 2^-8 .. 2^0, 7 random mantissa bits */
            const uint16_t v = (uint16_t)((r & 0x8000) | (uint16_t)(119 + (r >> 7) % 8) << 7 | (r & 0x7f));
            memcpy(p, &v, 2);
            break;
        }
    }
}

/* ---- The reference: its own arithmetic, the accelerator's order ---- */

static int64_t int_operand(uint32_t dtype, const uint8_t* p) {
    if (dtype == SYSTOLIC_DTYPE_INT8) return *(const int8_t*)p;
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}
static float float_operand(uint32_t dtype, const uint8_t* p) {
    if (dtype == SYSTOLIC_DTYPE_BF16) {
        uint16_t v;
        memcpy(&v, p, 2);
        return bf16_to_float(v);
    }
    uint32_t v;
    memcpy(&v, p, 4);
    return f32_of(v);
}

/* acc + term in the accumulator (32 or 64 bits), wrapping or saturating at this step. */
static int64_t int_add(int64_t acc, int64_t term, int bits, uint32_t overflow) {
    if (bits == 32) {
        const int64_t s = acc + term; /* both within int32: exact in int64 */
        if (overflow == SYSTOLIC_OVERFLOW_SATURATE)
            return s > INT32_MAX ? INT32_MAX : s < INT32_MIN ? INT32_MIN : s;
        return (int32_t)(uint32_t)(uint64_t)s;
    }
    int64_t s;
    if (!__builtin_add_overflow(acc, term, &s)) return s;
    if (overflow == SYSTOLIC_OVERFLOW_SATURATE) return term > 0 ? INT64_MAX : INT64_MIN;
    return (int64_t)((uint64_t)acc + (uint64_t)term);
}

/* The length of the runs that sum from zero before they are added up, left to right: K-splitting
 * with partials (KT), weight and input stationary (folds of min(KT, N)); 0: one unbroken sum. */
static uint32_t run_length(const systolic_job* j, uint32_t n) {
    const uint32_t kt = j->k_tile == 0 || j->k_tile > j->k ? j->k : j->k_tile;
    if (j->dataflow != SYSTOLIC_DATAFLOW_OS) return kt < n ? kt : n;
    return j->k_policy == SYSTOLIC_K_POLICY_PARTIALS ? kt : 0;
}

typedef struct {
    int is_float;
    int64_t i;
    float f;
} acc_value;

static acc_value reference_acc(const systolic_job* j, uint32_t n, const uint8_t* a, const uint8_t* b,
                               uint32_t row, uint32_t col) {
    const uint32_t es = operand_size(j->dtype);
    const uint32_t a_stride = j->a_stride ? j->a_stride : j->k * es,
                   b_stride = j->b_stride ? j->b_stride : j->p * es;
    const uint32_t run = run_length(j, n);
    const int bits = accumulator_size(j->dtype) * 8;
    acc_value r = {j->dtype == SYSTOLIC_DTYPE_FP32 || j->dtype == SYSTOLIC_DTYPE_BF16, 0, 0.0f};
    int64_t ipart = 0, itotal = 0;
    float fpart = 0.0f, ftotal = 0.0f;
    int first = 1;
    for (uint32_t k = 0; k < j->k; ++k) {
        const uint8_t* pa = a + (size_t)row * a_stride + (size_t)k * es;
        const uint8_t* pb = b + (size_t)k * b_stride + (size_t)col * es;
        if (r.is_float) {
            const float product = float_operand(j->dtype, pa) * float_operand(j->dtype, pb);
            fpart = fpart + product; /* two roundings; -ffp-contract=off keeps them apart */
        } else {
            ipart = int_add(ipart, int_operand(j->dtype, pa) * int_operand(j->dtype, pb), bits, j->overflow);
        }
        if ((run && (k + 1) % run == 0) || k + 1 == j->k) {
            if (first) {
                ftotal = fpart;
                itotal = ipart;
            } else {
                ftotal = ftotal + fpart;
                itotal = int_add(itotal, ipart, bits, j->overflow);
            }
            first = 0;
            fpart = 0.0f;
            ipart = 0;
        }
    }
    r.i = itotal;
    r.f = ftotal;
    return r;
}

/* saturate_int8(round(acc x S) + Z), in double (docs/formats.md). */
static int8_t requantize(acc_value acc, double scale, int32_t zero_point, uint32_t rounding) {
    const double x = (acc.is_float ? (double)acc.f : (double)acc.i) * scale;
    if (isnan(x)) return (int8_t)zero_point;
    double q = rounding == SYSTOLIC_ROUNDING_NEAREST_AWAY  ? round(x)
               : rounding == SYSTOLIC_ROUNDING_TOWARD_ZERO ? trunc(x)
                                                           : rint(x);
    q += zero_point;
    return (int8_t)(q > 127 ? 127 : q < -128 ? -128 : q);
}

static uint64_t ceil_div(uint64_t a, uint64_t b) {
    return (a + b - 1) / b;
}

/* The counting rules of docs/counting.md and docs/dataflows.md on an N x N array. */
static int check_counters(const char* label, const systolic_job* j, uint32_t n, const systolic_counters* c) {
    const uint64_t kt = j->k_tile == 0 || j->k_tile > j->k ? j->k : j->k_tile;
    uint64_t edges, preload = 0;
    if (j->dataflow == SYSTOLIC_DATAFLOW_OS) {
        const uint64_t tiles = ceil_div(j->m, n) * ceil_div(j->p, n);
        edges = tiles * (j->k + ceil_div(j->k, kt) * (2 * n - 2));
    } else {
        const uint64_t stream = j->dataflow == SYSTOLIC_DATAFLOW_IS ? j->p : j->m;
        const uint64_t extent = j->dataflow == SYSTOLIC_DATAFLOW_IS ? j->m : j->p;
        const uint64_t folds = ceil_div(j->k, kt < n ? kt : n);
        edges = ceil_div(extent, n) * folds * (stream + 2 * n - 2);
        preload = ceil_div(extent, n) * folds * n;
    }
    if (c->macs_real != (uint64_t)j->m * j->k * j->p)
        return fail("%s: MACs real %llu, not M*K*P = %llu", label, (unsigned long long)c->macs_real,
                    (unsigned long long)j->m * j->k * j->p);
    if (c->edges != edges)
        return fail("%s: advance edges %llu, not %llu", label, (unsigned long long)c->edges,
                    (unsigned long long)edges);
    if (c->preload_edges != preload)
        return fail("%s: preload edges %llu, not %llu", label, (unsigned long long)c->preload_edges,
                    (unsigned long long)preload);
    if (c->macs < c->macs_real || c->cycles == 0)
        return fail("%s: MACs %llu, cycles %llu", label, (unsigned long long)c->macs,
                    (unsigned long long)c->cycles);
    return 0;
}

/* ---- One GEMM, laid out in one buffer, run and checked ---- */

typedef struct gemm_case {
    const char* name;
    uint32_t m, k, p, dtype, dataflow;
    uint32_t out_dtype, k_tile, k_policy, overflow, rounding, order;
    uint32_t pad;  /* bytes added to every row of A, B and C (strided rows); 0: packed */
    int scale_vec; /* OUT_DTYPE_INT8: 0 per-tensor, 1 per-column scales, 2 and zero points */
    float scale;
    int32_t zero_point;
    int wide; /* int32 operands over the full range */
} gemm_case;

static gemm_case gemm(const char* name, uint32_t m, uint32_t k, uint32_t p, uint32_t dtype,
                      uint32_t dataflow) {
    gemm_case g;
    memset(&g, 0, sizeof g);
    g.name = name;
    g.m = m;
    g.k = k;
    g.p = p;
    g.dtype = dtype;
    g.dataflow = dataflow;
    return g;
}

#define GUARD 64
#define C_FILL 0x5a

static size_t align_up(size_t v, size_t a) {
    return (v + a - 1) / a * a;
}

/* Runs the case on h; `label` names it in messages. */
static int run_case(systolic_handle* h, const gemm_case* g, const char* label) {
    const uint32_t n = h->info.array_size, es = operand_size(g->dtype);
    systolic_job job;
    systolic_job_init(&job);
    job.m = g->m;
    job.k = g->k;
    job.p = g->p;
    job.dtype = g->dtype;
    job.dataflow = g->dataflow;
    job.out_dtype = g->out_dtype;
    job.k_tile = g->k_tile;
    job.k_policy = g->k_policy;
    job.overflow = g->overflow;
    job.rounding = g->rounding;
    job.order = g->order;
    job.scale = g->scale != 0.0f ? g->scale : 1.0f;
    job.zero_point = g->zero_point;
    const uint32_t cs = c_size(&job);
    const size_t a_row = (size_t)g->k * es + g->pad, b_row = (size_t)g->p * es + g->pad,
                 c_row = (size_t)g->p * cs + g->pad;
    /* Strides must stay multiples of the element size (else ERR_ALIGN). */
    job.a_stride = g->pad ? (uint32_t)a_row : 0;
    job.b_stride = g->pad ? (uint32_t)b_row : 0;
    job.c_stride = g->pad ? (uint32_t)c_row : 0;
    const int partials = g->k_policy == SYSTOLIC_K_POLICY_PARTIALS;
    const size_t acc_row = (size_t)g->p * accumulator_size(g->dtype);
    const size_t a_off = 0, b_off = align_up(a_off + a_row * g->m, 64),
                 s_off = align_up(b_off + b_row * g->k, 64);
    const size_t s_bytes = g->scale_vec ? (size_t)g->p * (g->scale_vec == 2 ? 12 : 8) : 0;
    const size_t part_off = align_up(s_off + s_bytes, 64),
                 c_off = align_up(part_off + (partials ? acc_row * g->m : 0), 64);
    const size_t c_bytes = c_row * g->m, total = align_up(c_off + c_bytes + GUARD, 4096);
    if (total > h->info.max_buffer) return fail("%s: %zu bytes do not fit one buffer", label, total);
    uint8_t* buf = systolic_alloc(h, total);
    if (!buf) return fail("%s: mmap of %zu bytes: %s", label, total, strerror(errno));
    uint8_t *a = buf + a_off, *b = buf + b_off, *c = buf + c_off;
    for (uint32_t i = 0; i < g->m; ++i)
        for (uint32_t k = 0; k < g->k; ++k)
            random_element(g->dtype, g->wide, a + i * a_row + k * es);
    for (uint32_t k = 0; k < g->k; ++k)
        for (uint32_t j = 0; j < g->p; ++j)
            random_element(g->dtype, g->wide, b + k * b_row + j * es);
    memset(c, C_FILL, c_bytes + GUARD);
    double* scales = (double*)(buf + s_off);
    int32_t* zero_points = (int32_t*)(buf + s_off + (size_t)g->p * 8);
    if (g->scale_vec) {
        for (uint32_t j = 0; j < g->p; ++j) {
            /* Powers of two and odd ones, so that rounding ties and inexact products both occur. */
            scales[j] = j % 3 == 0 ? ldexp(1.0, -(int)(next_random() % 12))
                                   : (double)(next_random() % 1000 + 1) / 65536.0;
            if (g->scale_vec == 2) zero_points[j] = (int32_t)(next_random() % 61) - 30;
        }
        job.scale_vec_addr = systolic_addr(scales);
        job.zero_point_vec = g->scale_vec == 2;
    }
    job.a_addr = systolic_addr(a);
    job.b_addr = systolic_addr(b);
    job.c_addr = systolic_addr(c);
    if (partials) job.partial_addr = systolic_addr(buf + part_off);

    systolic_result r;
    const int ret = systolic_run(h, &job, &r);
    int bad = 0;
    if (ret != 0) {
        bad = fail("%s: the job failed: %s, %s", label, strerror(-ret), systolic_error_name(r.error));
        goto out;
    }
    if ((bad = check_counters(label, &job, n, &r.counters)) != 0) goto out;
    for (uint32_t i = 0; i < g->m && !bad; ++i)
        for (uint32_t j = 0; j < g->p && !bad; ++j) {
            const acc_value want = reference_acc(&job, n, a, b, i, j);
            const uint8_t* got = c + i * c_row + (size_t)j * cs;
            if (g->out_dtype == SYSTOLIC_OUT_DTYPE_INT8) {
                const double s = g->scale_vec ? scales[j] : (double)job.scale;
                const int32_t z = g->scale_vec == 2 ? zero_points[j] : job.zero_point;
                const int8_t q = requantize(want, s, z, job.rounding);
                if (*(const int8_t*)got != q)
                    bad = fail("%s: C(%u,%u) is %d, not %d", label, i, j, *(const int8_t*)got, q);
            } else if (want.is_float) {
                uint32_t bits;
                memcpy(&bits, got, 4);
                if (f32_of(bits) != want.f)
                    bad = fail("%s: C(%u,%u) is %.9g, not %.9g", label, i, j, f32_of(bits), want.f);
            } else if (cs == 8) {
                int64_t v;
                memcpy(&v, got, 8);
                if (v != want.i)
                    bad =
                        fail("%s: C(%u,%u) is %lld, not %lld", label, i, j, (long long)v, (long long)want.i);
            } else {
                int32_t v;
                memcpy(&v, got, 4);
                if (v != want.i)
                    bad = fail("%s: C(%u,%u) is %d, not %lld", label, i, j, v, (long long)want.i);
            }
            /* The padding after each row of C belongs to the caller. */
            if (!bad && j + 1 == g->p)
                for (size_t x = (size_t)g->p * cs; x < c_row; ++x)
                    if (c[i * c_row + x] != C_FILL)
                        bad = fail("%s: the padding of C's row %u was written", label, i);
        }
    for (size_t x = 0; x < GUARD && !bad; ++x)
        if (c[c_bytes + x] != C_FILL) bad = fail("%s: byte %zu after C was written", label, x);
out:
    systolic_free(buf, total);
    return bad;
}

static int open_device(systolic_handle* h) {
    const int ret = systolic_open(h, NULL);
    if (ret != 0) return fail("open %s: %s", SYSTOLIC_LINUX_DEVICE, strerror(-ret));
    return 0;
}

/* ---- The tests ---- */

/* The seeds' guest example: 5x7x6 int8. */
static int test_seed(int argc, char** argv) {
    (void)argc;
    (void)argv;
    systolic_handle h;
    if (open_device(&h)) return 1;
    const gemm_case g = gemm("int8 5x7x6", 5, 7, 6, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
    int bad = run_case(&h, &g, g.name);
    struct systolic_ioc_info info;
    if (!bad && systolic_info(&h, &info) != 0) bad = fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    if (!bad)
        note("PASS on a %ux%u array (%s): %llu job(s), %llu interrupt(s)", info.array_size, info.array_size,
             info.irq ? "interrupt" : "polled", (unsigned long long)info.jobs_started,
             (unsigned long long)info.interrupts);
    systolic_close(&h);
    return bad;
}

/* Every format in every dataflow, with several tiles, ragged edges, K-splitting and strided rows. */
static int test_formats(int argc, char** argv) {
    (void)argc;
    (void)argv;
    systolic_handle h;
    if (open_device(&h)) return 1;
    static const uint32_t dtypes[] = {SYSTOLIC_DTYPE_INT8, SYSTOLIC_DTYPE_INT32, SYSTOLIC_DTYPE_FP32,
                                      SYSTOLIC_DTYPE_BF16};
    static const char* const dtype_names[] = {"int8", "int32", "fp32", "bf16"};
    static const char* const dataflow_names[] = {"os", "ws", "is"};
    int bad = 0, jobs = 0;
    char label[96];
    for (unsigned d = 0; d < 4 && !bad; ++d)
        for (uint32_t df = SYSTOLIC_DATAFLOW_OS; df <= SYSTOLIC_DATAFLOW_IS && !bad; ++df) {
            /* K = 13 over a k_tile of 5: chunks of 5, 5, 3 (os), folds of min(5, N) (ws, is). */
            gemm_case g = gemm(NULL, 9, 13, 10, dtypes[d], df);
            snprintf(label, sizeof label, "%s %s 9x13x10", dtype_names[d], dataflow_names[df]);
            bad = run_case(&h, &g, label);
            if (!bad) {
                g.k_tile = 5;
                g.order = SYSTOLIC_ORDER_SNAKE;
                g.pad = 8;
                snprintf(label, sizeof label, "%s %s 9x13x10, k_tile 5, snake, strided", dtype_names[d],
                         dataflow_names[df]);
                bad = run_case(&h, &g, label);
            }
            jobs += 2;
        }
    /* int32 sums that overflow int64, wrapping and saturating. */
    for (uint32_t ov = SYSTOLIC_OVERFLOW_WRAP; ov <= SYSTOLIC_OVERFLOW_SATURATE && !bad; ++ov) {
        gemm_case g = gemm(NULL, 6, 40, 5, SYSTOLIC_DTYPE_INT32, SYSTOLIC_DATAFLOW_OS);
        g.overflow = ov;
        g.wide = 1;
        snprintf(label, sizeof label, "int32 full range, %s", ov ? "saturate" : "wrap");
        bad = run_case(&h, &g, label);
        ++jobs;
    }
    if (!bad) note("PASS: %d jobs, int8 int32 fp32 bf16 in os ws is, every C element exact", jobs);
    systolic_close(&h);
    return bad;
}

/* int8 output: per-tensor and per-column scales and zero points, every rounding mode. */
static int test_requant(int argc, char** argv) {
    (void)argc;
    (void)argv;
    systolic_handle h;
    if (open_device(&h)) return 1;
    static const char* const rounding_names[] = {"nearest-even", "nearest-away", "toward-zero"};
    int bad = 0, jobs = 0;
    char label[96];
    for (uint32_t rnd = 0; rnd <= SYSTOLIC_ROUNDING_TOWARD_ZERO && !bad; ++rnd)
        for (int vec = 0; vec <= 2 && !bad; ++vec) {
            gemm_case g = gemm(NULL, 11, 17, 9, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
            g.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
            g.rounding = rnd;
            g.scale_vec = vec;
            g.scale = 0.0078125f; /* 2^-7: ties occur */
            g.zero_point = -3;
            g.dataflow = (uint32_t)vec; /* per-column vectors in ws and is too */
            snprintf(label, sizeof label, "int8 out, %s, %s", rounding_names[rnd],
                     vec == 0   ? "per-tensor"
                     : vec == 1 ? "per-column scales"
                                : "per-column scales and zero points");
            bad = run_case(&h, &g, label);
            ++jobs;
        }
    /* Requantized fp32 and int32 accumulators. */
    for (int d = 0; d < 2 && !bad; ++d) {
        gemm_case g =
            gemm(NULL, 7, 9, 8, d ? SYSTOLIC_DTYPE_FP32 : SYSTOLIC_DTYPE_INT32, SYSTOLIC_DATAFLOW_OS);
        g.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
        g.scale_vec = 2;
        snprintf(label, sizeof label, "%s to int8 per column", d ? "fp32" : "int32");
        bad = run_case(&h, &g, label);
        ++jobs;
    }
    if (!bad) note("PASS: %d jobs, every code exact", jobs);
    systolic_close(&h);
    return bad;
}

/* K-splitting with K_POLICY_PARTIALS through a partial-sum buffer. */
static int test_partials(int argc, char** argv) {
    (void)argc;
    (void)argv;
    systolic_handle h;
    if (open_device(&h)) return 1;
    static const uint32_t dtypes[] = {SYSTOLIC_DTYPE_INT8, SYSTOLIC_DTYPE_INT32, SYSTOLIC_DTYPE_FP32,
                                      SYSTOLIC_DTYPE_BF16};
    int bad = 0, jobs = 0;
    char label[96];
    for (unsigned d = 0; d < 4 && !bad; ++d) {
        gemm_case g = gemm(NULL, 10, 23, 7, dtypes[d], SYSTOLIC_DATAFLOW_OS);
        g.k_tile = 6;
        g.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
        snprintf(label, sizeof label, "dtype %u, K 23 in chunks of 6, partials", dtypes[d]);
        bad = run_case(&h, &g, label);
        ++jobs;
    }
    if (!bad) {
        gemm_case g = gemm("int8 out after partials", 8, 20, 8, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
        g.k_tile = 7;
        g.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
        g.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
        g.scale = 0.03125f;
        bad = run_case(&h, &g, g.name);
        ++jobs;
    }
    if (!bad) note("PASS: %d jobs", jobs);
    systolic_close(&h);
    return bad;
}

/* Jobs the device refuses come back with its code; jobs whose memory is not the caller's never
 * reach it. */
static int expect_refusal(systolic_handle* h, const systolic_job* job, int want_errno, uint32_t want_code,
                          const char* what) {
    struct systolic_ioc_info before, after;
    if (systolic_info(h, &before) != 0) return fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    systolic_result r;
    memset(&r, 0, sizeof r);
    const int ret = systolic_run(h, job, &r);
    if (systolic_info(h, &after) != 0) return fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    if (ret != -want_errno)
        return fail("%s: the run returned %s, not %s", what, ret ? strerror(-ret) : "success",
                    strerror(want_errno));
    if (r.error != want_code)
        return fail("%s: ERROR %s, not %s", what, systolic_error_name(r.error),
                    systolic_error_name(want_code));
    const uint64_t started = after.jobs_started - before.jobs_started;
    if (started != (want_code != SYSTOLIC_ERR_NONE))
        return fail("%s: %llu job(s) reached the device, not %d", what, (unsigned long long)started,
                    want_code != SYSTOLIC_ERR_NONE);
    note("%s: %s%s%s, as expected", what, strerror(want_errno), want_code ? ", " : " before the device",
         want_code ? systolic_error_name(want_code) : "");
    return 0;
}

static int test_refusals(int argc, char** argv) {
    (void)argc;
    (void)argv;
    systolic_handle h;
    if (open_device(&h)) return 1;
    const size_t size = 3 * 4096;
    uint8_t* buf = systolic_alloc(&h, size);
    uint8_t* other = systolic_alloc(&h, 4096);
    if (!buf || !other) return fail("mmap: %s", strerror(errno));
    systolic_job good;
    systolic_job_init(&good);
    good.m = 4;
    good.k = 8;
    good.p = 4;
    good.dtype = SYSTOLIC_DTYPE_INT8;
    good.a_addr = systolic_addr(buf);
    good.b_addr = systolic_addr(buf + 64);
    good.c_addr = systolic_addr(buf + 128);
    systolic_job j;
    int bad = 0;

    /* Refused by the device, its code surfaced. */
    j = good;
    j.dtype = 9;
    bad |= expect_refusal(&h, &j, EINVAL, SYSTOLIC_ERR_DTYPE, "DTYPE 9");
    j = good;
    j.c_addr = good.a_addr + 16; /* C overlaps A */
    bad |= expect_refusal(&h, &j, EINVAL, SYSTOLIC_ERR_OVERLAP, "C overlapping A");
    j = good;
    j.k_tile = 3;
    j.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
    bad |= expect_refusal(&h, &j, EINVAL, SYSTOLIC_ERR_PARTIAL, "partials without a partial-sum buffer");
    j = good;
    j.m = 0;
    bad |= expect_refusal(&h, &j, EINVAL, SYSTOLIC_ERR_ZERO_DIM, "M = 0");
    j = good;
    j.c_addr = good.c_addr + 2; /* int32 C at an odd address */
    bad |= expect_refusal(&h, &j, EINVAL, SYSTOLIC_ERR_ALIGN, "C misaligned");

    /* Refused by the driver: the device never sees them. */
    uint8_t on_stack[256];
    j = good;
    j.a_addr = systolic_addr(on_stack);
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "A on the stack");
    uint8_t* heap = malloc(4096);
    j = good;
    j.b_addr = systolic_addr(heap);
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "B on the heap");
    free(heap);
    j = good;
    j.c_addr = systolic_addr(buf + size - 60); /* 64 bytes of C, 4 past the end */
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "C running 4 bytes past its buffer");
    j = good;
    j.a_stride = 4096; /* A's 4 rows 4 KiB apart: 12296 bytes from a buffer of 12288 */
    j.a_addr = systolic_addr(buf + 8);
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "A's stride reaching past its buffer");
    j = good;
    j.c_addr = 0;
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "C at address 0");
    j = good;
    j.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
    j.scale_vec_addr = systolic_addr(other + 4096 - 16); /* P = 4 scales: 32 bytes */
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "scale vector past its buffer");
    j = good;
    j.k_tile = 3;
    j.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
    j.partial_addr = systolic_addr(on_stack);
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "partial-sum buffer on the stack");
    j = good;
    j.m = 0x10000;
    j.a_stride = 0xfffffff0u;
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "an extent of 2^48 bytes");
    /* A spanning two buffers, even where the kernel placed them side by side. */
    j = good;
    j.m = 16;
    j.k = 512;
    j.a_addr = systolic_addr(other + 2048);
    j.b_addr = systolic_addr(buf);
    j.c_addr = systolic_addr(buf + 8192);
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "A spanning two buffers");
    /* A buffer that is gone. */
    systolic_free(other, 4096);
    j = good;
    j.b_addr = systolic_addr(other);
    bad |= expect_refusal(&h, &j, EFAULT, SYSTOLIC_ERR_NONE, "B in an unmapped buffer");

    /* Buffers the driver does not give. */
    void* p = mmap(NULL, SYSTOLIC_LINUX_MAX_BUFFER + 4096, PROT_READ | PROT_WRITE, MAP_SHARED, h.fd, 0);
    if (p != MAP_FAILED || errno != EINVAL)
        bad |= fail("a buffer over %u bytes was not refused with EINVAL", SYSTOLIC_LINUX_MAX_BUFFER);
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE, h.fd, 0);
    if (p != MAP_FAILED || errno != EINVAL) bad |= fail("a MAP_PRIVATE buffer was not refused with EINVAL");
    p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, h.fd, 4096);
    if (p != MAP_FAILED || errno != EINVAL)
        bad |= fail("a buffer at offset 4096 was not refused with EINVAL");
    if (munmap(buf + 4096, 4096) == 0 || errno != EINVAL)
        bad |= fail("a partial munmap was not refused with EINVAL");
    if (!bad) note("buffers over 4 MiB, private, at an offset, or cut by munmap: EINVAL, as expected");

    /* ... and the device still runs a good job. */
    if (!bad) {
        const gemm_case g =
            gemm("a good job after the refusals", 5, 7, 6, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
        bad = run_case(&h, &g, g.name);
    }
    systolic_free(buf, size);
    if (!bad) note("PASS");
    systolic_close(&h);
    return bad;
}

/* Several processes submitting at once, each checking its own results. */
static int submitter(int index, int jobs) {
    systolic_handle h;
    if (open_device(&h)) return 1;
    g_seed = 1000u + (uint32_t)index;
    char label[64];
    int bad = 0;
    for (int i = 0; i < jobs && !bad; ++i) {
        const uint32_t m = 3 + next_random() % 12, k = 1 + next_random() % 20, p = 3 + next_random() % 12;
        const gemm_case g = gemm(NULL, m, k, p, SYSTOLIC_DTYPE_INT8, next_random() % 3);
        snprintf(label, sizeof label, "process %d job %d (%ux%ux%u)", index, i, g.m, g.k, g.p);
        bad = run_case(&h, &g, label);
    }
    systolic_close(&h);
    return bad;
}

static int test_concurrent(int argc, char** argv) {
    const int processes = argc > 0 ? atoi(argv[0]) : 2, jobs = argc > 1 ? atoi(argv[1]) : 12;
    if (processes < 1 || processes > 64 || jobs < 1) return fail("usage: concurrent [PROCESSES [JOBS]]");
    struct systolic_ioc_info before, after;
    systolic_handle h;
    if (open_device(&h)) return 1;
    if (systolic_info(&h, &before) != 0) return fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    pid_t pids[64];
    for (int i = 0; i < processes; ++i) {
        fflush(stdout);
        pids[i] = fork();
        if (pids[i] < 0) return fail("fork: %s", strerror(errno));
        if (pids[i] == 0) _exit(submitter(i, jobs));
    }
    int bad = 0;
    for (int i = 0; i < processes; ++i) {
        int status = 0;
        if (waitpid(pids[i], &status, 0) < 0) return fail("waitpid: %s", strerror(errno));
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            bad = fail("process %d failed (status 0x%x)", i, status);
    }
    if (systolic_info(&h, &after) != 0) return fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    const uint64_t started = after.jobs_started - before.jobs_started;
    if (!bad && started != (uint64_t)processes * jobs)
        bad = fail("%llu jobs started, not %d", (unsigned long long)started, processes * jobs);
    if (!bad)
        note("PASS: %d processes, %d jobs each, all exact; %llu interrupt(s) for them", processes, jobs,
             (unsigned long long)(after.interrupts - before.interrupts));
    systolic_close(&h);
    return bad;
}

/* A buffer mapped before fork(): the child's copy of the mapping is its own, so its jobs may use
 * it; the parent sees the child's C through the shared mapping, and the buffer lives until both
 * have unmapped it. */
static int test_fork(int argc, char** argv) {
    (void)argc;
    (void)argv;
    systolic_handle h;
    if (open_device(&h)) return 1;
    int8_t* buf = systolic_alloc(&h, 4096);
    if (!buf) return fail("mmap: %s", strerror(errno));
    int8_t *a = buf, *b = buf + 64;
    int32_t* c = (int32_t*)(buf + 128);
    for (int i = 0; i < 5 * 7; ++i)
        a[i] = (int8_t)next_random();
    for (int i = 0; i < 7 * 6; ++i)
        b[i] = (int8_t)next_random();
    fflush(stdout);
    const pid_t child = fork();
    if (child < 0) return fail("fork: %s", strerror(errno));
    if (child == 0) {
        systolic_job j;
        systolic_job_init(&j);
        j.m = 5;
        j.k = 7;
        j.p = 6;
        j.dtype = SYSTOLIC_DTYPE_INT8;
        j.a_addr = systolic_addr(a);
        j.b_addr = systolic_addr(b);
        j.c_addr = systolic_addr(c);
        systolic_result r;
        const int ret = systolic_run(&h, &j, &r);
        if (ret != 0)
            fail("the child's job on the inherited buffer: %s, %s", strerror(-ret),
                 systolic_error_name(r.error));
        _exit(ret != 0);
    }
    int status = 0;
    if (waitpid(child, &status, 0) < 0) return fail("waitpid: %s", strerror(errno));
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return fail("the child failed (status 0x%x)", status);
    for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 6; ++j) {
            int32_t want = 0;
            for (int k = 0; k < 7; ++k)
                want += (int32_t)a[i * 7 + k] * b[k * 6 + j];
            if (c[i * 6 + j] != want) return fail("C(%d,%d) is %d, not %d", i, j, c[i * 6 + j], want);
        }
    systolic_free(buf, 4096);
    note("PASS: the child ran a job on a buffer it inherited; the parent saw C");
    systolic_close(&h);
    return 0;
}

/* A thread unmaps the buffers of a job another thread is running: the driver holds them until the
 * job ends, so the job completes (the passive checker then finds C in memory that was not freed
 * under it), and the buffer goes afterwards. */
typedef struct {
    systolic_handle* h;
    systolic_job job;
    int ret;
    systolic_result result;
    volatile int done;
} unmap_job;

static void* unmap_runner(void* arg) {
    unmap_job* u = arg;
    u->ret = systolic_run(u->h, &u->job, &u->result);
    __atomic_store_n(&u->done, 1, __ATOMIC_SEQ_CST);
    return NULL;
}

static int test_unmap(int argc, char** argv) {
    const uint32_t size = argc > 0 ? (uint32_t)atoi(argv[0]) : 256;
    const unsigned delay_ms = argc > 1 ? (unsigned)atoi(argv[1]) : 20;
    if (size == 0 || (size_t)size * size * 16 > SYSTOLIC_LINUX_MAX_BUFFER)
        return fail("usage: unmap [SIZE [DELAY_MS]]");
    systolic_handle h;
    if (open_device(&h)) return 1;
    const size_t bytes = align_up((size_t)size * size * 16, 4096);
    uint8_t* buf = systolic_alloc(&h, bytes);
    if (!buf) return fail("mmap: %s", strerror(errno));
    for (size_t x = 0; x < (size_t)size * size * 8; ++x)
        buf[x] = (uint8_t)(next_random() & 0x0f);
    unmap_job u;
    memset(&u, 0, sizeof u);
    u.h = &h;
    systolic_job_init(&u.job);
    u.job.m = u.job.k = u.job.p = size;
    u.job.a_addr = systolic_addr(buf);
    u.job.b_addr = systolic_addr(buf + (size_t)size * size * 4);
    u.job.c_addr = systolic_addr(buf + (size_t)size * size * 8);
    pthread_t thread;
    if (pthread_create(&thread, NULL, unmap_runner, &u) != 0) return fail("pthread_create failed");
    usleep(delay_ms * 1000);
    const int unmapped = systolic_free(buf, bytes);
    const int mid_job = !__atomic_load_n(&u.done, __ATOMIC_SEQ_CST);
    pthread_join(thread, NULL);
    if (unmapped != 0) return fail("munmap during the job: %s", strerror(-unmapped));
    if (u.ret != 0) return fail("the job: %s, %s", strerror(-u.ret), systolic_error_name(u.result.error));
    if (u.result.counters.macs_real != (uint64_t)size * size * size) return fail("the job did not complete");
    const gemm_case g = gemm("the next job", 9, 13, 10, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
    if (run_case(&h, &g, g.name)) return 1;
    note("PASS: the job completed, its buffer unmapped %s, and the next job was exact",
         mid_job ? "while it ran" : "(after it had ended)");
    systolic_close(&h);
    return 0;
}

/* A process killed in the middle of a long job (int32, SIZE^3, killed DELAY_MS after it was
 * submitted): the driver stops the job (soft reset) before its buffers go, and the next job runs.
 * With `abort` the job must have been stopped (under --time free; by default the platform answers
 * the START write only when the job is done, so the kill comes after it). */
static int test_kill(int argc, char** argv) {
    const uint32_t size = argc > 0 ? (uint32_t)atoi(argv[0]) : 96;
    const unsigned delay_ms = argc > 1 ? (unsigned)atoi(argv[1]) : 20;
    const int require_abort = argc > 2 && strcmp(argv[2], "abort") == 0;
    if (size == 0 || (size_t)size * size * 16 > SYSTOLIC_LINUX_MAX_BUFFER || (argc > 2 && !require_abort))
        return fail("usage: kill [SIZE [DELAY_MS [abort]]]");
    systolic_handle h;
    if (open_device(&h)) return 1;
    struct systolic_ioc_info before, after;
    if (systolic_info(&h, &before) != 0) return fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    int pipefd[2];
    if (pipe(pipefd) != 0) return fail("pipe: %s", strerror(errno));
    fflush(stdout);
    const pid_t child = fork();
    if (child < 0) return fail("fork: %s", strerror(errno));
    if (child == 0) {
        /* An int32 SIZE^3 job; the child is killed while it waits. */
        systolic_handle ch;
        if (systolic_open(&ch, NULL) != 0) _exit(3);
        const size_t bytes = align_up((size_t)size * size * 4 * 2 + (size_t)size * size * 8, 4096);
        uint8_t* buf = systolic_alloc(&ch, bytes);
        if (!buf) _exit(3);
        systolic_job j;
        systolic_job_init(&j);
        j.m = j.k = j.p = size;
        j.a_addr = systolic_addr(buf);
        j.b_addr = systolic_addr(buf + (size_t)size * size * 4);
        j.c_addr = systolic_addr(buf + (size_t)size * size * 8);
        if (write(pipefd[1], "x", 1) != 1) _exit(3);
        systolic_run(&ch, &j, NULL);
        _exit(4); /* not reached when the kill comes in time */
    }
    char x;
    if (read(pipefd[0], &x, 1) != 1) return fail("the child did not start");
    usleep(delay_ms * 1000);
    kill(child, SIGKILL);
    int status = 0;
    if (waitpid(child, &status, 0) < 0) return fail("waitpid: %s", strerror(errno));
    const int killed = WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
    if (!killed && !(WIFEXITED(status) && WEXITSTATUS(status) == 4))
        return fail("the child ended with status 0x%x", status);
    if (systolic_info(&h, &after) != 0) return fail("SYSTOLIC_IOC_INFO: %s", strerror(errno));
    const unsigned long long aborted = (unsigned long long)(after.jobs_aborted - before.jobs_aborted);
    note("the child was %s; jobs stopped by soft reset: %llu", killed ? "killed" : "done before the kill",
         aborted);
    /* Under --time free a long job is still running when the kill comes: the driver must stop it. */
    if (require_abort && (!killed || aborted != 1))
        return fail("the job was not stopped by soft reset (the child %s, %llu stopped)",
                    killed ? "was killed" : "finished first", aborted);
    const gemm_case g = gemm("the next job", 9, 13, 10, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
    int bad = run_case(&h, &g, g.name);
    if (!bad) note("PASS: the next job ran and was exact");
    systolic_close(&h);
    return bad;
}

/* rmmod and insmod again (the module's path as argument, and the parameters the platform loaded it
 * with), with a mapping holding the module in between, then in polled mode (poll=1), then as loaded
 * at first. */
static int module_load(const char* path, const char* params) {
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return fail("open %s: %s", path, strerror(errno));
    const long ret = syscall(SYS_finit_module, fd, params, 0);
    const int e = errno;
    close(fd);
    if (ret != 0) return fail("insmod %s %s: %s", path, params, strerror(e));
    return 0;
}

static int module_unload(void) {
    if (syscall(SYS_delete_module, "systolic", O_NONBLOCK) != 0)
        return fail("rmmod systolic: %s", strerror(errno));
    struct stat st;
    if (stat(SYSTOLIC_LINUX_DEVICE, &st) == 0)
        return fail("%s is still there after rmmod", SYSTOLIC_LINUX_DEVICE);
    return 0;
}

static int seed_job(const char* label, int want_irq) {
    systolic_handle h;
    if (open_device(&h)) return 1;
    const gemm_case g = gemm(label, 5, 7, 6, SYSTOLIC_DTYPE_INT8, SYSTOLIC_DATAFLOW_OS);
    int bad = run_case(&h, &g, label);
    if (!bad && want_irq >= 0 && (int)h.info.irq != want_irq)
        bad = fail("%s: jobs %s, not %s", label, h.info.irq ? "take the interrupt" : "poll",
                   want_irq ? "the interrupt" : "polled");
    systolic_close(&h);
    return bad;
}

static int test_reload(int argc, char** argv) {
    if (argc < 1) return fail("usage: reload MODULE.ko [PARAMETERS]");
    const char* path = argv[0];
    const char* params = argc > 1 ? argv[1] : ""; /* as the platform loaded it */
    if (seed_job("before rmmod", -1)) return 1;
    systolic_handle h;
    if (open_device(&h)) return 1;
    const int irq = (int)h.info.irq;
    /* A mapping holds the module: rmmod must wait for munmap. */
    void* buf = systolic_alloc(&h, 4096);
    if (!buf) return fail("mmap: %s", strerror(errno));
    systolic_close(&h);
    if (syscall(SYS_delete_module, "systolic", O_NONBLOCK) == 0)
        return fail("rmmod succeeded while a buffer was mapped");
    if (errno != EWOULDBLOCK && errno != EBUSY)
        return fail("rmmod with a buffer mapped: %s", strerror(errno));
    systolic_free(buf, 4096);
    if (module_unload() || module_load(path, "poll=1") || seed_job("polled, after insmod poll=1", 0))
        return 1;
    if (module_unload() || module_load(path, params) || seed_job("after insmod", irq)) return 1;
    note("PASS: rmmod refused while a buffer was mapped, then rmmod and insmod twice (poll=1, then %s)",
         irq ? "the interrupt" : "polled");
    return 0;
}

/* A GEMM whose C exceeds one buffer, run as jobs over bands of rows (systolic_run_rows). */
static int test_bands(int argc, char** argv) {
    const uint32_t m = argc > 0 ? (uint32_t)atoi(argv[0]) : 1100, k = argc > 1 ? (uint32_t)atoi(argv[1]) : 16,
                   p = argc > 2 ? (uint32_t)atoi(argv[2]) : 1000;
    systolic_handle h;
    if (open_device(&h)) return 1;
    const size_t max = h.info.max_buffer, c_row = (size_t)p * 4;
    if ((size_t)k * p > max || (size_t)m * k > max || c_row > max)
        return fail("usage: bands [M [K [P]]]: too large");
    size_t nbands;
    const uint32_t rows_per_band = systolic_plan_rows(m, c_row, max, &nbands);
    systolic_rows* bands = calloc(nbands, sizeof *bands);
    int8_t* a = systolic_alloc(&h, align_up((size_t)m * k, 4096));
    int8_t* b = systolic_alloc(&h, align_up((size_t)k * p, 4096));
    if (!bands || !a || !b) return fail("allocation: %s", strerror(errno));
    for (size_t x = 0; x < (size_t)m * k; ++x)
        a[x] = (int8_t)next_random();
    for (size_t x = 0; x < (size_t)k * p; ++x)
        b[x] = (int8_t)next_random();
    for (size_t i = 0; i < nbands; ++i) {
        bands[i].rows = i + 1 < nbands ? rows_per_band : m - rows_per_band * (uint32_t)i;
        bands[i].a = a + (size_t)rows_per_band * i * k;
        bands[i].c = systolic_alloc(&h, align_up(bands[i].rows * c_row, 4096));
        if (!bands[i].c) return fail("C band %zu: %s", i, strerror(errno));
    }
    systolic_job job;
    systolic_job_init(&job);
    job.k = k;
    job.p = p;
    job.dtype = SYSTOLIC_DTYPE_INT8;
    job.b_addr = systolic_addr(b);
    systolic_result r;
    size_t failed = 0;
    const int ret = systolic_run_rows(&h, &job, bands, nbands, &r, &failed);
    if (ret != 0) return fail("band %zu: %s, %s", failed, strerror(-ret), systolic_error_name(r.error));
    if (r.counters.macs_real != (uint64_t)m * k * p)
        return fail("MACs real %llu over the bands, not %llu", (unsigned long long)r.counters.macs_real,
                    (unsigned long long)m * k * p);
    for (size_t i = 0; i < nbands; ++i)
        for (uint32_t row = 0; row < bands[i].rows; ++row)
            for (uint32_t col = 0; col < p; ++col) {
                const uint32_t gi = rows_per_band * (uint32_t)i + row;
                int32_t want = 0;
                for (uint32_t kk = 0; kk < k; ++kk)
                    want += (int32_t)a[(size_t)gi * k + kk] * b[(size_t)kk * p + col];
                const int32_t got = ((const int32_t*)bands[i].c)[(size_t)row * p + col];
                if (got != want) return fail("C(%u,%u) is %d, not %d", gi, col, got, want);
            }
    note("PASS: %ux%ux%u int8 (C %zu bytes) as %zu jobs of up to %u rows, every element exact", m, k, p,
         (size_t)m * c_row, nbands, rows_per_band);
    systolic_close(&h);
    return 0;
}

/* ---- Networks: the int8 GEMMs scripts/import wrote (docs/networks.md) ---- */

/* A 2-D .npy array, read whole: its element type ("|i1", "<i4"), shape and data. */
typedef struct {
    char descr[8];
    uint64_t rows, cols;
    uint8_t* file;
    const uint8_t* data;
    size_t bytes;
} npy_array;

static char* read_file(const char* path, size_t* size) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char* buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char* bigger = realloc(buf, cap *= 2);
            if (!bigger) free(buf);
            buf = bigger;
        }
    }
    const int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return NULL;
    }
    *size = n;
    return buf;
}

/* NULL, or what is wrong with the file. */
static const char* npy_load(const char* path, npy_array* a) {
    memset(a, 0, sizeof *a);
    size_t size = 0;
    a->file = (uint8_t*)read_file(path, &size);
    if (!a->file) return "cannot be read";
    if (size < 10 || memcmp(a->file, "\x93NUMPY", 6) != 0) return "is not a .npy file";
    const int major = a->file[6];
    const size_t header_len =
        major == 1 ? (size_t)(a->file[8] | a->file[9] << 8)
                   : (size_t)(a->file[8] | a->file[9] << 8 | a->file[10] << 16 | (size_t)a->file[11] << 24);
    const size_t start = major == 1 ? 10 : 12;
    if (major < 1 || major > 3 || start + header_len > size) return "has a bad .npy header";
    char header[512];
    if (header_len >= sizeof header) return "has a .npy header too long";
    memcpy(header, a->file + start, header_len);
    header[header_len] = 0;
    const char* d = strstr(header, "'descr': '");
    const char* f = strstr(header, "'fortran_order': ");
    const char* sh = strstr(header, "'shape': (");
    if (!d || !f || !sh) return "has a .npy header without descr, fortran_order or shape";
    d += 10;
    size_t dl = strcspn(d, "'");
    if (dl >= sizeof a->descr) return "has an unknown dtype";
    memcpy(a->descr, d, dl);
    if (strncmp(f + 17, "False", 5) != 0) return "is in Fortran order";
    char* end;
    a->rows = strtoull(sh + 10, &end, 10);
    if (*end != ',') return "is not a 2-D array";
    a->cols = strtoull(end + 1, &end, 10);
    while (*end == ' ')
        ++end;
    if (*end != ')') return "is not a 2-D array";
    const size_t elem = strcmp(a->descr, "|i1") == 0 ? 1 : strcmp(a->descr, "<i4") == 0 ? 4 : 0;
    if (!elem) return "is not int8 (|i1) or int32 (<i4)";
    a->data = a->file + start + header_len;
    a->bytes = size - start - header_len;
    if (a->rows * a->cols * elem != a->bytes) return "holds fewer or more bytes than its shape";
    return NULL;
}

/* One layer: A (M x K) and B (K x N) int8, C (M x N) the exact int32 sums; run in bands of rows
 * that fit the buffers, every element of C compared. */
static int run_layer(systolic_handle* h, const char* dir, const char* layer, uint32_t dataflow,
                     uint64_t* jobs) {
    char path[1024];
    npy_array a, b, want;
    const char* why;
    int bad = 0;
    snprintf(path, sizeof path, "%s/data/%s.a.npy", dir, layer);
    if ((why = npy_load(path, &a))) return fail("%s %s", path, why);
    snprintf(path, sizeof path, "%s/data/%s.b.npy", dir, layer);
    if ((why = npy_load(path, &b))) return fail("%s %s", path, why);
    snprintf(path, sizeof path, "%s/expected/%s.c.npy", dir, layer);
    if ((why = npy_load(path, &want))) return fail("%s %s", path, why);
    const uint64_t m = a.rows, k = a.cols, n = b.cols, max = h->info.max_buffer;
    if (strcmp(a.descr, "|i1") || strcmp(b.descr, "|i1") || strcmp(want.descr, "<i4"))
        return fail("layer %s: not an int8 import (A %s, B %s, C %s)", layer, a.descr, b.descr, want.descr);
    if (b.rows != k || want.rows != m || want.cols != n)
        return fail("layer %s: shapes A %llux%llu, B %llux%llu, C %llux%llu do not chain", layer,
                    (unsigned long long)m, (unsigned long long)k, (unsigned long long)b.rows,
                    (unsigned long long)n, (unsigned long long)want.rows, (unsigned long long)want.cols);
    if (k * n > max || k > max || n * 4 > max)
        return fail("layer %s: B or one row is over one buffer", layer);
    const uint64_t row_bytes = k > n * 4 ? k : n * 4;
    size_t nbands;
    const uint32_t band_rows = systolic_plan_rows(m, row_bytes, max, &nbands);
    systolic_rows* bands = calloc(nbands, sizeof *bands);
    int8_t* bb = systolic_alloc(h, align_up(k * n, 4096));
    if (!bands || !bb) return fail("layer %s: allocation: %s", layer, strerror(errno));
    memcpy(bb, b.data, k * n);
    for (size_t i = 0; i < nbands && !bad; ++i) {
        bands[i].rows = i + 1 < nbands ? band_rows : (uint32_t)(m - (uint64_t)band_rows * i);
        int8_t* ab = systolic_alloc(h, align_up(bands[i].rows * k, 4096));
        bands[i].c = systolic_alloc(h, align_up(bands[i].rows * n * 4, 4096));
        if (!ab || !bands[i].c)
            bad = fail("layer %s: allocation: %s", layer, strerror(errno));
        else
            memcpy(ab, a.data + (size_t)band_rows * i * k, bands[i].rows * k);
        bands[i].a = ab;
    }
    systolic_job job;
    systolic_job_init(&job);
    job.k = (uint32_t)k;
    job.p = (uint32_t)n;
    job.dtype = SYSTOLIC_DTYPE_INT8;
    job.dataflow = dataflow;
    job.b_addr = systolic_addr(bb);
    systolic_result r;
    size_t failed = 0;
    int ret = bad ? 0 : systolic_run_rows(h, &job, bands, nbands, &r, &failed);
    if (!bad && ret != 0)
        bad = fail("layer %s, band %zu: %s, %s", layer, failed, strerror(-ret), systolic_error_name(r.error));
    const int32_t* expected = (const int32_t*)want.data;
    for (size_t i = 0; i < nbands && !bad; ++i)
        for (uint64_t row = 0; row < bands[i].rows && !bad; ++row)
            for (uint64_t col = 0; col < n && !bad; ++col) {
                const uint64_t gi = (uint64_t)band_rows * i + row;
                int32_t e;
                memcpy(&e, expected + gi * n + col, 4);
                const int32_t got = ((const int32_t*)bands[i].c)[row * n + col];
                if (got != e)
                    bad = fail("layer %s: C(%llu,%llu) is %d, not %d", layer, (unsigned long long)gi,
                               (unsigned long long)col, got, e);
            }
    if (!bad) {
        *jobs += nbands;
        note("%s: %llux%llux%llu in %zu job(s), every C exact (%llu cycles)", layer, (unsigned long long)m,
             (unsigned long long)k, (unsigned long long)n, nbands, (unsigned long long)r.counters.cycles);
    }
    for (size_t i = 0; i < nbands; ++i) {
        if (bands[i].a) systolic_free((void*)bands[i].a, align_up(bands[i].rows * k, 4096));
        if (bands[i].c) systolic_free(bands[i].c, align_up(bands[i].rows * n * 4, 4096));
    }
    systolic_free(bb, align_up(k * n, 4096));
    free(bands);
    free(a.file);
    free(b.file);
    free(want.file);
    return bad;
}

/* Every layer of topology.csv in DIR, as scripts/import --dtype int8 wrote it. */
static int test_network(int argc, char** argv) {
    if (argc < 1) return fail("usage: network DIR [os|ws|is]");
    const char* dir = argv[0];
    uint32_t dataflow = SYSTOLIC_DATAFLOW_OS;
    if (argc > 1) {
        if (strcmp(argv[1], "ws") == 0)
            dataflow = SYSTOLIC_DATAFLOW_WS;
        else if (strcmp(argv[1], "is") == 0)
            dataflow = SYSTOLIC_DATAFLOW_IS;
        else if (strcmp(argv[1], "os") != 0)
            return fail("usage: network DIR [os|ws|is]");
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/topology.csv", dir);
    size_t size = 0;
    char* csv = read_file(path, &size);
    if (!csv) return fail("%s: %s", path, strerror(errno));
    systolic_handle h;
    if (open_device(&h)) return 1;
    uint64_t layers = 0, jobs = 0;
    int bad = 0;
    char* save = NULL;
    char* text = realloc(csv, size + 1);
    if (!text) return fail("out of memory");
    text[size] = 0;
    int first = 1;
    for (char* line = strtok_r(text, "\n", &save); line && !bad; line = strtok_r(NULL, "\n", &save)) {
        if (first) { /* the header: "Layer, M, N, K," */
            first = 0;
            continue;
        }
        char* comma = strchr(line, ',');
        if (!comma) continue;
        *comma = 0;
        while (*line == ' ')
            ++line;
        for (char* e = comma - 1; e >= line && (*e == ' ' || *e == '\r'); --e)
            *e = 0;
        if (!*line) continue;
        bad = run_layer(&h, dir, line, dataflow, &jobs);
        ++layers;
    }
    free(text);
    if (!bad && layers == 0) bad = fail("%s lists no layers", path);
    if (!bad)
        note("PASS: %llu layers in %llu jobs, every C equal to the expected C", (unsigned long long)layers,
             (unsigned long long)jobs);
    systolic_close(&h);
    return bad;
}

typedef struct {
    const char* name;
    int (*run)(int argc, char** argv);
    const char* what;
} test_entry;

static const test_entry tests[] = {
    {"seed", test_seed, "the seeds' 5x7x6 int8 job"},
    {"formats", test_formats, "int8, int32, fp32, bf16 in os, ws, is; K-splitting, strides, overflow"},
    {"requant", test_requant, "int8 output: per-tensor and per-column scales and zero points"},
    {"partials", test_partials, "K_POLICY_PARTIALS with a partial-sum buffer"},
    {"refusals", test_refusals, "jobs and buffers the device or the driver refuses"},
    {"concurrent", test_concurrent, "[PROCESSES [JOBS]]: processes submitting at once"},
    {"fork", test_fork, "a buffer mapped before fork(), used by the child"},
    {"unmap", test_unmap, "[SIZE [DELAY_MS]]: a thread unmaps the buffer of a running job"},
    {"kill", test_kill, "[SIZE [DELAY_MS [abort]]]: a process killed in the middle of a job"},
    {"reload", test_reload, "MODULE.ko [PARAMETERS]: rmmod and insmod again"},
    {"bands", test_bands, "[M [K [P]]]: a GEMM whose C exceeds one buffer, in bands of rows"},
    {"network", test_network, "DIR [os|ws|is]: every int8 GEMM that scripts/import wrote into DIR"},
};

int main(int argc, char** argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 2)
        for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i)
            if (strcmp(argv[1], tests[i].name) == 0) {
                g_test = tests[i].name;
                return tests[i].run(argc - 2, argv + 2) ? 1 : 0;
            }
    fprintf(stderr, "usage: systolic-linux-test TEST [ARGS]\n");
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; ++i)
        fprintf(stderr, "  %-10s %s\n", tests[i].name, tests[i].what);
    return 2;
}
