// systolic::energy (docs/energy.md): pricing recomputed by hand, node scaling against the numbers
// of the implementations the coefficients come from, every shipped table loaded with a source for
// every value, Accelergy's ERT.yaml read (good, incomplete, bad) and action_counts.yaml read back.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>

#ifdef SYSTOLIC_HAVE_YAML_CPP
#include <yaml-cpp/yaml.h>
#endif

#include "systolic/energy/accelergy.h"
#include "systolic/energy/error.h"
#include "systolic/energy/node_scaling.h"
#include "systolic/energy/price.h"
#include "systolic/energy/table.h"

namespace {

namespace fs = std::filesystem;
using namespace systolic;
using namespace systolic::energy;
using nlohmann::json;

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const energy_error& e) {
        return e.what();
    }
    return "(no energy_error)";
}

json value(double v, unsigned bits = 0) {
    json j = {{"value", v}, {"unit", "pJ"}, {"status", "test"}, {"sources", {"first_principles"}}};
    if (bits) j["bits"] = bits;
    return j;
}

// Round numbers, so that the expected energies below are worked out by hand.
json test_table() {
    json null_value = value(0);
    null_value["value"] = nullptr;
    return {
        {"name", "test"},
        {"node_nm", value(45)},
        {"vdd_v", value(0.9)},
        {"energy_pj",
         {{"pe",
           {{"int8",
             {{"mac_random", value(1)},
              {"mac_gated", value(0.5)},
              {"idle", value(0.25)},
              {"preload", value(0.125)}}}}},
          {"register_toggle_bit", value(0.01)},
          // 1 and 2 pJ/bit up to 2 KiB; 10 and 20 pJ/bit up to 64 KiB
          {"sram",
           {{{"capacity_bytes", 65536}, {"read", value(320, 32)}, {"write", value(640, 32)}},
            {{"capacity_bytes", 2048}, {"read", value(64, 64)}, {"write", value(128, 64)}}}},
          {"dram", {{"read", value(3200, 32)}, {"write", value(6400, 32)}}},  // 100 and 200 pJ/bit
          {"link_word", null_value}}},
        {"area_um2",
         {{"mac", {{"int8", value(400)}}}, {"register_bit", value(5)}, {"sram_kib", value(1000)}}},
        {"sources", {{"first_principles", "this test"}}},
    };
}

action_counts test_counts() {
    action_counts c;
    c.pe = {10, 3, 5, 2};
    c.toggles = {7, 11, 13};
    c.a_sram = {16, 8, 16, 8};  // int8: a word is a byte
    c.b_sram = {24, 0, 24, 0};
    c.c_sram = {1, 8, 4, 32};  // int32 accumulator words
    c.dram_a_read_bytes = 40;
    c.dram_b_read_bytes = 48;
    c.dram_c_read_bytes = 12;
    c.dram_c_write_bytes = 64;
    c.link_words = 5;
    c.rows = c.cols = 4;
    c.operand_bits = 8;
    c.accumulator_bits = 32;
    c.macs_real = 12;  // one of the gated MACs is a padding token's
    return c;
}

const scratchpad_sizes test_sizes{1024, 2048, 4096};

// By hand: PEs 10 x 1 + 3 x 0.5 + 5 x 0.25 + 2 x 0.125 = 13; registers (7 + 11 + 13) x 0.01 = 0.31;
// A (1 KiB: the 2 KiB entry) 16 B x 8 x 1 + 8 B x 8 x 2 = 256; B (2 KiB) 24 x 8 x 1 = 192; C (4 KiB:
// the 64 KiB entry) 4 x 8 x 10 + 32 x 8 x 20 = 5440; DRAM (40 + 48 + 12) x 8 x 100 + 64 x 8 x 200 =
// 182400; links unpriced.
constexpr double on_chip_pj = 13 + 0.31 + 256 + 192 + 5440;
constexpr double dram_pj = 182400;
// 16 MAC units x 400 + 16 PEs x (8 + 8 + 32) bits x 5 + (1 + 2 + 4) KiB x 1000, in um^2
constexpr double area_um2 = 6400 + 3840 + 7000;

// Stillmaker-Baas energy at V, computed here from the coefficients as nodeScale.py writes them.
double rel(double a, double b, double c, double v) {
    return a * v * v + b * v + c;
}

TEST(energy, pricing_is_the_sum_of_counts_times_entries) {
    const energy_table t = parse_table(test_table(), "test.json");
    const energy_report r = price(test_counts(), t, 0, test_sizes);
    EXPECT_NEAR(r.total_pj, on_chip_pj + dram_pj, 1e-6);
    EXPECT_EQ(r.macs, 12u);
    EXPECT_NEAR(r.pj_per_mac, (on_chip_pj + dram_pj) / 12, 1e-6);
    ASSERT_EQ(r.energy.size(), std::size(component_names));
    const double by_component[] = {13, 0.31, 256, 192, 5440, dram_pj, 0};
    for (std::size_t i = 0; i < r.energy.size(); ++i)
        EXPECT_NEAR(r.energy[i].pj, by_component[i], 1e-9) << to_string(r.energy[i].which);
    EXPECT_EQ(r.energy[0].actions[1].name, "mac_gated");
    EXPECT_EQ(r.energy[0].actions[1].count, 3u);
    EXPECT_EQ(r.unpriced, std::vector<std::string>{"links.link_words"});
    EXPECT_NEAR(r.total_mm2, area_um2 * 1e-6, 1e-12);
    const json j = to_json(r);
    EXPECT_NEAR(j["energy"]["components"]["c_sram"]["actions"]["write_bytes"]["pj"].get<double>(), 5120,
                1e-9);
    EXPECT_NEAR(j["area"]["total_mm2"].get<double>(), area_um2 * 1e-6, 1e-12);
}

TEST(energy, pricing_at_another_node_scales_on_chip_energy_and_area) {
    const energy_table t = parse_table(test_table(), "test.json");
    const energy_report r = price(test_counts(), t, 7, test_sizes);
    // LP45 -> HP7 at the table's 0.9 V; DRAM is off chip and not scaled.
    const double f = rel(0.1776, -0.09097, 0.02447, 0.9) / rel(1.103, -0.362, 0.2767, 0.9);
    EXPECT_NEAR(r.energy_scale, f, 1e-12);
    EXPECT_NEAR(r.total_pj, on_chip_pj * f + dram_pj, 1e-6);
    EXPECT_NEAR(r.total_mm2, area_um2 * 0.059 * 1e-6, 1e-12);
    EXPECT_EQ(r.node_nm, 7);
}

TEST(energy, pricing_refuses_what_it_cannot_price) {
    const energy_table t = parse_table(test_table(), "test.json");
    action_counts fp32 = test_counts();
    fp32.operand_bits = fp32.accumulator_bits = 32;
    EXPECT_EQ(message_of([&] { price(fp32, t, 0, test_sizes); }),
              "test.json: prices no fp32 MAC (it has: int8)");
    EXPECT_EQ(message_of([&] {
                  price(test_counts(), t, 0, {0, 2048, 4096});
              }),
              "scratchpad A: 24 bytes accessed, but no size given to price them by");
    EXPECT_EQ(
        message_of([&] { price(test_counts(), t, 28, test_sizes); }),
        "tech node 28 nm: not a node of the Stillmaker-Baas 2017 fit (180, 130, 90, 65, 45, 32, 20, 16, "
        "14, 10 or 7 nm)");
    EXPECT_EQ(format_name(16, 32), "bf16");
    EXPECT_EQ(format_name(32, 64), "int32");
    EXPECT_EQ(message_of([] { format_name(16, 16); }),
              "no number format has 16-bit operands and 16-bit accumulators");
}

// The factors Accelergy's library plug-in gives (scaling.py run unmodified at its default 0.8 V,
// NOTES.md 5) and the paper's 45 nm area row as nodeScale.py has it.
TEST(energy, node_scaling_matches_the_sources_numbers) {
    EXPECT_NEAR(energy_factor(45, 7, 0.8), 0.0943, 5e-5);
    EXPECT_NEAR(energy_factor(45, 32, 0.8), 0.6593, 5e-5);
    EXPECT_NEAR(energy_factor(45, 20, 0.8), 0.2211, 5e-5);
    EXPECT_NEAR(energy_factor(45, 130, 0.8), 3.0681, 5e-5);
    EXPECT_NEAR(energy_factor(7, 45, 0.8) * energy_factor(45, 7, 0.8), 1, 1e-12);
    EXPECT_DOUBLE_EQ(area_factor(45, 7), 0.059);
    EXPECT_DOUBLE_EQ(area_factor(45, 32), 0.46);
    EXPECT_DOUBLE_EQ(area_factor(45, 130), 6.4);
    EXPECT_EQ(
        message_of([] { energy_factor(45, 22, 0.8); }),
        "tech node 22 nm: not a node of the Stillmaker-Baas 2017 fit (180, 130, 90, 65, 45, 32, 20, 16, "
        "14, 10 or 7 nm)");
    EXPECT_EQ(message_of([] { energy_factor(180, 45, 0.7); }),
              "tech node 180 nm at 0.7 V: outside the Stillmaker-Baas 2017 fit (no positive energy)");
}

// Every object with a "value" in a table file: a status, a unit, and sources the file names.
void expect_sourced(const json& j, const json& sources, const std::string& where, int& values) {
    if (j.is_object() && j.contains("value")) {
        ++values;
        EXPECT_TRUE(j.contains("status") && j["status"].is_string()) << where;
        EXPECT_TRUE(j.contains("unit") && j["unit"].is_string()) << where;
        ASSERT_TRUE(j.contains("sources") && j["sources"].is_array() && !j["sources"].empty()) << where;
        for (const auto& s : j["sources"])
            EXPECT_TRUE(sources.contains(s.get<std::string>())) << where << ": " << s;
        return;
    }
    if (j.is_object())
        for (const auto& [k, v] : j.items())
            expect_sourced(v, sources, where + "." + k, values);
    if (j.is_array())
        for (std::size_t i = 0; i < j.size(); ++i)
            expect_sourced(j[i], sources, where + "[" + std::to_string(i) + "]", values);
}

TEST(energy, every_shipped_table_loads_and_every_value_has_a_source) {
    EXPECT_EQ(shipped_tables(), (std::vector<std::string>{"accelergy45", "horowitz45", "tpu7"}));
    for (const auto& name : shipped_tables()) {
        const energy_table t = load_table(name);
        EXPECT_EQ(t.name, name);
        std::ifstream in(find_table(name));
        const json doc = json::parse(in);
        int values = 0;
        expect_sourced(doc, doc["sources"], name, values);
        EXPECT_GT(values, 10) << name;
        // Every table prices an int8 job at its own node and at 7 nm.
        for (double node : {0.0, 7.0}) {
            const energy_report r = price(test_counts(), t, node, test_sizes);
            EXPECT_GT(r.total_pj, 0) << name;
            EXPECT_GT(r.total_mm2, 0) << name;
        }
    }
    EXPECT_EQ(
        message_of([] { load_table("horowitz46"); })
            .rfind(
                "energy table 'horowitz46': not a shipped table (accelergy45, horowitz45, tpu7; looked in ",
                0),
        0u);
}

// accelergy45 on Timeloop's own action counts for default_problem gives Timeloop's per-component
// energies (timeloop-mapper.stats.txt at 67b75f2: MAC line 18, DRAM lines 395, 419 and 443):
// 10838016 computes, and 13824 weight, 157296 input and 401408 output 16-bit DRAM words.
TEST(energy, accelergy45_gives_timeloops_energies_for_timeloops_counts) {
    action_counts c;
    c.pe.mac_random = 10838016;
    c.dram_b_read_bytes = 13824 * 2;
    c.dram_a_read_bytes = 157296 * 2;
    c.dram_c_write_bytes = 401408 * 2;
    c.rows = c.cols = 16;
    c.operand_bits = 8;
    c.accumulator_bits = 32;
    const energy_report r = price(c, load_table("accelergy45"), 0);
    EXPECT_NEAR(r.energy[0].pj, 3413975.04, 1e-3);
    EXPECT_NEAR(r.energy[5].actions[1].pj, 1769472.00, 1e-6);   // weights
    EXPECT_NEAR(r.energy[5].actions[0].pj, 20133888.00, 1e-6);  // inputs
    EXPECT_NEAR(r.energy[5].actions[3].pj, 51380224.00, 1e-6);  // outputs
}

// tpu7's energy substitutes are horowitz45's scaled 45 -> 7 nm, as their notes say.
TEST(energy, tpu7_substitutes_are_horowitz45_scaled) {
    const energy_table h = load_table("horowitz45"), t = load_table("tpu7");
    const double f = energy_factor(45, 7, 0.9);
    for (const char* format : {"int8", "int32", "fp32", "bf16"}) {
        EXPECT_NEAR(*t.pe.at(format).mac_random.value, *h.pe.at(format).mac_random.value * f, 1e-6) << format;
        EXPECT_NEAR(*t.mac_area.at(format).value, *h.mac_area.at(format).value * 0.059, 1e-3) << format;
    }
    EXPECT_EQ(t.pe.at("int8").mac_gated.status, "not_in_source");
}

TEST(energy, a_value_without_a_source_is_refused) {
    json doc = test_table();
    doc["energy_pj"]["register_toggle_bit"]["sources"] = json::array();
    EXPECT_EQ(message_of([&] { parse_table(doc, "t.json"); }),
              "t.json: energy_pj.register_toggle_bit.sources: expected a list of at least one source id");
    doc = test_table();
    doc["area_um2"]["sram_kib"]["sources"] = {"nowhere"};
    EXPECT_EQ(
        message_of([&] { parse_table(doc, "t.json"); }),
        "t.json: area_um2.sram_kib.sources: expected ids that \"sources\" names (\"nowhere\" is not one)");
}

// docs/energy.md's table of ERT names is ert_names, row by row.
TEST(energy, the_docs_list_every_ert_name) {
    std::ifstream in(std::string(SYSTOLIC_DOCS) + "/energy.md");
    ASSERT_TRUE(in);
    std::vector<std::string> rows;
    std::string line;
    bool inside = false;
    while (std::getline(in, line)) {
        if (!inside) {
            inside = line.rfind("| ours | ERT component |", 0) == 0;
            if (inside) std::getline(in, line);  // the |---| row
            continue;
        }
        if (line.empty() || line[0] != '|') break;
        rows.push_back(line);
    }
    ASSERT_EQ(rows.size(), std::size(ert_names));
    for (std::size_t i = 0; i < rows.size(); ++i) {
        const ert_name& n = ert_names[i];
        std::string components;
        for (std::string c = n.component; !c.empty();) {
            const auto bar = c.find('|');
            components += (components.empty() ? "`" : ", `") + c.substr(0, bar) + "`";
            c = bar == std::string::npos ? "" : c.substr(bar + 1);
        }
        const std::string expected = std::string("| `") + n.ours + "` | " + components + " | `" + n.action +
                                     "` | " + (n.fallback ? std::string("`") + n.fallback + "` " : "") +
                                     "| " + (n.required ? "yes" : "no") + " |";
        EXPECT_EQ(rows[i], expected);
    }
}

#ifdef SYSTOLIC_HAVE_YAML_CPP

const std::string data = SYSTOLIC_ENERGY_TEST_DATA;

fs::path scratch(const std::string& name, const std::string& text) {
    const fs::path dir = fs::temp_directory_path() / ("energy_test_" + std::to_string(::getpid()));
    fs::create_directories(dir);
    std::ofstream(dir / name) << text;
    return dir / name;
}

TEST(energy, ert_v03_maps_onto_our_actions) {
    const std::string path = data + "/ert_v0.3_simple_output_stationary_2020.yaml";
    const energy_table t = load_table(path);
    const pe_energies& pe = t.pe.at("*");
    EXPECT_DOUBLE_EQ(*pe.mac_random.value, 2.2);
    EXPECT_DOUBLE_EQ(*pe.mac_gated.value, 0.103);
    EXPECT_DOUBLE_EQ(*pe.idle.value, 0.066);
    EXPECT_FALSE(pe.preload.given());
    EXPECT_DOUBLE_EQ(*t.register_toggle_bit.value, 0.009);  // weight_reg access
    // shared_glb, not pe_spad: the means of its 66 read and 66 write entries (PyYAML)
    ASSERT_EQ(t.sram.size(), 1u);
    EXPECT_NEAR(*t.sram[0].read.value, 37.09986363636364, 1e-9);
    EXPECT_NEAR(*t.sram[0].write.value, 37.63518181818183, 1e-9);
    EXPECT_DOUBLE_EQ(*t.dram_read.value, 512);
    EXPECT_FALSE(t.link_word.given());
    // Per word: an int8 job's A read byte is one glb read; a DRAM C word of 4 bytes one DRAM access.
    const energy_report r = price(test_counts(), t, 0, test_sizes);
    EXPECT_NEAR(r.energy[2].actions[0].pj, 16 * 37.09986363636364, 1e-9);
    EXPECT_NEAR(r.energy[5].actions[3].pj, 64 / 4 * 512.0, 1e-9);
    EXPECT_NEAR(r.energy[0].pj, 10 * 2.2 + 3 * 0.103 + 5 * 0.066, 1e-12);
    EXPECT_EQ(message_of([&] { price(test_counts(), t, 7, test_sizes); }),
              path + ": has no technology node (an ERT is priced as given), so it cannot be scaled to 7 nm");
}

TEST(energy, ert_v04_and_v02_forms_are_read) {
    const energy_table t = load_table(data + "/ert_v0.4_simple_output_stationary.yaml");
    EXPECT_DOUBLE_EQ(*t.pe.at("*").mac_random.value, 0.315);  // compute
    EXPECT_DOUBLE_EQ(*t.pe.at("*").idle.value, 0.0036);       // leak
    EXPECT_DOUBLE_EQ(*t.register_toggle_bit.value, 0.144);    // weight_reg read
    EXPECT_DOUBLE_EQ(*t.sram[0].read.value, 32.377775);       // shared_glb
    const fs::path v02 = scratch("v02.yaml", R"(ERT:
  tables:
    top.PE.MAC:
      mac_random: {arguments: null, energy: 1.207}
      mac_gated: {arguments: null, energy: 0.044}
      idle: {arguments: null, energy: 0.007}
    top.GLB:
      read:
      - {arguments: {address_delta: 0, data_delta: 0}, energy: 1.0}
      - {arguments: {address_delta: 1, data_delta: 1}, energy: 3.0}
      write: {arguments: null, energy: 2.5}
    top.DRAM:
      read: {arguments: null, energy: 100}
      write: {arguments: null, energy: 200}
)");
    const energy_table d = load_table(v02.string());
    EXPECT_DOUBLE_EQ(*d.pe.at("*").mac_random.value, 1.207);
    EXPECT_DOUBLE_EQ(*d.sram[0].read.value, 2.0);
    EXPECT_DOUBLE_EQ(*d.sram[0].write.value, 2.5);
    EXPECT_DOUBLE_EQ(*d.dram_write.value, 200);
    EXPECT_FALSE(d.register_toggle_bit.given());
}

TEST(energy, an_incomplete_or_bad_ert_is_one_line_naming_file_and_action) {
    const std::string no_dram = data + "/ert_v0.2_no_dram.yaml";
    EXPECT_EQ(message_of([&] { load_table(no_dram); }),
              no_dram + ": no component named *dram with action 'read', which prices dram.read");
    const fs::path no_gated = scratch("no_gated.yaml", R"(ERT:
  version: 0.3
  tables:
  - name: chip.PE[0..3].mac
    actions:
    - {name: mac_random, arguments: null, energy: 2.2}
    - {name: idle, arguments: null, energy: 0.1}
)");
    EXPECT_EQ(message_of([&] { load_table(no_gated.string()); }),
              no_gated.string() +
                  ": component chip.PE[0..3].mac has no action 'mac_gated', which prices pe.mac_gated");
    const fs::path not_yaml = scratch("not_yaml.yaml", "ERT: [tables: {\n");
    EXPECT_EQ(message_of([&] { load_table(not_yaml.string()); }).substr(0, not_yaml.string().size() + 11),
              not_yaml.string() + ": not YAML:");
    const fs::path no_ert = scratch("no_ert.yaml", "action_counts: {version: 0.3}\n");
    EXPECT_EQ(message_of([&] { load_table(no_ert.string()); }),
              no_ert.string() + ": no ERT tables (an Accelergy ERT.yaml has ERT: tables:)");
    const fs::path bad_energy = scratch("bad_energy.yaml", R"(ERT:
  version: 0.3
  tables:
  - name: chip.mac
    actions:
    - {name: mac_random, energy: lots}
)");
    EXPECT_EQ(message_of([&] { load_table(bad_energy.string()); }),
              bad_energy.string() + ": component chip.mac action mac_random: energy is not a number");
    EXPECT_EQ(message_of([] { load_table("/nonexistent/ERT.yaml"); }), "/nonexistent/ERT.yaml: cannot open");
}

// The written file, read back by a YAML reader: every count where Accelergy looks for it.
TEST(energy, action_counts_yaml_reads_back_with_every_count) {
    const action_counts c = test_counts();
    const YAML::Node doc = YAML::Load(action_counts_yaml(c, "chip"));
    EXPECT_EQ(doc["action_counts"]["version"].as<std::string>(), "0.3");
    std::map<std::string, std::map<std::string, std::uint64_t>> seen;
    for (const auto& component : doc["action_counts"]["local"])
        for (const auto& a : component["action_counts"]) {
            std::string key = a["name"].as<std::string>();
            if (a["arguments"]) key += "." + a["arguments"]["register"].as<std::string>();
            EXPECT_TRUE(seen[component["name"].as<std::string>()]
                            .emplace(key, a["counts"].as<std::uint64_t>())
                            .second);
        }
    const std::map<std::string, std::map<std::string, std::uint64_t>> expected = {
        {"chip.PE[0].mac", {{"mac_random", 10}, {"mac_gated", 3}, {"idle", 5 + 2}}},
        {"chip.PE[0].reg", {{"toggle.a", 7}, {"toggle.b", 11}, {"toggle.acc", 13}}},
        {"chip.a_sram", {{"read", 16}, {"write", 8}}},  // int8 words: bytes
        {"chip.b_sram", {{"read", 24}, {"write", 0}}},
        {"chip.c_sram", {{"read", 1}, {"write", 8}}},  // int32 words: bytes / 4
        {"chip.DRAM", {{"read", 40 + 48 + 12 / 4}, {"write", 64 / 4}}},
        {"chip.link", {{"transfer_random", 5}}},
    };
    EXPECT_EQ(seen, expected);
}

#else

TEST(energy, without_yaml_cpp_an_ert_is_refused_with_the_reason) {
    EXPECT_EQ(message_of([] { load_table("x.yaml"); }),
              "x.yaml: reading an ERT.yaml needs yaml-cpp (Debian's libyaml-cpp-dev), which this build did "
              "not find");
}

#endif

}  // namespace
