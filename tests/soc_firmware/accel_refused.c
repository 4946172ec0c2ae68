/* A job the accelerator refuses (an unknown DTYPE): the firmware sees only ERROR's code, and
 * returns 0, so that the platform's own line is what names the refusal and its reason. */
#include "accel_2x3.h"

int main(void) {
    const systolic_dev dev = soc_accel();
    systolic_job job;
    job_2x3(&job);
    job.dtype = 7;
    systolic_program(&dev, &job);
    systolic_start(&dev, 0);
    printf("error %u\n", (unsigned)systolic_error(&dev));
    return 0;
}
