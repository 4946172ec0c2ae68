// The memory system's options (docs/memory.md): --buffers, --a-sram, --b-sram, --c-sram and
// --dram-bandwidth, declared once with one help text each and converted strictly, for every
// executable whose jobs run on a memory system (systolic-tb's jobs, systolic-vp's accelerator).
// Plain C++ over CLI11 (no SystemC), so that the fuzzers link it with the parsers that use it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "option_rules.h"
#include "systolic/memory_system.h"

namespace CLI {
class App;
}

namespace systolic::cli {

// The values as typed, converted once CLI11 has matched them.
struct memory_option_text {
    std::string a_sram = "inf", b_sram = "inf", c_sram = "inf", dram_bandwidth = "inf";
};

// Adds the group to `app`: --buffers straight into m.buffers, the sizes and the bandwidth as text.
void add_memory_options(CLI::App& app, memory_config& m, memory_option_text& text);
// The sizes and the bandwidth into m; a bad value is a usage_error quoting what was typed.
void convert_memory_options(const memory_option_text& text, memory_config& m);

// A scratchpad's size (--a-sram ...): parse_size's sizes, or "inf" (0: large enough for any job).
std::uint64_t parse_sram_size(const std::string& option, const std::string& text);
// --dram-bandwidth: bytes per clock cycle, a positive finite number, or "inf" (0: unlimited).
double parse_bandwidth(const std::string& option, const std::string& text);
// A size as the options spell it: "inf" for 0, else format_bytes.
std::string sram_text(std::uint64_t bytes);
// A bandwidth as the options spell it: "inf" for 0, else the bytes per cycle.
std::string bandwidth_text(double bytes_per_cycle);

// The group's rules (option_rules.h), for an executable's table: the scratchpad sizes need
// --buffers double. `Memory` reads the options' memory_config.
template <class Options, const memory_config& (*Memory)(const Options&)>
std::vector<option_rule<Options>> memory_option_rules() {
    constexpr auto double_buffered = [](const Options& o) {
        return Memory(o).buffers == buffer_mode::double_buffered;
    };
    return {
        {"--a-sram", "--buffers double", "it sizes the A scratchpad, and buffers none has none",
         double_buffered},
        {"--b-sram", "--buffers double", "it sizes the B scratchpad, and buffers none has none",
         double_buffered},
        {"--c-sram", "--buffers double", "it sizes the C scratchpad, and buffers none has none",
         double_buffered},
    };
}

}  // namespace systolic::cli
