/* A compute loop with RAM accesses (no devices), for the hart's speed: its summary line gives the
 * instructions retired and the MIPS. */
#include <stdio.h>

#include "soc.h"

static uint32_t buf[1024];

int main(void) {
    uint32_t x = 1;
    for (unsigned round = 0; round < 20000; ++round)
        for (unsigned i = 0; i < 1024; ++i) {
            x = x * 1664525u + 1013904223u;
            buf[i] += x >> 7;
        }
    uint32_t sum = 0;
    for (unsigned i = 0; i < 1024; ++i)
        sum += buf[i];
    printf("sum=%u\n", (unsigned)sum);
    return 0;
}
