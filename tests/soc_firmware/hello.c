/* Prints a line over the UART through picolibc's printf and returns 0: the smallest firmware. */
#include <stdio.h>

#include "soc.h"

int main(void) {
    printf("hello from rv%d\n", (int)(sizeof(void*) * 8));
    return 0;
}
