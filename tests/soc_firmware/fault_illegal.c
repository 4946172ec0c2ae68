/* An illegal instruction (the 16-bit all-zero encoding): a firmware fault at its pc. */
#include <stdio.h>

#include "soc.h"

extern char fault_pc[];

int main(void) {
    printf("fault_pc=%p\n", (void*)fault_pc);
    __asm__ volatile(".globl fault_pc\nfault_pc: .2byte 0");
    return 0;
}
