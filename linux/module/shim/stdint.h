/* <stdint.h> inside kbuild, for <systolic/accelerator_driver.h>: the kernel's fixed-width types. */
#ifndef SYSTOLIC_SHIM_STDINT_H
#define SYSTOLIC_SHIM_STDINT_H
#include <linux/types.h>
#endif
