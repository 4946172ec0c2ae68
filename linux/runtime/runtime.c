/* The user-space runtime over systolic.ko: see <systolic/linux/runtime.h>. */
#include <systolic/linux/runtime.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

int systolic_open(systolic_handle* h, const char* path) {
    h->fd = open(path ? path : SYSTOLIC_LINUX_DEVICE, O_RDWR | O_CLOEXEC);
    if (h->fd < 0) return -errno;
    if (systolic_info(h, &h->info) != 0) {
        const int e = errno;
        close(h->fd);
        h->fd = -1;
        return -e;
    }
    return 0;
}

void systolic_close(systolic_handle* h) {
    if (h->fd >= 0) close(h->fd);
    h->fd = -1;
}

int systolic_info(const systolic_handle* h, struct systolic_ioc_info* info) {
    return ioctl(h->fd, SYSTOLIC_IOC_INFO, info) == 0 ? 0 : -errno;
}

void* systolic_alloc(systolic_handle* h, size_t bytes) {
    void* p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, h->fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

int systolic_free(void* buffer, size_t bytes) {
    return munmap(buffer, bytes) == 0 ? 0 : -errno;
}

int systolic_run(systolic_handle* h, const systolic_job* job, systolic_result* result) {
    struct systolic_ioc_run run;
    memset(&run, 0, sizeof run);
    run.job = *job;
    const int ret = ioctl(h->fd, SYSTOLIC_IOC_RUN, &run) == 0 ? 0 : -errno;
    if (result) {
        /* The driver writes the results back whenever the device saw the job; otherwise they
           stay as zeroed here. */
        result->counters = run.counters;
        result->energy = run.energy;
        result->error = run.error;
        result->error_addr = run.error_addr;
    }
    return ret;
}

static void add_counters(systolic_result* sum, const systolic_result* r) {
    sum->counters.edges += r->counters.edges;
    sum->counters.macs += r->counters.macs;
    sum->counters.macs_real += r->counters.macs_real;
    sum->counters.cycles += r->counters.cycles;
    sum->counters.stall_cycles += r->counters.stall_cycles;
    sum->counters.preload_edges += r->counters.preload_edges;
    sum->energy += r->energy;
}

uint32_t systolic_plan_rows(uint64_t m, uint64_t row_bytes, uint64_t max_buffer, size_t* n) {
    *n = 0;
    if (m == 0 || row_bytes == 0 || row_bytes > max_buffer) return 0;
    uint64_t rows = max_buffer / row_bytes < m ? max_buffer / row_bytes : m;
    if (rows > UINT32_MAX) rows = UINT32_MAX; /* a job's M is 32 bits */
    *n = (size_t)((m + rows - 1) / rows);
    return (uint32_t)rows;
}

int systolic_run_rows(systolic_handle* h, const systolic_job* job, const systolic_rows* bands, size_t n,
                      systolic_result* result, size_t* failed_band) {
    systolic_result sum, one;
    memset(&sum, 0, sizeof sum);
    int ret = 0;
    for (size_t i = 0; i < n; ++i) {
        systolic_job band = *job;
        band.m = bands[i].rows;
        band.a_addr = systolic_addr(bands[i].a);
        band.c_addr = systolic_addr(bands[i].c);
        band.partial_addr = bands[i].partial ? systolic_addr(bands[i].partial) : 0;
        memset(&one, 0, sizeof one);
        ret = systolic_run(h, &band, &one);
        add_counters(&sum, &one);
        if (ret != 0) {
            sum.error = one.error;
            sum.error_addr = one.error_addr;
            if (failed_band) *failed_band = i;
            break;
        }
    }
    if (result) *result = sum;
    return ret;
}

const char* systolic_error_name(uint32_t code) {
    /* In the order of the codes in <systolic/accelerator_regs.h>. */
    static const char* const names[] = {
        "ERR_NONE",  "ERR_BUSY", "ERR_ZERO_DIM", "ERR_DTYPE",   "ERR_OPTION", "ERR_ALIGN",   "ERR_STRIDE",
        "ERR_RANGE", "ERR_SIZE", "ERR_OVERLAP",  "ERR_PARTIAL", "ERR_DMA",    "ERR_INTERNAL"};
    typedef char names_cover_every_code[sizeof names / sizeof names[0] == SYSTOLIC_ERR_INTERNAL + 1 ? 1 : -1];
    (void)sizeof(names_cover_every_code);
    return code < sizeof names / sizeof names[0] ? names[code] : "ERR_?";
}
