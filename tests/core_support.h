// What the plain C++ tests of the model core (core_test.cpp) and of the checkers (checker_test.cpp)
// share: short names, limits, and the byte and text helpers their expectations are written with.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <future>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <string>
#include <tlm>
#include <tuple>
#include <utility>
#include <vector>

#include "systolic/array_core.h"
#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/matrix_layout.h"
#include "systolic/memory_core.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tiling.h"
#include "systolic/token.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"
#include "systolic/verify/scoreboard.h"

namespace core_support {

using systolic::array_core;
using systolic::bf16;
using systolic::bf16_format;
using systolic::count_job;
using systolic::fp32_format;
using systolic::int32_format;
using systolic::int8_format;
using systolic::k_policy;
using systolic::matrix_layout;
using systolic::memory_core;
using systolic::overflow_mode;
using systolic::plan_tiles;
using systolic::problem_shape;
using systolic::quantization;
using systolic::rounding_mode;
using systolic::tile;
using systolic::tile_order;
using systolic::token;

using core = array_core<int32_format>;
using tok = core::token_type;
using i8 = std::int8_t;
using i32 = std::int32_t;
using i64 = std::int64_t;
using u8 = std::uint8_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

// One advance edge of c from token objects: R west and C north, as values and valid bits.
template <class Format>
void advance_tokens(array_core<Format>& c, const token<typename Format::operand_type>* west,
                    const token<typename Format::operand_type>* north) {
    const std::size_t rows = c.rows(), cols = c.cols();
    std::vector<typename Format::operand_type> value(rows + cols);
    std::vector<std::uint8_t> valid(rows + cols);
    for (std::size_t i = 0; i < rows; ++i) {
        value[i] = west[i].value;
        valid[i] = west[i].valid;
    }
    for (std::size_t j = 0; j < cols; ++j) {
        value[rows + j] = north[j].value;
        valid[rows + j] = north[j].valid;
    }
    c.advance(&value[0], &valid[0], &value[rows], &valid[rows]);
}

inline constexpr i64 kMax64 = std::numeric_limits<i64>::max();
inline constexpr i64 kMin64 = std::numeric_limits<i64>::min();
inline constexpr i32 kMax32 = std::numeric_limits<i32>::max();
inline constexpr i32 kMin32 = std::numeric_limits<i32>::min();
// p = (2^31 - 1)^2 = 2^62 - 2^32 + 1 = 4611686014132420609. 2p = 9223372028264841218 is still
// below INT64_MAX = 9223372036854775807, 3p is above it: the third term overflows, once.
inline constexpr i64 kMaxProduct = i64{kMax32} * i64{kMax32};

inline bool contains_text(const std::vector<std::string>& lines, const std::string& needle) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.find(needle) != std::string::npos; });
}

inline std::string joined(const std::vector<std::string>& lines) {
    std::string out;
    for (const auto& l : lines)
        out += l + "\n";
    return out;
}

// The bytes of a vector of values, as memory holds them (the scoreboard and encode_c work on bytes).
template <class T>
std::vector<u8> bytes_of(const std::vector<T>& values) {
    std::vector<u8> out(values.size() * sizeof(T));
    std::memcpy(out.data(), values.data(), out.size());
    return out;
}

// Value printers for scoreboard messages: an int64 accumulator, and a signed int8 code.
inline std::string print_i64(const u8* p) {
    i64 v;
    std::memcpy(&v, p, sizeof v);
    return std::to_string(v);
}
inline std::string print_i8(const u8* p) {
    return std::to_string(static_cast<i8>(*p));
}

inline u32 bits_of(float f) {
    u32 u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}
inline float float_of(u32 u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

}  // namespace core_support
