// The names of the model's enums: every value reads back from its name, a name not in the table
// is refused, the register map's codes name the same values, and the docs' tables list the names.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "systolic/accelerator_map.h"
#include "systolic/dma_port.h"
#include "systolic/job_names.h"
#include "systolic/log.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tile_plan.h"
#include "systolic/tiling.h"
#include "systolic/verify/fault_names.h"

namespace {

using namespace systolic;

template <class Enum, std::size_t N, class Parse>
void expect_round_trip(const name_table<Enum, N>& table, Parse parse) {
    for (const auto& e : table) {
        EXPECT_STREQ(to_string(e.value), e.name);
        EXPECT_EQ(parse(e.name), e.value) << e.name;
        EXPECT_EQ(parse_name(table, e.name), e.value) << e.name;
        EXPECT_NE(std::string(e.meaning), "") << e.name;
    }
    EXPECT_EQ(names(table).size(), N);
}

TEST(Names, EveryValueReadsBackFromItsName) {
    expect_round_trip(tile_order_names, parse_tile_order);
    expect_round_trip(k_policy_names, parse_k_policy);
    expect_round_trip(engine_kind_names, parse_engine_kind);
    expect_round_trip(job_status_names, parse_job_status);
    expect_round_trip(overflow_mode_names, parse_overflow_mode);
    expect_round_trip(rounding_mode_names, parse_rounding_mode);
    expect_round_trip(dtype_names, parse_dtype);
    expect_round_trip(verify::fault_names, verify::parse_fault);
    expect_round_trip(output_dtype_names,
                      [](std::string_view s) { return parse_name(output_dtype_names, s); });
    expect_round_trip(step_kind_names, [](std::string_view s) { return parse_name(step_kind_names, s); });
    expect_round_trip(buffer_mode_names, parse_buffer_mode);
    expect_round_trip(dataflow_kind_names, parse_dataflow_kind);
    expect_round_trip(dma_stream_names, [](std::string_view s) { return parse_name(dma_stream_names, s); });
}

TEST(Names, ANameNotInTheTableIsRefused) {
    EXPECT_EQ(parse_tile_order("diagonal"), std::nullopt);
    EXPECT_EQ(parse_tile_order("Row"), std::nullopt);  // names are case-sensitive
    EXPECT_EQ(parse_tile_order("row "), std::nullopt);
    EXPECT_EQ(parse_tile_order(""), std::nullopt);
    EXPECT_EQ(parse_dtype("int4"), std::nullopt);
    EXPECT_EQ(parse_dtype("float32"), std::nullopt);
    EXPECT_EQ(parse_rounding_mode("nearest_even"), std::nullopt);
    EXPECT_EQ(verify::parse_fault("nothing"), std::nullopt);
    EXPECT_EQ(parse_job_status("?"), std::nullopt);
    EXPECT_STREQ(to_string(static_cast<tile_order>(99)), "?");
}

TEST(Names, MessagesListTheNamesInTableOrder) {
    EXPECT_EQ(names_text(dtype_names), "int8, int32, fp32 or bf16");
    EXPECT_EQ(names_text(engine_kind_names), "cycle or functional");
    EXPECT_EQ(names(tile_order_names), (std::vector<std::string>{"row", "col", "snake", "random"}));
}

TEST(Names, EachDtypeDispatchesToTheFormatOfThatName) {
    for (const auto& e : dtype_names) {
        EXPECT_STREQ(with_format(e.value, [](auto format) { return decltype(format)::name; }), e.name);
        EXPECT_EQ(with_format(e.value, [](auto format) { return dtype_of<decltype(format)>; }), e.value);
    }
    EXPECT_THROW(with_format(static_cast<dtype>(4), [](auto) { return 0; }), std::invalid_argument);
}

// The registers' codes and the enums are declared apart (a code is an interface, a name is
// text); each code maps to the enum value of the same name.
TEST(Names, RegisterCodesNameTheModelsValues) {
    EXPECT_EQ(regmap::from_code(regmap::dtype_values, dtype_names, 0), dtype::int8);
    EXPECT_EQ(regmap::from_code(regmap::dtype_values, dtype_names, 3), dtype::bf16);
    EXPECT_EQ(regmap::from_code(regmap::dtype_values, dtype_names, 4), std::nullopt);
    EXPECT_EQ(regmap::from_code(regmap::order_values, tile_order_names, 2), tile_order::serpentine);
    // The register has no random order: the table's last value has no code.
    EXPECT_EQ(regmap::from_code(regmap::order_values, tile_order_names, 3), std::nullopt);
    EXPECT_EQ(regmap::from_code(regmap::rounding_values, rounding_mode_names, 2), rounding_mode::toward_zero);
    EXPECT_EQ(regmap::from_code(regmap::out_dtype_values, output_dtype_names, 1), output_dtype::int8);
    EXPECT_EQ(regmap::from_code(regmap::k_policy_values, k_policy_names, 1), k_policy::partials);
    EXPECT_EQ(regmap::from_code(regmap::overflow_values, overflow_mode_names, 1), overflow_mode::saturate);
    EXPECT_EQ(regmap::from_code(regmap::overflow_values, overflow_mode_names, 0xffffffffu), std::nullopt);
}

// The first backquoted word of each row's first cell, of the table whose header's first cell is
// `header` in a docs page.
std::vector<std::string> docs_table_names(const std::string& page, const std::string& header) {
    std::ifstream in(std::string(SYSTOLIC_DOCS) + "/" + page);
    EXPECT_TRUE(in) << page;
    std::vector<std::string> out;
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (!inside) {
            inside = line.rfind("| `" + header + "` |", 0) == 0;
            if (inside) std::getline(in, line);  // the |---| row
            continue;
        }
        if (line.empty() || line[0] != '|') break;
        const auto b = line.find('`'), e = line.find('`', b + 1);
        if (b == std::string::npos || e == std::string::npos || e > line.find('|', 1)) {
            ADD_FAILURE() << page << ": a row of the " << header << " table names no value: " << line;
            continue;
        }
        out.push_back(line.substr(b + 1, e - b - 1));
    }
    EXPECT_FALSE(out.empty()) << page << " has no table headed `" << header << "`";
    return out;
}

TEST(Names, TheDocsTablesListEveryName) {
    EXPECT_EQ(docs_table_names("formats.md", "--dtype"), names(dtype_names));
    EXPECT_EQ(docs_table_names("formats.md", "--rounding"), names(rounding_mode_names));
    EXPECT_EQ(docs_table_names("dataflows.md", "--dataflow"), names(dataflow_kind_names));
}

// Every --log-level reads the table in the log module: each name sets spdlog's level of the same
// meaning (spdlog spells warn "warning"), nothing else is a level, and the help lists them in order.
TEST(Names, LogLevelsAreSpdlogsLevelsInOrder) {
    for (const auto& e : log_level_names) {
        EXPECT_EQ(parse_log_level(e.name), e.value) << e.name;
        const auto sv = spdlog::level::to_string_view(e.value);
        const std::string spdlog_name(sv.data(), sv.size());
        EXPECT_EQ(spdlog_name, e.value == spdlog::level::warn ? "warning" : e.name);
    }
    EXPECT_EQ(std::size(log_level_names), std::size_t(spdlog::level::n_levels));
    EXPECT_EQ(parse_log_level("warning"), std::nullopt);
    EXPECT_EQ(parse_log_level("loud"), std::nullopt);
    EXPECT_EQ(parse_log_level(""), std::nullopt);
    EXPECT_EQ(log_level_help(), "trace, debug, info, warn (default), error, critical, off");
    EXPECT_EQ(names_text(log_level_names), "trace, debug, info, warn, error, critical or off");
}

}  // namespace
