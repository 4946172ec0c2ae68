/* The installed C header and driver, compiled as C99 by a consumer. */
#include <systolic/accelerator_driver.h>

int consumer_probe(const systolic_dev *dev, uint32_t *n) { return systolic_probe(dev, n); }
