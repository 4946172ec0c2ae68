// systolic-tb against a hostile user (issue 12): conversions that used to be undefined, inputs that
// are not regular files, jobs too large for memory, outputs that must be all-or-nothing, numbers
// out of range, and .npy files that numpy itself accepts. Each test failed before its fix.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_harness.h"
#include "npy.h"

namespace {

namespace fs = std::filesystem;
using systolic::tb::testing::slurp;

class Hardening : public systolic::tb::testing::cli_fixture {
protected:
    void write_i8(const std::string& name, std::uint64_t rows, std::uint64_t cols,
                  const std::vector<std::int8_t>& v) {
        systolic::tb::write_npy(p(name), "|i1", rows, cols, v.data(), v.size());
    }
    void write_i32(const std::string& name, std::uint64_t rows, std::uint64_t cols,
                   const std::vector<std::int32_t>& v) {
        systolic::tb::write_npy(p(name), "<i4", rows, cols, v.data(), v.size() * 4);
    }
};

// --- Defect 1: per-partial quantization with a scale that overflows int32 -------------------------

// A = [[100,100]], B = [[100],[100]], K split into two chunks of one term: each partial is 10000,
// times the scale it is far beyond int32, so it saturates to 2^31-1. With --overflow saturate the
// two saturated partials stay at 2^31-1 and the int8 code saturates to 127. Before the fix the
// conversion was undefined (x86 gave INT_MIN) and C was 0 while the scoreboard said PASS.
// End-to-end this depends on the reference GEMM computing the same rule on its own.
TEST_F(Hardening, HugeScaleSaturatesPartials) {
    write_i8("a.npy", 1, 2, {100, 100});
    write_i8("b.npy", 2, 1, {100, 100});
    for (const char* scale : {"1e6", "1e308"}) {
        SCOPED_TRACE(scale);
        const auto r = run("--dtype int8 --a a.npy --b b.npy --k-tile 1 --k-policy partials --out-dtype int8 "
                           "--quantize-partials --overflow saturate --scale " +
                           std::string(scale) + " --c-out c.npy");
        ASSERT_EQ(r.status, 0) << r.err << r.out;
        EXPECT_NE(r.out.find("C=[[127]]"), std::string::npos) << r.out;
        const auto c = systolic::tb::read_matrix(p("c.npy"), "|i1", "int8");
        EXPECT_EQ(static_cast<std::int8_t>(c.data.at(0)), 127);
    }
}

// The exact command, with the default --overflow wrap: the partials saturate to 2^31-1
// each, and their sum wraps (counted) to -2, which is C. Defined, reported, and the same every time.
TEST_F(Hardening, HugeScaleWithWrappingCombination) {
    write_i8("a.npy", 1, 2, {100, 100});
    write_i8("b.npy", 2, 1, {100, 100});
    const auto r = run("--dtype int8 --a a.npy --b b.npy --k-tile 1 --k-policy partials --out-dtype int8 "
                       "--quantize-partials --scale 1e6 --json -");
    ASSERT_EQ(r.status, 0) << r.err << r.out;
    const auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["overflow"]["wraps"], 1);
    EXPECT_NE(r.err.find("C=[[-2]]"), std::string::npos) << r.err;
}

}  // namespace
