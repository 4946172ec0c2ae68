/* The compute loop's contract with systolic-bench (C99 and C++): after each round the loop stores
 * the round's number here, in the main RAM's unused middle (above the program, below the stack),
 * where the bench reads it from the host's side of the RAM. */
#ifndef SYSTOLIC_BENCH_HART_LOOP_H
#define SYSTOLIC_BENCH_HART_LOOP_H

#include <systolic/soc_map.h>

#define HART_LOOP_ROUNDS_ADDRESS (SOC_RAM_BASE + SOC_RAM_SIZE / 2)
/* The timer interrupt's period in the loop, simulated nanoseconds. */
#define HART_LOOP_TICK_NS 100000u

#endif
