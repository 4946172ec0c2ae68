// The plain C++ parts of waveforms and progress, without a simulation: the VCD writer, the --vcd-pes parser
// and the progress line.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "progress_bar.h"
#include "systolic/observe/file_sink.h"
#include "systolic/observe/pe_selection.h"
#include "systolic/observe/vcd_writer.h"
#include "vcd_reader.h"

namespace {

using namespace systolic::tb;
using systolic::cli::progress_line;
using namespace systolic::observe;
using systolic::tb::testing::parse_vcd;

class vcd_writer_test : public ::testing::Test {
protected:
    void SetUp() override {
        m_path = std::filesystem::temp_directory_path() /
                 ("systolic_vcd_writer_" + std::to_string(::getpid()) + "_" +
                  ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".vcd");
    }
    void TearDown() override { std::filesystem::remove(m_path); }
    int open_file() const { return ::open(m_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644); }
    std::string text() const {
        std::ifstream in(m_path);
        std::ostringstream os;
        os << in.rdbuf();
        return os.str();
    }
    std::filesystem::path m_path;
};

TEST_F(vcd_writer_test, WritesOnlyChangesAndOnlyTimesWithChanges) {
    file_sink out(open_file(), m_path.string());
    vcd_writer w(out);
    w.set_timescale("1 ns");
    const auto strobe = w.add_wire("top.ctl.strobe", 1);
    const auto value = w.add_wire("top.ctl.value", 8);
    const auto neg = w.add_wire("top.pe.acc", 64);
    const auto x = w.add_real("top.pe.x");
    const auto f = w.add_real("top.pe.f", true);
    w.end_definitions();
    w.set_time(5);
    w.set(strobe, 1);
    w.set(value, 0x1ff);  // masked to 8 bits
    w.set_time(6);
    w.set(strobe, 1);  // no change: no timestamp either
    w.set_time(7);
    w.set(neg, static_cast<std::uint64_t>(std::int64_t{-2}));
    w.set_real(x, 0.1);
    w.set_real(f, double(0.1f));  // written as the float it is, not as its double expansion
    w.set_time(3);                // earlier: clamped to 7
    w.set(strobe, 0);
    ASSERT_EQ(w.finish(), "");
    const std::string t = text();
    EXPECT_EQ(t.find("#6"), std::string::npos) << t;
    EXPECT_NE(t.find("#5\n1!\nb11111111 \"\n#7\n"), std::string::npos) << t;
    EXPECT_NE(t.find("b" + std::string(63, '1') + "0 #"), std::string::npos) << t;
    EXPECT_NE(t.find("r0.1 $"), std::string::npos) << t;
    EXPECT_NE(t.find("r0.1 %"), std::string::npos) << t;
    EXPECT_NE(t.find("$scope module ctl $end"), std::string::npos);
    const auto v = parse_vcd(t);
    EXPECT_EQ(v.timescale, "1 ns");
    EXPECT_EQ(v.rises("top.ctl.strobe"), std::vector<std::uint64_t>{5});
    EXPECT_EQ(v.at("top.ctl.strobe", 7), 0u);
    EXPECT_EQ(v.at("top.ctl.value", 5), 0xffu);
    EXPECT_EQ(static_cast<std::int64_t>(v.at("top.pe.acc", 7)), -2);
}

TEST_F(vcd_writer_test, ManyVariablesGetDistinctCodes) {
    file_sink out(open_file(), m_path.string());
    vcd_writer w(out);
    for (int i = 0; i < 10000; ++i)
        w.add_wire("top.v" + std::to_string(i), 16);
    w.end_definitions();
    ASSERT_EQ(w.finish(), "");
    const auto v = parse_vcd(text());
    std::set<std::string> codes;
    for (const auto& [name, code] : v.code_of)
        codes.insert(code);
    EXPECT_EQ(codes.size(), 10000u);
}

TEST(file_sink_test, ReportsAWriteFailure) {
    const int fd = ::open("/dev/full", O_WRONLY);
    ASSERT_GE(fd, 0);
    file_sink out(fd, "/dev/full");
    out.append(std::string(3 << 20, 'x'));
    const std::string err = out.finish();
    EXPECT_NE(err.find("/dev/full: write failed"), std::string::npos) << err;
}

TEST(pe_selection_test, ParsesRangesAndDefaults) {
    auto s = parse_pe_selection(std::nullopt, 16, 16);
    EXPECT_EQ(s.count(), 256u);
    EXPECT_EQ(parse_pe_selection(std::nullopt, 17, 17).count(), 0u);
    EXPECT_EQ(parse_pe_selection(std::string("all"), 32, 32).count(), 1024u);
    EXPECT_EQ(parse_pe_selection(std::string("none"), 2, 2).count(), 0u);
    s = parse_pe_selection(std::string("1:2,0:3"), 4, 4);
    EXPECT_EQ(s.count(), 8u);
    EXPECT_TRUE(s.contains(2, 3));
    EXPECT_FALSE(s.contains(0, 0));
    s = parse_pe_selection(std::string("3,1"), 4, 4);
    EXPECT_EQ(s.count(), 1u);
    EXPECT_TRUE(s.contains(3, 1));
    EXPECT_THROW(parse_pe_selection(std::string("0:4,0"), 4, 4), std::invalid_argument);
    EXPECT_THROW(parse_pe_selection(std::string("2:1,0"), 4, 4), std::invalid_argument);
    EXPECT_THROW(parse_pe_selection(std::string("-1,0"), 4, 4), std::invalid_argument);
    EXPECT_THROW(parse_pe_selection(std::string("0,0,0"), 4, 4), std::invalid_argument);
    EXPECT_THROW(parse_pe_selection(std::string(""), 4, 4), std::invalid_argument);
    // Rectangular: 3 rows of 5 PEs; row indices stop at 2, column indices at 4.
    EXPECT_EQ(parse_pe_selection(std::nullopt, 3, 5).count(), 15u);
    EXPECT_EQ(parse_pe_selection(std::nullopt, 16, 17).count(), 0u);
    EXPECT_EQ(parse_pe_selection(std::string("all"), 3, 5).count(), 15u);
    EXPECT_TRUE(parse_pe_selection(std::string("2,4"), 3, 5).contains(2, 4));
    EXPECT_THROW(parse_pe_selection(std::string("3,0"), 3, 5), std::invalid_argument);
    EXPECT_THROW(parse_pe_selection(std::string("0,5"), 3, 5), std::invalid_argument);
}

TEST(progress_line_test, SaysTilesTimeLeftAndRate) {
    EXPECT_EQ(progress_line(1, 4, 250, 1000, 250.0, 3.0),
              "[#####...............] 1/4 tiles  3 s left  250 edges/s");
    EXPECT_EQ(progress_line(4, 4, 2000000, 2000000, 4e6, std::nullopt),
              "[####################] 4/4 tiles  done  4.0 M edges/s");
    EXPECT_EQ(progress_line(0, 9, 0, 100, std::nullopt, std::nullopt), "[....................] 0/9 tiles");
    EXPECT_EQ(progress_line(1, 2, 1000, 121000, 1000.0, 120.0),
              "[....................] 1/2 tiles  2 min 00 s left  1.0 k edges/s");
}

// A narrow terminal: the bar shrinks, then goes, before the figures are cut, the rate first.
TEST(progress_line_test, FitsTheColumnsItIsGiven) {
    const std::string fits = "[#####....] 2/4 tiles  2 s left  250 edges/s";
    EXPECT_EQ(fits.size(), 44u);
    EXPECT_EQ(progress_line(2, 4, 500, 1000, 250.0, 2.0, 45), fits);
    EXPECT_EQ(progress_line(2, 4, 500, 1000, 250.0, 2.0, 36), "2/4 tiles  2 s left  250 edges/s");
    EXPECT_EQ(progress_line(2, 4, 500, 1000, 250.0, 2.0, 20), "2/4 tiles  2 s left");
}

}  // namespace
