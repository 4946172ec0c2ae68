// The memory map is declared once, in <systolic/soc_map.h>: docs/soc.md's tables and soc.ld's RAM
// say the same, and the platform's table (soc_regions.h) is built from it.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "soc_regions.h"
#include "systolic/soc_map.h"

namespace {

using systolic::soc::soc_regions;

std::string read(const char* path) {
    std::ifstream in(path);
    std::ostringstream os;
    os << in.rdbuf();
    return os.str();
}

// The line of `doc` that names `macro` in backquotes, and the backquoted numbers on it.
std::vector<std::uint64_t> row_numbers(const std::string& doc, const std::string& macro) {
    std::istringstream lines(doc);
    for (std::string line; std::getline(lines, line);) {
        if (line.rfind("| ", 0) != 0 || line.find("`" + macro + "`") == std::string::npos) continue;
        std::vector<std::uint64_t> out;
        static const std::regex number("`(0x[0-9a-fA-F]+|[0-9]+)`");
        for (auto it = std::sregex_iterator(line.begin(), line.end(), number); it != std::sregex_iterator();
             ++it)
            out.push_back(std::stoull((*it)[1].str(), nullptr, 0));
        return out;
    }
    ADD_FAILURE() << "docs/soc.md has no table row naming `" << macro << "`";
    return {};
}

TEST(SocMap, TheDocsMapTableIsTheHeaders) {
    const std::string doc = read(SOC_DOC);
    for (const auto& r : soc_regions) {
        const auto numbers = row_numbers(doc, std::string("SOC_") + r.macro + "_BASE");
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
        const auto numbers = row_numbers(doc, r.macro);
        ASSERT_GE(numbers.size(), 1u) << r.macro;
        EXPECT_EQ(numbers[0], r.value) << r.macro;
    }
}

TEST(SocMap, TheLinkerScriptsRamIsTheHeaders) {
    const std::string ld = read(SOC_LD);
    std::smatch m;
    ASSERT_TRUE(std::regex_search(ld, m, std::regex("ORIGIN = (0x[0-9a-f]+), LENGTH = (0x[0-9a-f]+)"))) << ld;
    EXPECT_EQ(std::stoull(m[1].str(), nullptr, 16), SOC_RAM_BASE);
    EXPECT_EQ(std::stoull(m[2].str(), nullptr, 16), SOC_RAM_SIZE);
}

}  // namespace
