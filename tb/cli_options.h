// systolic-tb's command line as plain C++: the options and their parsing with CLI11. Numbers are
// read as text and converted with the command lines' strict conversions (cli/cli_values.h), so that
// a value out of range is an error quoting what the user typed, never a silently clamped or wrapped
// value. No SystemC, so the parser can be fuzzed on its own (fuzz/cli_fuzz.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli_values.h"
#include "energy_options.h"
#include "memory_options.h"
#include "output_options.h"
#include "systolic/job.h"
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
    std::uint64_t seed = 1;                  // the random A and B; also run.order_seed
    // How the job runs (--order, --k-tile, --k-policy, --overflow, --out-dtype int8 and its
    // quantization options, --engine, --dataflow, the memory options), as parsing fills it: checked
    // there apart from the rules that need the job's shape (check_run_options).
    run_options run;
    bool packed = false;
    systolic::dtype dtype = systolic::dtype::int32;
    // --scale-file / --zero-point-file: per-column (per output channel) requantization, 1-D .npy
    // files of P scales (float64 or float32) and P zero points (int32 or int64); run.quant.columns
    // says that the job has them.
    std::string scale_file, zero_point_file;
    verify::fault inject = verify::fault::none;
    // --vcd, --trace, --gtkw and --log-level, as every executable declares them.
    cli::output_options outputs;
    // --energy, --tech-node and --action-counts (docs/energy.md); counting them sets run.count_actions.
    cli::energy_options energy;
    std::optional<std::string> vcd_pes;       // the PEs the waveform traces
    std::optional<bool> progress;             // unset: on when stderr is a terminal
    std::optional<std::uint64_t> max_memory;  // bytes; unset: the default share of physical memory
    // --fabric RxC[xD]: R x C x D arrays of --array N (docs/fabric.md); 1x1x1 is one array.
    std::int64_t fabric_rows = 1, fabric_cols = 1, fabric_depth = 1;
    std::int64_t link_latency = 1;  // --link-latency L, in edges
    std::int64_t threads = 1;       // --threads T, that step a fabric's arrays
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

// One of systolic-tb's options, as the parser's own table declares it (for the Python package's
// systolic.job_options: the names, which are flags, what each value is, its choices and default,
// without a second list).
struct option_info {
    std::string flag;  // "--k-tile"
    std::string type;  // its value's name as --help gives it: "INT", "N|RxC", ...; empty: a flag
    std::vector<std::string> choices;
    std::string default_value;   // as --help shows it; empty: none
    bool existing_file = false;  // a file the job reads (CLI11's ExistingFile)
    std::string help;
};
// Every option, --help included, in --help's order.
std::vector<option_info> option_table();

// The memory options' conversions and texts, shared with every executable (cli/memory_options.h).
using cli::bandwidth_text;
using cli::parse_bandwidth;
using cli::parse_sram_size;
using cli::sram_text;

}  // namespace systolic::tb
