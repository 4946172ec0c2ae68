// Which PEs a waveform traces: --vcd-pes all | none | R0:R1,C0:C1 (inclusive ranges of rows and
// columns; "R,C" is one PE, "R0:R1,C" one column segment). Default: all PEs of an array up to 16
// rows of 16, none of a larger one.
// Plain C++.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace systolic::observe {

struct pe_selection {
    std::size_t row0 = 0, row1 = 0, col0 = 0, col1 = 0;  // inclusive
    bool any = false;                                    // false: no PE

    bool contains(std::size_t i, std::size_t j) const {
        return any && i >= row0 && i <= row1 && j >= col0 && j <= col1;
    }
    std::size_t count() const { return any ? (row1 - row0 + 1) * (col1 - col0 + 1) : 0; }
};

// Largest array side (rows and columns) whose PEs are all traced by default.
inline constexpr std::size_t default_traced_array = 16;

// The selection for an array of rows x cols PEs; `text` unset means the default. Throws
// std::invalid_argument for a malformed or out-of-range selection; the message quotes the text as
// typed, so a caller that prints it makes it one line (io::printable).
pe_selection parse_pe_selection(const std::optional<std::string>& text, std::size_t rows, std::size_t cols);

}  // namespace systolic::observe
