// The memory map is declared once, in <systolic/soc_map.h>: docs/soc.md's tables and soc.ld's RAM
// say the same, and the platform's table (soc_regions.h) is built from it. The devices' registers
// are declared by the components themselves (uart.h, timer.h, finisher.h, hart_core.h's interrupt
// numbers); the header re-exports them for firmware and must say the same.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>

#include "doc_table.h"
#include "finisher.h"
#include "hart_core.h"
#include "soc_regions.h"
#include "systolic/soc_map.h"
#include "timer.h"
#include "uart.h"

namespace {

using systolic::soc::soc_regions;
using systolic::test::read;
using systolic::test::row_numbers;

// The number after `key` in `text`.
std::uint64_t number_after(const std::string& text, const std::string& key) {
    const auto at = text.find(key);
    if (at == std::string::npos) throw std::runtime_error("no " + key);
    return std::stoull(text.substr(at + key.size()), nullptr, 0);
}

TEST(SocMap, TheDocsMapTableIsTheHeaders) {
    const std::string doc = read(SOC_DOC);
    for (const auto& r : soc_regions) {
        const auto numbers = row_numbers(doc, "docs/soc.md", std::string("SOC_") + r.macro + "_BASE");
        ASSERT_GE(numbers.size(), 2u) << r.name;
        EXPECT_EQ(numbers[0], r.base) << r.name;
        EXPECT_EQ(numbers[1], r.size) << r.name;
    }
    std::size_t rows = 0;
    for (auto at = doc.find("_BASE`, `SOC_"); at != std::string::npos; at = doc.find("_BASE`, `SOC_", at + 1))
        ++rows;
    EXPECT_EQ(rows, std::size(soc_regions)) << "docs/soc.md's map has rows the header does not";
}

#define SOC_REGISTER(name) \
    { #name, name }
TEST(SocMap, TheDocsRegisterAndInterruptTablesAreTheHeaders) {
    const std::string doc = read(SOC_DOC);
    const struct {
        const char* macro;
        std::uint64_t value;
    } registers[] = {SOC_REGISTER(SOC_UART_TX),        SOC_REGISTER(SOC_UART_STATUS),
                     SOC_REGISTER(SOC_TIMER_MTIMECMP), SOC_REGISTER(SOC_TIMER_MTIME),
                     SOC_REGISTER(SOC_FINISHER_CODE),  SOC_REGISTER(SOC_ACCEL_IRQ),
                     SOC_REGISTER(SOC_TIMER_IRQ)};
    for (const auto& r : registers) {
        const auto numbers = row_numbers(doc, "docs/soc.md", r.macro);
        ASSERT_GE(numbers.size(), 1u) << r.macro;
        EXPECT_EQ(numbers[0], r.value) << r.macro;
    }
}

TEST(SocMap, TheHeadersDeviceRegistersAreTheComponents) {
    using namespace systolic::components;
    EXPECT_EQ(SOC_UART_SIZE, uart::size);
    EXPECT_EQ(SOC_UART_TX, uart::tx_offset);
    EXPECT_EQ(SOC_UART_STATUS, uart::status_offset);
    EXPECT_EQ(SOC_UART_STATUS_READY, uart::status_ready);
    EXPECT_EQ(SOC_TIMER_SIZE, timer::size);
    EXPECT_EQ(SOC_TIMER_MTIMECMP, timer::mtimecmp_offset);
    EXPECT_EQ(SOC_TIMER_MTIME, timer::mtime_offset);
    EXPECT_EQ(SOC_TIMER_HZ, timer::hz);
    EXPECT_EQ(SOC_FINISHER_SIZE, finisher::size);
    EXPECT_EQ(SOC_FINISHER_CODE, finisher::code_offset);
    EXPECT_EQ(unsigned(SOC_ACCEL_IRQ), csr::external_irq);
    EXPECT_EQ(unsigned(SOC_TIMER_IRQ), csr::timer_irq);
}

TEST(SocMap, TheLinkerScriptsRamIsTheHeaders) {
    const std::string ld = read(SOC_LD);
    EXPECT_EQ(number_after(ld, "ORIGIN = "), SOC_RAM_BASE);
    EXPECT_EQ(number_after(ld, "LENGTH = "), SOC_RAM_SIZE);
}

}  // namespace
