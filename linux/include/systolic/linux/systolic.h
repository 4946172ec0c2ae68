/* SPDX-License-Identifier: Apache-2.0 OR GPL-2.0-only */
/* <systolic/linux/systolic.h>: the user-space interface of the systolic accelerator's Linux driver
 * (systolic.ko), for C99, C++ and the kernel (__KERNEL__). docs/linux.md describes it.
 *
 * The driver exposes each accelerator as /dev/systolic0. mmap() on it allocates one DMA buffer per
 * call (offset 0, up to SYSTOLIC_LINUX_MAX_BUFFER bytes, freed when the last mapping of it goes);
 * SYSTOLIC_IOC_RUN runs one job whose addresses are user virtual addresses inside those mappings,
 * and SYSTOLIC_IOC_INFO describes the device. The job is <systolic/accelerator_driver.h>'s struct
 * systolic_job, the counters its struct systolic_counters: the same structs bare-metal drivers use. */
#ifndef SYSTOLIC_LINUX_SYSTOLIC_H
#define SYSTOLIC_LINUX_SYSTOLIC_H

#include <linux/ioctl.h>
#include <linux/types.h>
#include <systolic/accelerator_driver.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SYSTOLIC_LINUX_DEVICE "/dev/systolic0"
/* Interface version of this header: major in bits 31:16, minor in bits 15:0. */
#define SYSTOLIC_LINUX_VERSION 0x00010000u
/* The largest buffer one mmap() gives: what dma_alloc_coherent finds contiguous without CMA. */
#define SYSTOLIC_LINUX_MAX_BUFFER (4u << 20)

/* SYSTOLIC_IOC_RUN's argument.
 * In: `job`, every field of it, with a_addr, b_addr, c_addr, partial_addr (when non-zero) and
 *     scale_vec_addr (when non-zero) given as addresses in this process's mappings of the device; each
 *     operand's whole extent (rows times stride, or packed rows) must lie inside one mapping, else the
 *     driver refuses the job with EFAULT before the device sees it. `flags` must be 0.
 * Out: `counters` and `energy` (pJ) of the job as the device counted them; `error`, the device's
 *     ERROR register (SYSTOLIC_ERR_*), and for SYSTOLIC_ERR_DMA `error_addr` (the failing bus address,
 *     a DMA address). Written back whenever the device saw the job, also when the ioctl fails. */
struct systolic_ioc_run {
    systolic_job job;
    __u32 flags;
    __u32 error;
    __u64 error_addr;
    systolic_counters counters;
    __u64 energy;
    __u64 reserved[2]; /* 0 */
};

/* SYSTOLIC_IOC_INFO's result. */
struct systolic_ioc_info {
    __u32 version;        /* SYSTOLIC_LINUX_VERSION of the driver */
    __u32 device_version; /* the device's VERSION register */
    __u32 array_size;     /* N of the N x N array (ARRAY_SIZE) */
    __u32 irq;            /* 1: jobs end on the interrupt (MSI-X of ivshmem-doorbell); 0: polled */
    __u32 max_buffer;     /* SYSTOLIC_LINUX_MAX_BUFFER */
    __u32 reserved0;
    __u64 jobs_started; /* START writes since the driver bound the device */
    __u64 jobs_failed;  /* of those, jobs the device refused or failed */
    __u64 interrupts;   /* interrupts taken with a cause in IRQ_STATUS */
    __u64 jobs_aborted; /* jobs stopped by soft reset (their submitter was killed, or a timeout) */
    __u64 reserved[4];
};

#define SYSTOLIC_IOC_MAGIC 0xB9
#define SYSTOLIC_IOC_INFO _IOR(SYSTOLIC_IOC_MAGIC, 0, struct systolic_ioc_info)
#define SYSTOLIC_IOC_RUN _IOWR(SYSTOLIC_IOC_MAGIC, 1, struct systolic_ioc_run)

/* The layout is x86-64's (and any LP64 ABI's that aligns 64-bit members to 8 bytes); the ioctl
 * numbers carry the sizes, so a mismatched build gets ENOTTY rather than wrong fields. */
#define SYSTOLIC_IOC_RUN_SIZE 208
#define SYSTOLIC_IOC_INFO_SIZE 88

#ifdef __cplusplus
}
#endif

#endif /* SYSTOLIC_LINUX_SYSTOLIC_H */
