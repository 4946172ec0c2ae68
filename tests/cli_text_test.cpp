// The plain pieces behind what the executables print: times in their own unit.
#include <gtest/gtest.h>

#include <string>

#include "time_text.h"

namespace {

using namespace systolic::tb;

TEST(format_time_test, ThreeSignificantDigitsInTheUnitThatSuits) {
    EXPECT_EQ(format_time_ps(0), "0 s");
    EXPECT_EQ(format_time_ps(1), "1.00 ps");
    EXPECT_EQ(format_time_ps(4000), "4.00 ns");
    EXPECT_EQ(format_time_ps(20000), "20.0 ns");
    EXPECT_EQ(format_time_ps(264000), "264 ns");
    EXPECT_EQ(format_time_ps(450000), "450 ns");
    EXPECT_EQ(format_time_ps(1200000), "1.20 us");
    EXPECT_EQ(format_time_ps(3e6), "3.00 us");
    EXPECT_EQ(format_time_ps(1392640e3), "1.39 ms");
    EXPECT_EQ(format_time_ps(61463e3), "61.5 us");
    EXPECT_EQ(format_time_ps(2.5e12), "2.50 s");
    EXPECT_EQ(format_time_ps(4000e12), "4000 s");  // no unit above seconds
}

TEST(format_time_test, AValueThatRoundsUpTakesTheNextUnit) {
    EXPECT_EQ(format_time_ps(9996), "10.0 ns");
    EXPECT_EQ(format_time_ps(99960), "100 ns");
    EXPECT_EQ(format_time_ps(999400), "999 ns");
    EXPECT_EQ(format_time_ps(999700), "1.00 us");
    EXPECT_EQ(format_time_ps(999.99999), "1.00 ns");  // 1 ns as a double from sc_time::to_seconds
}

}  // namespace
