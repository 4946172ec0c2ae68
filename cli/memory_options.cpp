#include "memory_options.h"

#include <cmath>
#include <cstdio>

#include "cli_values.h"

namespace systolic::cli {

void convert_memory_options(const memory_option_text& text, memory_config& m) {
    m.a_sram = parse_sram_size("--a-sram", text.a_sram);
    m.b_sram = parse_sram_size("--b-sram", text.b_sram);
    m.c_sram = parse_sram_size("--c-sram", text.c_sram);
    m.dram_bandwidth = parse_bandwidth("--dram-bandwidth", text.dram_bandwidth);
}

std::uint64_t parse_sram_size(const std::string& option, const std::string& text) {
    return text == "inf" ? 0 : parse_size(option, text);
}

double parse_bandwidth(const std::string& option, const std::string& text) {
    if (text == "inf") return 0;
    const double v = parse_real(option, text);
    if (!(v > 0) || std::isinf(v))
        throw usage_error(option + " " + quoted(text) +
                          " must be a positive number of bytes per clock cycle, or inf");
    // The model's own bound (memory_system.h), which every executable's jobs are checked against;
    // refused here too so that the message names the option and the text typed.
    if (v < min_dram_bandwidth)
        throw usage_error(option + " " + quoted(text) + " is below " + bandwidth_text(min_dram_bandwidth) +
                          " bytes per clock cycle, the least the model simulates (docs/options.md)");
    return v;
}

std::string sram_text(std::uint64_t bytes) {
    return bytes == 0 ? "inf" : format_bytes(bytes);
}

std::string bandwidth_text(double bytes_per_cycle) {
    if (bytes_per_cycle == 0) return "inf";
    char text[32];
    std::snprintf(text, sizeof text, "%.4g", bytes_per_cycle);
    return text;
}

}  // namespace systolic::cli
