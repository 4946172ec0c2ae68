/* What the project's firmware programs share: the accelerator as a <systolic/accelerator_driver.h>
 * device, a job run to its end on the interrupt while the hart sleeps, and the programs' own
 * references (software GEMMs and requantization written here, apart from the model), so that
 * each program checks the accelerator against arithmetic it ran itself. */
#ifndef FIRMWARE_FW_H
#define FIRMWARE_FW_H

#include <stddef.h>
#include <stdint.h>

#include "soc.h"

extern systolic_dev fw_accel;

/* A job with the registers' reset values (systolic_job_init), then the format, the shape and the
 * three matrices' addresses (packed rows). */
void fw_job(systolic_job* job, uint32_t dtype, uint32_t m, uint32_t k, uint32_t p, uint64_t a, uint64_t b,
            uint64_t c);

/* Probes the accelerator (the ID and version registers); its N in *n. 0, or -1 with a line printed. */
int fw_init(const char* program, uint32_t* n);

/* Programs the job and starts it with the interrupt enabled; the hart is free until fw_wait. */
void fw_start(const systolic_job* job);
/* Sleeps in wfi until the interrupt says the started job ended (completed, refused or failed).
 * 1: completed; -1: see systolic_error. */
int fw_wait(void);
/* fw_start, then fw_wait. */
int fw_run(const systolic_job* job);

/* Sleeps in wfi until *flag is non-zero. Interrupts are off between the test and the wfi, so an
 * interrupt that sets the flag cannot slip in between (wfi wakes on a pending interrupt whatever
 * mstatus.MIE says); they are on while the hart is awake, so the handler runs. */
void fw_sleep_until(volatile int* flag);

/* xorshift32: the programs' operands, reproducible run to run. */
uint32_t fw_rand(uint32_t* state);
/* An integer in [lo, hi]. */
int32_t fw_rand_range(uint32_t* state, int32_t lo, int32_t hi);

/* bfloat16 bits of a float that bf16 holds exactly (the programs pick such values), and back. */
uint16_t fw_bf16_bits(float f);
float fw_bf16_value(uint16_t bits);

/* C = A x B with row strides in elements, each output's terms added in k order from zero:
 * int8 -> int32 (wrapping), int32 -> int64, fp32 -> fp32 (each product rounded, then the sum),
 * bf16 -> fp32 (the product of two bf16 is exact in fp32). */
void fw_gemm_i8(const int8_t* a, const int8_t* b, int32_t* c, uint32_t m, uint32_t k, uint32_t p,
                uint32_t lda, uint32_t ldb, uint32_t ldc);
void fw_gemm_i32(const int32_t* a, const int32_t* b, int64_t* c, uint32_t m, uint32_t k, uint32_t p);
void fw_gemm_f32(const float* a, const float* b, float* c, uint32_t m, uint32_t k, uint32_t p);
void fw_gemm_bf16(const uint16_t* a, const uint16_t* b, float* c, uint32_t m, uint32_t k, uint32_t p);

/* saturate_int8(round(acc x scale) + zero_point), the product in double, the rounding mode one of
 * SYSTOLIC_ROUNDING_*, as docs/formats.md defines the accelerator's int8 output. */
int8_t fw_requantize(int32_t acc, float scale, int32_t zero_point, uint32_t rounding);

/* 0 when the n elements are equal; otherwise the first difference printed, -1. */
int fw_compare_i8(const char* what, const int8_t* got, const int8_t* want, size_t n);
int fw_compare_i32(const char* what, const int32_t* got, const int32_t* want, size_t n);
int fw_compare_i64(const char* what, const int64_t* got, const int64_t* want, size_t n);
/* Bit for bit: the accelerator's float sums are defined to the last bit. */
int fw_compare_f32(const char* what, const float* got, const float* want, size_t n);

#endif
