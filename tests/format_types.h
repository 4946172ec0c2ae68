// The model's number formats (number_format.h's one list, `formats`) as GoogleTest's type list: a
// typed test over format_types runs once per format, a format added to the list included, and is
// named by it (EngineCrossCheck/int8.AllOptions).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "systolic/number_format.h"

namespace systolic::test {

template <class List>
struct gtest_types_of;
template <class... Formats>
struct gtest_types_of<type_list<Formats...>> {
    using type = ::testing::Types<Formats...>;
};
using format_types = gtest_types_of<formats>::type;

// Names each typed test's instance by its format.
struct format_name {
    template <class Format>
    static std::string GetName(int) {
        return Format::name;
    }
};

// The format's place in the list: 0, 1, ... (to give each format its own seeds).
template <class Format>
constexpr std::uint64_t format_index = std::uint64_t(dtype_of<Format>);

}  // namespace systolic::test
