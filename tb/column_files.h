// systolic-tb's --scale-file and --zero-point-file: per-column (per output channel) requantization
// vectors, 1-D .npy files of P entries (docs/formats.md), each entry checked by the rules --scale
// and --zero-point follow. Bad files are a usage_error, one line naming the option and the file.
// Plain C++: the fuzzers link it alone (systolic_tb_cli).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "io/npy.h"

namespace systolic::tb {

// --scale-file's array (float64 or float32) as P positive finite scales; `path` names it in messages.
std::vector<double> column_scales(const io::npy_array& arr, const std::string& path, std::uint64_t p);
// --zero-point-file's array (int32 or int64) as P zero points in [-128, 127].
std::vector<std::int32_t> column_zero_points(const io::npy_array& arr, const std::string& path,
                                             std::uint64_t p);

// The same, read from the files (as every input is: io::read_npy).
std::vector<double> read_column_scales(const std::string& path, std::uint64_t p);
std::vector<std::int32_t> read_column_zero_points(const std::string& path, std::uint64_t p);

}  // namespace systolic::tb
