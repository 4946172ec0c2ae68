// libFuzzer target: systolic-tb's --scale-file and --zero-point-file readers (column_files.h) on
// arbitrary bytes, as the .npy a user gives, for C of P = 1 to 4 columns. Every input must either
// give P scales that are positive and finite, or P zero points in [-128, 127], which the
// requantization then applies to any accumulator in every rounding mode without undefined behaviour,
// or be refused with an npy_error or a usage_error on one line without control characters; anything
// else is a bug. Seeds: fuzz/corpus/column_files.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "cli_options.h"
#include "column_files.h"
#include "systolic/quantize.h"

namespace {

using namespace systolic;

void one_line(const std::string& what) {
    for (const char ch : what)  // one line, no control characters
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();
}

// Accumulators at the edges of int32, int64 and float32, and the values next to zero.
const double accumulators[] = {0.0,
                               1.0,
                               -1.0,
                               0.5,
                               -2.5,
                               double(std::numeric_limits<std::int32_t>::min()),
                               double(std::numeric_limits<std::int32_t>::max()),
                               double(std::numeric_limits<std::int64_t>::min()),
                               double(std::numeric_limits<std::int64_t>::max()),
                               double(std::numeric_limits<float>::max()),
                               -double(std::numeric_limits<float>::max()),
                               std::numeric_limits<double>::infinity(),
                               std::numeric_limits<double>::quiet_NaN()};

void requantize_all(double scale, std::int32_t zero_point) {
    for (const rounding_mode mode :
         {rounding_mode::nearest_even, rounding_mode::nearest_away, rounding_mode::toward_zero}) {
        quantization q;
        q.enabled = true;
        q.scale = scale;
        q.zero_point = zero_point;
        q.rounding = mode;
        for (const double acc : accumulators) {
            const int code = requantize(acc, q);
            if (code < -128 || code > 127) std::abort();
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    io::npy_array arr;
    try {
        arr = io::parse_npy(data, size, "fuzz.npy");
    } catch (const io::npy_error& e) {
        one_line(e.what());
        return 0;
    }
    for (std::uint64_t p = 1; p <= 4; ++p) {
        try {
            const std::vector<double> scales = tb::column_scales(arr, "fuzz.npy", p);
            if (scales.size() != p) std::abort();
            for (const double s : scales) {
                if (!(s > 0) || !std::isfinite(s)) std::abort();
                requantize_all(s, 0);
            }
        } catch (const cli::usage_error& e) {
            one_line(e.what());
        } catch (const io::npy_error& e) {
            one_line(e.what());
        }
        try {
            const std::vector<std::int32_t> zero_points = tb::column_zero_points(arr, "fuzz.npy", p);
            if (zero_points.size() != p) std::abort();
            for (const std::int32_t z : zero_points) {
                if (z < -128 || z > 127) std::abort();
                for (const double s : {1.0, 0x1p-60, 0x1p60})
                    requantize_all(s, z);
            }
        } catch (const cli::usage_error& e) {
            one_line(e.what());
        } catch (const io::npy_error& e) {
            one_line(e.what());
        }
    }
    return 0;
}
