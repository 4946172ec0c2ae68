// The operands of one testbench run: the seeds' worked example, or seeded random data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "systolic/counting.h"
#include "systolic/number_format.h"

namespace systolic::verify {

template <class Format>
struct problem {
    using operand_type = typename Format::operand_type;
    problem_shape shape;
    std::vector<operand_type> a;  // M x K, row-major
    std::vector<operand_type> b;  // K x P, row-major
    // Per-column requantization (a job whose quantization has `columns`): P scales and, if the job
    // says so, P zero points, which the memory plan places after C. Unused otherwise.
    std::vector<double> column_scales;
    std::vector<std::int32_t> column_zero_points;
};

// A problem from written-out values (converted to the format's operand type).
template <class Format>
problem<Format> make_problem(const problem_shape& shape, const std::vector<double>& a,
                             const std::vector<double>& b) {
    using T = typename Format::operand_type;
    problem<Format> pr;
    pr.shape = shape;
    for (double v : a)
        pr.a.push_back(value_from<T>(v));
    for (double v : b)
        pr.b.push_back(value_from<T>(v));
    return pr;
}

// Seeds 001/003: N = 2, M = P = K = 3, C = [[7,2,5],[16,5,14],[25,8,23]].
template <class Format>
problem<Format> seed_example() {
    return make_problem<Format>({3, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 0, 2, 0, 1, 0, 2, 0, 1});
}

// The default spread of random operands: the whole int8 range, +-1000 for int32, [-1, 1) for
// the floating-point formats.
template <class Format>
constexpr double default_range() {
    if constexpr (!Format::is_integer) return 1.0;
    if constexpr (sizeof(typename Format::operand_type) == 1) return 127;
    return 1000;
}

// Random operands from a 64-bit Mersenne Twister, whose output the standard fixes, so a seed gives
// the same matrices everywhere: integers uniform in [-range, range] for integer formats, reals
// uniform in [-range, range) for floating-point ones (bf16 rounds them to nearest even).
template <class Format>
problem<Format> random_problem(const problem_shape& shape, std::uint64_t seed,
                               double range = default_range<Format>()) {
    using T = typename Format::operand_type;
    problem<Format> pr;
    pr.shape = shape;
    std::mt19937_64 rng(seed);
    auto draw = [&]() -> T {
        if constexpr (Format::is_integer) {
            const auto r = static_cast<std::int64_t>(range);
            return static_cast<T>(static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(2 * r + 1)) -
                                  r);
        } else {
            const double unit = static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1)
            return value_from<T>((2 * unit - 1) * range);
        }
    };
    pr.a.resize(shape.m * shape.k);
    pr.b.resize(shape.k * shape.p);
    for (auto& v : pr.a)
        v = draw();
    for (auto& v : pr.b)
        v = draw();
    return pr;
}

}  // namespace systolic::verify
