// --scale-file and --zero-point-file (column_files.h).
#include "column_files.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "cli_options.h"

namespace systolic::tb {

namespace {

// A value as a message quotes it: enough digits to find it in the file.
std::string number_text(double v) {
    std::ostringstream os;
    os.precision(17);
    os << v;
    return os.str();
}

// A 1-D .npy of exactly `p` entries whose dtype is one of `wanted` (descrs without the byte order,
// e.g. "f8"), as doubles; `what` names the option and the entries in messages.
std::vector<double> column_values(const io::npy_array& arr, const char* option, const std::string& path,
                                  std::uint64_t p, const std::vector<std::string>& wanted,
                                  const char* dtypes) {
    std::string d = arr.descr;
    if (!d.empty() && (d[0] == '<' || d[0] == '=' || d[0] == '|')) d.erase(0, 1);
    if (std::find(wanted.begin(), wanted.end(), d) == wanted.end())
        throw usage_error(std::string(option) + " " + one_line(path) + ": dtype '" + one_line(arr.descr) +
                          "' is not supported, expected " + dtypes);
    if (arr.shape.size() != 1 || arr.shape[0] != p) {
        std::string shape;
        for (std::size_t i = 0; i < arr.shape.size(); ++i)
            shape += (i ? "x" : "") + std::to_string(arr.shape[i]);
        throw usage_error(std::string(option) + " " + one_line(path) + " has shape (" + shape +
                          ") but C has P = " + std::to_string(p) + " columns: it needs a 1-D array of " +
                          std::to_string(p));
    }
    std::vector<double> out;
    if (d == "f8") out = io::as_vector<double>(arr);
    if (d == "f4")
        for (float f : io::as_vector<float>(arr))
            out.push_back(f);
    if (d == "i4")
        for (std::int32_t v : io::as_vector<std::int32_t>(arr))
            out.push_back(v);
    if (d == "i8")
        for (std::int64_t v : io::as_vector<std::int64_t>(arr))
            out.push_back(double(v));  // checked against [-128, 127] next, so exact where it matters
    return out;
}

}  // namespace

std::vector<double> column_scales(const io::npy_array& arr, const std::string& path, std::uint64_t p) {
    std::vector<double> scales =
        column_values(arr, "--scale-file", path, p, {"f8", "f4"}, "float64 or float32");
    for (std::uint64_t j = 0; j < p; ++j)
        if (!(scales[j] > 0) || !std::isfinite(scales[j]))
            throw usage_error("--scale-file " + one_line(path) + ": scale " + std::to_string(j) + " is " +
                              number_text(scales[j]) + ", not a positive finite number");
    return scales;
}

std::vector<std::int32_t> column_zero_points(const io::npy_array& arr, const std::string& path,
                                             std::uint64_t p) {
    const auto zps = column_values(arr, "--zero-point-file", path, p, {"i4", "i8"}, "int32 or int64");
    std::vector<std::int32_t> out;
    for (std::uint64_t j = 0; j < p; ++j) {
        if (zps[j] < -128 || zps[j] > 127)
            throw usage_error("--zero-point-file " + one_line(path) + ": zero point " + std::to_string(j) +
                              " is " + number_text(zps[j]) + ", not in [-128, 127]");
        out.push_back(static_cast<std::int32_t>(zps[j]));
    }
    return out;
}

std::vector<double> read_column_scales(const std::string& path, std::uint64_t p) {
    return column_scales(io::read_npy(path), path, p);
}

std::vector<std::int32_t> read_column_zero_points(const std::string& path, std::uint64_t p) {
    return column_zero_points(io::read_npy(path), path, p);
}

}  // namespace systolic::tb
