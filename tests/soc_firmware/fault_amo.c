/* An atomic add to an address that is not 4-byte aligned: a firmware fault at the amoadd's pc,
 * which the privileged spec makes a store/AMO address misaligned (mcause 6) with the data address.
 * The firmware prints both first so that the test can compare. */
#include <stdio.h>

#include "soc.h"

extern char fault_pc[];
static uint32_t words[2];

int main(void) {
    uintptr_t where = (uintptr_t)words + 2;
    printf("fault_pc=%p address=%p\n", (void*)fault_pc, (void*)where);
    uint32_t old;
    __asm__ volatile(".globl fault_pc\nfault_pc: amoadd.w %0, %2, (%1)"
                     : "=r"(old)
                     : "r"(where), "r"(1u)
                     : "memory");
    return (int)old;
}
