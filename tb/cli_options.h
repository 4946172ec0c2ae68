// systolic-tb's command line as plain C++: the options and their parsing with CLI11. Numbers are
// read as text and converted with the command lines' strict conversions (cli/cli_values.h), so that
// a value out of range is an error quoting what the user typed, never a silently clamped or wrapped
// value. No SystemC, so the parser can be fuzzed on its own (fuzz/cli_fuzz.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "cli_values.h"
#include "output_options.h"
#include "systolic/job_names.h"
#include "systolic/memory_system.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tiling.h"
#include "systolic/verify/fault_names.h"

namespace systolic::tb {

// The strict conversions, which tb's code names unqualified (cli_values.h).
using cli::array_shape_text;
using cli::format_bytes;
using cli::one_line;
using cli::parse_array_shape;
using cli::parse_int;
using cli::parse_real;
using cli::parse_size;
using cli::parse_uint;
using cli::usage_error;

struct options {
    // --array N (N x N) or RxC: R rows of C PEs. Range-checked later, with its own message.
    std::int64_t array_rows = 2, array_cols = 2;
    std::optional<std::int64_t> m, k, p;
    std::string a_path, b_path;
    std::optional<std::string> c_out, json;  // set (possibly to "") when the option was given
    std::uint64_t seed = 1;
    tile_order order = tile_order::row_major;
    bool packed = false;
    systolic::dtype dtype = systolic::dtype::int32;
    std::optional<std::int64_t> k_tile;
    systolic::k_policy k_policy = systolic::k_policy::preserve;
    overflow_mode overflow = overflow_mode::wrap;
    output_dtype out_dtype = output_dtype::acc;  // --out-dtype acc, int8 or the accumulators' dtype
    std::optional<double> scale;
    std::optional<std::int64_t> zero_point;
    // --scale-file / --zero-point-file: per-column (per output channel) requantization, 1-D .npy
    // files of P scales (float64 or float32) and P zero points (int32 or int64).
    std::string scale_file, zero_point_file;
    std::optional<rounding_mode> rounding;
    bool quantize_partials = false;
    verify::fault inject = verify::fault::none;
    engine_kind engine = engine_kind::cycle;
    dataflow_kind dataflow = dataflow_kind::os;
    // --vcd, --trace, --gtkw and --log-level, as every executable declares them.
    cli::output_options outputs;
    std::optional<std::string> vcd_pes;       // the PEs the waveform traces
    std::optional<bool> progress;             // unset: on when stderr is a terminal
    std::optional<std::uint64_t> max_memory;  // bytes; unset: the default share of physical memory
    // --fabric RxC[xD]: R x C x D arrays of --array N (docs/fabric.md); 1x1x1 is one array.
    std::int64_t fabric_rows = 1, fabric_cols = 1, fabric_depth = 1;
    std::int64_t link_latency = 1;  // --link-latency L, in edges
    std::int64_t threads = 1;       // --threads T, that step a fabric's arrays
    // --buffers, --a-sram, --b-sram, --c-sram, --dram-bandwidth (docs/memory.md); the default is
    // the model without scratchpads or a bandwidth limit.
    memory_config memory;
    bool fabric() const { return fabric_rows * fabric_cols * fabric_depth != 1; }
};

// What parse_command_line decided: run with the options, or stop with an exit status and a text
// for stdout (--help) or stderr (one line, an error).
struct parse_result {
    bool run = true;
    int exit_status = 0;
    std::string out;
    std::string err;
};

parse_result parse_command_line(int argc, const char* const* argv, options& o);

// A scratchpad's size (--a-sram ...): parse_size's sizes, or "inf" (0: large enough for any job).
std::uint64_t parse_sram_size(const std::string& option, const std::string& text);
// --dram-bandwidth: bytes per clock cycle, a positive finite number, or "inf" (0: unlimited).
double parse_bandwidth(const std::string& option, const std::string& text);
// A size as the options spell it: "inf" for 0, else format_bytes.
std::string sram_text(std::uint64_t bytes);
// A bandwidth as the options spell it: "inf" for 0, else the bytes per cycle.
std::string bandwidth_text(double bytes_per_cycle);

}  // namespace systolic::tb
