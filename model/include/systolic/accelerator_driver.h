/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/* <systolic/accelerator_driver.h>: a small driver for the systolic accelerator, C99 and C++.
 * Header-only, no allocation, no OS: the platform gives two register accessors (a bare-metal
 * driver's are volatile loads and stores; a SystemC CPU model's are TLM transactions), and the
 * driver programs a job, starts it, and reads the outcome. Waiting (polling STATUS or taking the
 * interrupt) is left to the caller, who knows how its platform waits. Register names and values
 * come from <systolic/accelerator_regs.h>; docs/virtual-platform.md shows a whole run. */
#ifndef SYSTOLIC_ACCELERATOR_DRIVER_H
#define SYSTOLIC_ACCELERATOR_DRIVER_H

#include <stdint.h>
#include <string.h>

#include <systolic/accelerator_regs.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct systolic_dev {
    void* ctx; /* passed back to the accessors */
    uint32_t (*read32)(void* ctx, uint32_t offset);
    void (*write32)(void* ctx, uint32_t offset, uint32_t value);
} systolic_dev;

/* One job: C = A * B. Addresses are the platform's, as the accelerator's DMA sees them. */
typedef struct systolic_job {
    uint32_t m, k, p;
    uint64_t a_addr, b_addr, c_addr;
    uint32_t a_stride, b_stride, c_stride; /* bytes; 0: packed rows */
    uint32_t dtype;                        /* SYSTOLIC_DTYPE_* */
    uint32_t out_dtype;                    /* SYSTOLIC_OUT_DTYPE_* */
    uint32_t order;                        /* SYSTOLIC_ORDER_* */
    uint32_t k_tile;                       /* 0: the whole K */
    uint32_t k_policy;                     /* SYSTOLIC_K_POLICY_* */
    uint64_t partial_addr;                 /* K_POLICY_PARTIALS with two or more chunks */
    uint32_t partial_stride;
    uint32_t overflow; /* SYSTOLIC_OVERFLOW_* */
    uint32_t rounding; /* SYSTOLIC_ROUNDING_* */
    float scale;       /* OUT_DTYPE_INT8 */
    int32_t zero_point;
    uint32_t
        dataflow; /* SYSTOLIC_DATAFLOW_*; after the older fields, so that their initializers stay valid */
    /* OUT_DTYPE_INT8 per column (interface 1.3): P float64 scales at scale_vec_addr, then P int32
     * zero points when zero_point_vec is 1; scale_vec_addr 0: the per-tensor scale and zero_point.
     * Last, so that older initializers stay per-tensor. */
    uint64_t scale_vec_addr;
    uint32_t zero_point_vec;
} systolic_job;

typedef struct systolic_counters {
    uint64_t edges, macs, macs_real, cycles;
    uint64_t stall_cycles;  /* cycles the array waited for operands or the C scratchpad */
    uint64_t preload_edges; /* DATAFLOW_WS, _IS: edges that loaded the stationary blocks */
} systolic_counters;

/* A job with the registers' reset values: int32, packed rows, row order, no K split, scale 1,
 * output stationary. */
static inline void systolic_job_init(systolic_job* job) {
    memset(job, 0, sizeof *job);
    job->dtype = SYSTOLIC_DTYPE_INT32;
    job->scale = 1.0f;
}

static inline uint64_t systolic_read64(const systolic_dev* dev, uint32_t lo_offset) {
    const uint32_t lo = dev->read32(dev->ctx, lo_offset);
    return (uint64_t)dev->read32(dev->ctx, lo_offset + 4u) << 32 | lo;
}

static inline void systolic_write64(const systolic_dev* dev, uint32_t lo_offset, uint64_t value) {
    dev->write32(dev->ctx, lo_offset, (uint32_t)value);
    dev->write32(dev->ctx, lo_offset + 4u, (uint32_t)(value >> 32));
}

/* 0 when the ID register holds the magic value and the major version is 1; the array size N in *n. */
static inline int systolic_probe(const systolic_dev* dev, uint32_t* n) {
    if (dev->read32(dev->ctx, SYSTOLIC_REG_ID) != SYSTOLIC_ID_MAGIC) return -1;
    if ((dev->read32(dev->ctx, SYSTOLIC_REG_VERSION) >> 16) != (SYSTOLIC_VERSION_VALUE >> 16)) return -1;
    if (n) *n = dev->read32(dev->ctx, SYSTOLIC_REG_ARRAY_SIZE);
    return 0;
}

/* Writes every configuration register of the job (not CTRL). */
static inline void systolic_program(const systolic_dev* dev, const systolic_job* job) {
    uint32_t scale_bits;
    memcpy(&scale_bits, &job->scale, sizeof scale_bits);
    dev->write32(dev->ctx, SYSTOLIC_REG_M, job->m);
    dev->write32(dev->ctx, SYSTOLIC_REG_K, job->k);
    dev->write32(dev->ctx, SYSTOLIC_REG_P, job->p);
    systolic_write64(dev, SYSTOLIC_REG_A_ADDR_LO, job->a_addr);
    systolic_write64(dev, SYSTOLIC_REG_B_ADDR_LO, job->b_addr);
    systolic_write64(dev, SYSTOLIC_REG_C_ADDR_LO, job->c_addr);
    dev->write32(dev->ctx, SYSTOLIC_REG_A_STRIDE, job->a_stride);
    dev->write32(dev->ctx, SYSTOLIC_REG_B_STRIDE, job->b_stride);
    dev->write32(dev->ctx, SYSTOLIC_REG_C_STRIDE, job->c_stride);
    dev->write32(dev->ctx, SYSTOLIC_REG_DTYPE, job->dtype);
    dev->write32(dev->ctx, SYSTOLIC_REG_OUT_DTYPE, job->out_dtype);
    dev->write32(dev->ctx, SYSTOLIC_REG_ORDER, job->order);
    dev->write32(dev->ctx, SYSTOLIC_REG_K_TILE, job->k_tile);
    dev->write32(dev->ctx, SYSTOLIC_REG_K_POLICY, job->k_policy);
    systolic_write64(dev, SYSTOLIC_REG_PARTIAL_ADDR_LO, job->partial_addr);
    dev->write32(dev->ctx, SYSTOLIC_REG_PARTIAL_STRIDE, job->partial_stride);
    dev->write32(dev->ctx, SYSTOLIC_REG_OVERFLOW, job->overflow);
    dev->write32(dev->ctx, SYSTOLIC_REG_ROUNDING, job->rounding);
    dev->write32(dev->ctx, SYSTOLIC_REG_SCALE, scale_bits);
    dev->write32(dev->ctx, SYSTOLIC_REG_ZERO_POINT, (uint32_t)job->zero_point);
    dev->write32(dev->ctx, SYSTOLIC_REG_DATAFLOW, job->dataflow);
    systolic_write64(dev, SYSTOLIC_REG_SCALE_VEC_ADDR_LO, job->scale_vec_addr);
    dev->write32(dev->ctx, SYSTOLIC_REG_ZERO_POINT_VEC, job->zero_point_vec);
}

/* Starts the programmed job; with irq non-zero the interrupt line follows IRQ_STATUS. Causes left
 * over from earlier jobs are cleared first, so that the line (or IRQ_STATUS) then speaks of this job
 * only. Whether the start was accepted shows in STATUS: BUSY, or ERROR with the code in ERROR. */
static inline void systolic_start(const systolic_dev* dev, int irq) {
    dev->write32(dev->ctx, SYSTOLIC_REG_IRQ_STATUS, SYSTOLIC_IRQ_DONE | SYSTOLIC_IRQ_ERROR);
    dev->write32(dev->ctx, SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_START | (irq ? SYSTOLIC_CTRL_IRQ_EN : 0u));
}

static inline uint32_t systolic_status(const systolic_dev* dev) {
    return dev->read32(dev->ctx, SYSTOLIC_REG_STATUS);
}

/* 1: the job completed; -1: refused or failed (see systolic_error); 0: still running. */
static inline int systolic_outcome(const systolic_dev* dev) {
    const uint32_t s = systolic_status(dev);
    if (s & SYSTOLIC_STATUS_ERROR) return -1;
    if (s & SYSTOLIC_STATUS_BUSY) return 0;
    return (s & SYSTOLIC_STATUS_DONE) ? 1 : -1;
}

static inline uint32_t systolic_error(const systolic_dev* dev) {
    return dev->read32(dev->ctx, SYSTOLIC_REG_ERROR);
}

/* ERR_DMA: the address of the failing bus transaction. */
static inline uint64_t systolic_error_address(const systolic_dev* dev) {
    return systolic_read64(dev, SYSTOLIC_REG_ERROR_ADDR_LO);
}

/* Clears every pending interrupt cause and returns them (SYSTOLIC_IRQ_*). */
static inline uint32_t systolic_irq_ack(const systolic_dev* dev) {
    const uint32_t causes = dev->read32(dev->ctx, SYSTOLIC_REG_IRQ_STATUS);
    dev->write32(dev->ctx, SYSTOLIC_REG_IRQ_STATUS, causes);
    return causes;
}

/* Soft reset: stops a running job (STATUS.BUSY clears once it has) and resets every register. */
static inline void systolic_reset(const systolic_dev* dev) {
    dev->write32(dev->ctx, SYSTOLIC_REG_CTRL, SYSTOLIC_CTRL_RESET);
}

static inline void systolic_read_counters(const systolic_dev* dev, systolic_counters* c) {
    c->edges = systolic_read64(dev, SYSTOLIC_REG_EDGES_LO);
    c->macs = systolic_read64(dev, SYSTOLIC_REG_MACS_LO);
    c->macs_real = systolic_read64(dev, SYSTOLIC_REG_MACS_REAL_LO);
    c->cycles = systolic_read64(dev, SYSTOLIC_REG_CYCLES_LO);
    c->stall_cycles = systolic_read64(dev, SYSTOLIC_REG_STALL_CYCLES_LO);
    c->preload_edges = systolic_read64(dev, SYSTOLIC_REG_PRELOAD_EDGES_LO);
}

/* Interface 1.4: the last job's energy in pJ (ENERGY), 0 when the accelerator prices no jobs. Apart
 * from systolic_read_counters, so that a driver that does not use it makes no more bus accesses. */
static inline uint64_t systolic_read_energy(const systolic_dev* dev) {
    return systolic_read64(dev, SYSTOLIC_REG_ENERGY_LO);
}

#ifdef __cplusplus
}
#endif

#endif /* SYSTOLIC_ACCELERATOR_DRIVER_H */
