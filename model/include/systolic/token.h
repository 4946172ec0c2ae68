// A token on the array's east/south wires: a value plus a valid bit.
// Padding outside the matrix travels as a *valid* zero; the skew bubbles before and after a
// row or column stream are *invalid* and carry a zero value.
#pragma once

namespace systolic {

template <class T>
struct token {
    T value{};
    bool valid = false;

    static constexpr token bubble() { return token{}; }
    static constexpr token of(T v) { return token{v, true}; }
};

}  // namespace systolic
