/* Compiles the installed headers as strict C99 (the build fails if they do not). */
#include <systolic/linux/runtime.h>
#include <systolic/linux/systolic.h>

typedef char run_size_matches[sizeof(struct systolic_ioc_run) == SYSTOLIC_IOC_RUN_SIZE ? 1 : -1];
typedef char info_size_matches[sizeof(struct systolic_ioc_info) == SYSTOLIC_IOC_INFO_SIZE ? 1 : -1];

unsigned long systolic_linux_header_check_c(void) {
    return (unsigned long)SYSTOLIC_IOC_RUN + sizeof(run_size_matches) + sizeof(info_size_matches);
}
