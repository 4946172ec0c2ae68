// systolic::io on its own, linked without SystemC or the testbench: the rules its executables rely
// on, driven directly (tests/hostile_io_cli_test.cpp drives them through every executable).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "io/input_file.h"
#include "io/job_json.h"
#include "io/output_set.h"
#include "io/text.h"

namespace {

namespace fs = std::filesystem;
using systolic::io::io_error;

class io_test : public ::testing::Test {
protected:
    void SetUp() override {
        m_dir = fs::temp_directory_path() / ("systolic_io_test_" + std::to_string(::getpid()));
        fs::remove_all(m_dir);
        fs::create_directories(m_dir);
    }
    void TearDown() override { fs::remove_all(m_dir); }
    std::string p(const std::string& name) const { return (m_dir / name).string(); }
    std::size_t entries() const {
        return std::size_t(std::distance(fs::directory_iterator(m_dir), fs::directory_iterator()));
    }
    fs::path m_dir;
};

TEST_F(io_test, PrintableEscapesControlCharactersAndNul) {
    EXPECT_EQ(systolic::io::printable(std::string("a\0b\nc\x7f", 6)), "a\\x00b\\x0ac\\x7f");
    EXPECT_EQ(systolic::io::printable("plain text"), "plain text");
}

TEST_F(io_test, AnUncommittedSetLeavesNothing) {
    {
        systolic::io::output_set files;
        files.add({"--x", p("x")});
        files.set(p("x"), {"data"});
        files.prepare();
        EXPECT_EQ(entries(), 1u);  // the temporary, written
    }
    EXPECT_EQ(entries(), 0u);
}

TEST_F(io_test, CommitRenamesEverythingAndKeepsWhatWasNotWritten) {
    std::ofstream(p("kept")) << "old";
    systolic::io::output_set files;
    files.add({"--a", p("a")});
    files.add({"--kept", p("kept")});
    files.set(p("a"), {"new ", "bytes"});
    files.prepare();
    files.commit();
    std::ifstream a(p("a")), kept(p("kept"));
    std::string text;
    std::getline(a, text);
    EXPECT_EQ(text, "new bytes");
    std::getline(kept, text);
    EXPECT_EQ(text, "old");
    EXPECT_EQ(entries(), 2u);
}

TEST_F(io_test, SymlinksAndInputsAreRefused) {
    std::ofstream(p("in")) << "input";
    fs::create_symlink(p("in"), p("link"));
    systolic::io::output_set files;
    files.add_input({"--in", p("in")});
    EXPECT_THROW(files.add({"--out", p("link")}), io_error);
    try {
        systolic::io::write_file({"", p("link")}, {"x"});
        ADD_FAILURE() << "wrote through a symlink";
    } catch (const io_error& e) {
        EXPECT_EQ(std::string(e.what()),
                  p("link") + ": is a symbolic link; refusing to replace it (name the file itself)");
    }
    EXPECT_TRUE(fs::is_symlink(p("link")));
}

TEST_F(io_test, ProcFilesAreReadToTheirEndOrRefusedWhereTheSizeMatters) {
    EXPECT_NE(systolic::io::read_text_file("/proc/self/status").find("Name:"), std::string::npos);
    systolic::io::input_file f("/proc/self/status");
    EXPECT_THROW(f.known_size(), io_error);
    std::ofstream(p("big")) << std::string(2000, 'x');
    EXPECT_THROW(systolic::io::read_text_file(p("big"), 1000), io_error);
}

// The counters every job has, each its own value.
systolic::io::job_counters shared_counters() {
    systolic::io::job_counters c;
    c.m = 3;
    c.k = 5;
    c.p = 7;
    c.advance_edges = 20;
    c.macs_padded = 48;
    c.macs_real = 27;
    return c;
}

// The counters every report shares, under their one set of keys; what a report lacks stays out.
TEST(JobJson, WritesTheSharedKeysAndOnlyTheOptionalOnesGiven) {
    systolic::io::job_counters c = shared_counters();
    EXPECT_EQ(
        systolic::io::job_json(c),
        (nlohmann::json{
            {"m", 3}, {"k", 5}, {"p", 7}, {"advance_edges", 20}, {"macs_padded", 48}, {"macs_real", 27}}));
    c.tiles = 4;
    c.masked_outputs = 6;
    c.scoreboard.emplace();
    c.scoreboard->checked = 21;
    c.scoreboard->mismatches = 1;
    c.scoreboard->errors = {"C[0][0]: expected 1, got 2"};
    const auto j = systolic::io::job_json(c);
    EXPECT_EQ(j.size(), 9u);
    EXPECT_EQ(j["tiles"], 4);
    EXPECT_EQ(j["masked_outputs"], 6);
    EXPECT_FALSE(j.contains("real_outputs"));
    EXPECT_EQ(
        j["scoreboard"],
        (nlohmann::json{{"checked", 21}, {"mismatches", 1}, {"errors", {"C[0][0]: expected 1, got 2"}}}));
}

// The job's keys are declared once (io::job_counter_fields): the reader derived from them reads back
// what the writer wrote, every key set to its own value, so that a key swapped, dropped or misspelt
// on either side shows.
TEST(JobJson, TheReaderReadsBackWhatTheWriterWroteKeyForKey) {
    systolic::io::job_counters c = shared_counters();
    c.tiles = 4;
    c.real_outputs = 11;
    c.masked_outputs = 6;
    c.scoreboard = systolic::io::scoreboard_counts{
        19,    2,   {"C[0][0]: expected 1, got 2", "C[0][1]: expected 3, got 4"}, 23, 8, 9, 10, 12, 13,
        false, true};
    const nlohmann::json j = systolic::io::job_json(c);
    EXPECT_EQ(j.size(), 10u);
    EXPECT_EQ(j.at("scoreboard").size(), 11u);
    // Every number in the record differs from every other, and from its default.
    std::set<std::uint64_t> numbers;
    std::size_t leaves = 0;
    for (const auto* o : {&j, &j.at("scoreboard")})
        for (const auto& [key, v] : o->items())
            if (v.is_number()) {
                ++leaves;
                numbers.insert(v.get<std::uint64_t>());
            }
    EXPECT_EQ(numbers.size(), leaves);
    EXPECT_EQ(numbers.count(0), 0u);
    systolic::io::job_counters back;
    systolic::io::read_fields<std::runtime_error>(
        j, "r.json", back, [](auto& v, auto& r) { systolic::io::job_counter_fields(v, r); });
    EXPECT_EQ(systolic::io::job_json(back), j);
    // The reader checks what it reads, naming the source and the field.
    nlohmann::json bad = j;
    bad["scoreboard"]["mismatches"] = 20;
    try {
        systolic::io::read_fields<std::runtime_error>(
            bad, "r.json", back, [](auto& v, auto& r) { systolic::io::job_counter_fields(v, r); });
        ADD_FAILURE() << "accepted";
    } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "r.json: field 'mismatches': 20 is outside [0, 19]");
    }
}

// An enum field and a list of them, each written and read as its name in its table (a names.h
// table: entries with `value` and `name`); a name not in the table is refused, naming the field.
enum class colour { red, green, blue };
struct colour_name {
    colour value;
    const char* name;
};
constexpr colour_name colour_names[] = {
    {colour::red, "red"}, {colour::green, "green"}, {colour::blue, "blue"}};
struct palette {
    colour first = colour::red;
    std::vector<colour> all;
};
template <class V, class P>
void palette_fields(V& v, P& p) {
    v("first", p.first, systolic::io::named{colour_names});
    v("all", p.all, systolic::io::named{colour_names});
}

TEST(JsonFields, EnumsAndListsOfEnumsAreWrittenAndReadAsTheirNames) {
    const palette p{colour::blue, {colour::green, colour::red, colour::green}};
    const nlohmann::json j = systolic::io::write_fields(p, [](auto& v, auto& r) { palette_fields(v, r); });
    EXPECT_EQ(j, (nlohmann::json{{"first", "blue"}, {"all", {"green", "red", "green"}}}));
    palette back;
    systolic::io::read_fields<std::runtime_error>(j, "p.json", back,
                                                  [](auto& v, auto& r) { palette_fields(v, r); });
    EXPECT_EQ(back.first, colour::blue);
    EXPECT_EQ(back.all, p.all);
    const std::pair<nlohmann::json, std::string> bad[] = {
        {nlohmann::json::array({"green", "mauve"}),
         "p.json: field 'all': 'mauve' is not one of red, green, blue"},
        {nlohmann::json::array({"green", 1}), "p.json: field 'all': expected a string, got 1"},
        {"green", "p.json: field 'all': expected a list, got \"green\""},
    };
    for (const auto& [all, says] : bad) {
        nlohmann::json k = j;
        k["all"] = all;
        try {
            systolic::io::read_fields<std::runtime_error>(k, "p.json", back,
                                                          [](auto& v, auto& r) { palette_fields(v, r); });
            ADD_FAILURE() << "accepted " << all;
        } catch (const std::runtime_error& e) {
            EXPECT_EQ(std::string(e.what()), says);
        }
    }
}

}  // namespace
