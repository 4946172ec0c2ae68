/* <string.h> inside kbuild, for <systolic/accelerator_driver.h>: memset and memcpy. */
#ifndef SYSTOLIC_SHIM_STRING_H
#define SYSTOLIC_SHIM_STRING_H
#include <linux/string.h>
#endif
