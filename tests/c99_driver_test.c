/* The C register header and the driver compile as C99 (-std=c99 -pedantic -Werror) and program the
 * registers they name: a fake register file records what the driver writes. */
#include <stdio.h>
#include <string.h>

#include <systolic/accelerator_driver.h>

static uint32_t regs[SYSTOLIC_REGS_SIZE / 4];
static unsigned writes;

static uint32_t read32(void* ctx, uint32_t offset) {
    (void)ctx;
    return regs[offset / 4];
}
static void write32(void* ctx, uint32_t offset, uint32_t value) {
    (void)ctx;
    regs[offset / 4] = value;
    ++writes;
}

static int failures;
#define CHECK(cond)                                                    \
    do {                                                               \
        if (!(cond)) {                                                 \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, #cond); \
            ++failures;                                                \
        }                                                              \
    } while (0)

int main(void) {
    systolic_dev dev = {0, read32, write32};
    systolic_job job;
    uint32_t n = 0, one;
    float one_f = 1.0f;
    systolic_counters c;

    CHECK(systolic_probe(&dev, &n) != 0); /* no magic yet */
    regs[SYSTOLIC_REG_ID / 4] = SYSTOLIC_ID_MAGIC;
    regs[SYSTOLIC_REG_VERSION / 4] = SYSTOLIC_VERSION_VALUE;
    regs[SYSTOLIC_REG_ARRAY_SIZE / 4] = 8;
    CHECK(systolic_probe(&dev, &n) == 0);
    CHECK(n == 8);

    systolic_job_init(&job);
    CHECK(job.dtype == SYSTOLIC_DTYPE_INT32);
    CHECK(job.dataflow == SYSTOLIC_DATAFLOW_OS);
    CHECK(job.scale_vec_addr == 0 && job.zero_point_vec == 0); /* per-tensor */
    job.m = 3;
    job.k = 5;
    job.p = 7;
    job.a_addr = 0x123456789aull;
    job.c_addr = 0x80001000u;
    job.dtype = SYSTOLIC_DTYPE_BF16;
    job.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
    job.zero_point = -2;
    job.dataflow = SYSTOLIC_DATAFLOW_WS;
    job.scale_vec_addr = 0x1122334455667788ull;
    job.zero_point_vec = 1;
    systolic_program(&dev, &job);
    CHECK(regs[SYSTOLIC_REG_M / 4] == 3 && regs[SYSTOLIC_REG_K / 4] == 5 && regs[SYSTOLIC_REG_P / 4] == 7);
    CHECK(regs[SYSTOLIC_REG_A_ADDR_LO / 4] == 0x3456789au && regs[SYSTOLIC_REG_A_ADDR_HI / 4] == 0x12u);
    CHECK(regs[SYSTOLIC_REG_C_ADDR_LO / 4] == 0x80001000u && regs[SYSTOLIC_REG_C_ADDR_HI / 4] == 0);
    CHECK(regs[SYSTOLIC_REG_DTYPE / 4] == SYSTOLIC_DTYPE_BF16);
    CHECK(regs[SYSTOLIC_REG_K_POLICY / 4] == SYSTOLIC_K_POLICY_PARTIALS);
    CHECK(regs[SYSTOLIC_REG_ZERO_POINT / 4] == 0xfffffffeu);
    CHECK(regs[SYSTOLIC_REG_DATAFLOW / 4] == SYSTOLIC_DATAFLOW_WS);
    CHECK(regs[SYSTOLIC_REG_SCALE_VEC_ADDR_LO / 4] == 0x55667788u &&
          regs[SYSTOLIC_REG_SCALE_VEC_ADDR_HI / 4] == 0x11223344u);
    CHECK(regs[SYSTOLIC_REG_ZERO_POINT_VEC / 4] == 1);
    memcpy(&one, &one_f, sizeof one);
    CHECK(regs[SYSTOLIC_REG_SCALE / 4] == one);
    CHECK(regs[SYSTOLIC_REG_CTRL / 4] == 0); /* programming never starts */

    systolic_start(&dev, 1);
    CHECK(regs[SYSTOLIC_REG_CTRL / 4] == (SYSTOLIC_CTRL_START | SYSTOLIC_CTRL_IRQ_EN));
    regs[SYSTOLIC_REG_STATUS / 4] = SYSTOLIC_STATUS_BUSY;
    CHECK(systolic_outcome(&dev) == 0);
    regs[SYSTOLIC_REG_STATUS / 4] = SYSTOLIC_STATUS_DONE;
    CHECK(systolic_outcome(&dev) == 1);
    regs[SYSTOLIC_REG_STATUS / 4] = SYSTOLIC_STATUS_ERROR;
    regs[SYSTOLIC_REG_ERROR / 4] = SYSTOLIC_ERR_OVERLAP;
    CHECK(systolic_outcome(&dev) == -1 && systolic_error(&dev) == SYSTOLIC_ERR_OVERLAP);
    regs[SYSTOLIC_REG_CYCLES_LO / 4] = 5;
    regs[SYSTOLIC_REG_CYCLES_HI / 4] = 1;
    regs[SYSTOLIC_REG_STALL_CYCLES_LO / 4] = 3;
    regs[SYSTOLIC_REG_STALL_CYCLES_HI / 4] = 2;
    regs[SYSTOLIC_REG_PRELOAD_EDGES_LO / 4] = 9;
    regs[SYSTOLIC_REG_PRELOAD_EDGES_HI / 4] = 4;
    regs[SYSTOLIC_REG_ENERGY_LO / 4] = 7;
    regs[SYSTOLIC_REG_ENERGY_HI / 4] = 6;
    systolic_read_counters(&dev, &c);
    CHECK(c.cycles == 0x100000005ull);
    CHECK(c.stall_cycles == 0x200000003ull);
    CHECK(c.preload_edges == 0x400000009ull);
    CHECK(systolic_read_energy(&dev) == 0x600000007ull);
    systolic_reset(&dev);
    CHECK(regs[SYSTOLIC_REG_CTRL / 4] == SYSTOLIC_CTRL_RESET);
    CHECK(writes > 20);
    if (failures == 0) printf("c99 driver test: PASS\n");
    return failures != 0;
}
