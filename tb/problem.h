// The operands of one testbench run: the seeds' worked example, or seeded random data.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "systolic/counting.h"

namespace systolic::tb {

template <class Format>
struct problem {
    using operand_type = typename Format::operand_type;
    problem_shape shape;
    std::vector<operand_type> a;  // M x K, row-major
    std::vector<operand_type> b;  // K x P, row-major
};

// Seeds 001/003: N = 2, M = P = K = 3, C = [[7,2,5],[16,5,14],[25,8,23]].
template <class Format>
problem<Format> seed_example() {
    using T = typename Format::operand_type;
    problem<Format> pr;
    pr.shape = {3, 3, 3};
    pr.a = {T(1), T(2), T(3), T(4), T(5), T(6), T(7), T(8), T(9)};
    pr.b = {T(1), T(0), T(2), T(0), T(1), T(0), T(2), T(0), T(1)};
    return pr;
}

// Integers drawn uniformly from [-range, range] with a 64-bit Mersenne Twister, whose output the
// standard fixes, so a seed gives the same matrices everywhere.
template <class Format>
problem<Format> random_problem(const problem_shape& shape, std::uint64_t seed, std::int64_t range = 1000) {
    using T = typename Format::operand_type;
    problem<Format> pr;
    pr.shape = shape;
    std::mt19937_64 rng(seed);
    const auto span = static_cast<std::uint64_t>(2 * range + 1);
    auto draw = [&] { return T(static_cast<std::int64_t>(rng() % span) - range); };
    pr.a.resize(shape.m * shape.k);
    pr.b.resize(shape.k * shape.p);
    for (auto& v : pr.a)
        v = draw();
    for (auto& v : pr.b)
        v = draw();
    return pr;
}

}  // namespace systolic::tb
