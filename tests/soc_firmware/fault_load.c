/* A load from an address the map leaves empty: a firmware fault at the load's pc, which the
 * firmware prints first so that the test can compare. */
#include <stdio.h>

#include "soc.h"

extern char fault_pc[];

int main(void) {
    printf("fault_pc=%p\n", (void*)fault_pc);
    uintptr_t v, where = 0x20000010u;
    __asm__ volatile(".globl fault_pc\nfault_pc: lw %0, 0(%1)" : "=r"(v) : "r"(where));
    return (int)v;
}
