// The memory map of <systolic/soc_map.h> as one table, in the router's port order: the platform
// binds and maps its targets from it, gives the hart its RAM and device ranges from it, and the
// tests hold docs/soc.md's table to it.
#pragma once

#include <cstdint>

#include "systolic/accelerator_regs.h"
#include "systolic/soc_map.h"

namespace systolic::soc {

struct soc_region {
    const char* name;
    const char* macro;  // SOC_<macro>_BASE, SOC_<macro>_SIZE
    std::uint64_t base, size;
    bool ram;
};

inline constexpr soc_region soc_regions[] = {
    {"ram", "RAM", SOC_RAM_BASE, SOC_RAM_SIZE, true},
    {"high_ram", "HIGH_RAM", SOC_HIGH_RAM_BASE, SOC_HIGH_RAM_SIZE, true},
    {"accel", "ACCEL", SOC_ACCEL_BASE, SOC_ACCEL_SIZE, false},
    {"uart", "UART", SOC_UART_BASE, SOC_UART_SIZE, false},
    {"timer", "TIMER", SOC_TIMER_BASE, SOC_TIMER_SIZE, false},
    {"finisher", "FINISHER", SOC_FINISHER_BASE, SOC_FINISHER_SIZE, false},
};
enum soc_port : unsigned { port_ram, port_high_ram, port_accel, port_uart, port_timer, port_finisher };
static_assert(soc_regions[port_ram].base == SOC_RAM_BASE &&
                  soc_regions[port_high_ram].base == SOC_HIGH_RAM_BASE &&
                  soc_regions[port_accel].base == SOC_ACCEL_BASE &&
                  soc_regions[port_uart].base == SOC_UART_BASE &&
                  soc_regions[port_timer].base == SOC_TIMER_BASE &&
                  soc_regions[port_finisher].base == SOC_FINISHER_BASE,
              "soc_port follows the table");

static_assert(SOC_ACCEL_SIZE >= SYSTOLIC_REGS_SIZE, "the accelerator's window must hold its register block");

constexpr bool page_aligned() {
    for (const soc_region& r : soc_regions)
        if (r.base % 4096 || r.size % 4096) return false;
    return true;
}
static_assert(page_aligned(), "the hart maps whole 4 KiB pages");

constexpr bool disjoint() {
    for (const soc_region& a : soc_regions)
        for (const soc_region& b : soc_regions)
            if (&a != &b && a.base < b.base + b.size && b.base < a.base + a.size) return false;
    return true;
}
static_assert(disjoint(), "the map's ranges overlap");

}  // namespace systolic::soc
