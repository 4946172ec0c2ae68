// Compiles the installed headers as C++17 (the build fails if they do not).
#include <systolic/linux/runtime.h>
#include <systolic/linux/systolic.h>

#include <type_traits>

static_assert(sizeof(systolic_ioc_run) == SYSTOLIC_IOC_RUN_SIZE, "struct systolic_ioc_run's layout");
static_assert(sizeof(systolic_ioc_info) == SYSTOLIC_IOC_INFO_SIZE, "struct systolic_ioc_info's layout");
static_assert(std::is_trivially_copyable<systolic_ioc_run>::value, "a plain C struct");

unsigned long systolic_linux_header_check_cpp() {
    return SYSTOLIC_IOC_INFO;
}
