// The tiling plan: which output tiles exist, where each starts in C, and in which order the
// controller visits them. Plain C++; the order never changes the result, only the schedule.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "systolic/names.h"

namespace systolic {

enum class tile_order { row_major, col_major, serpentine, random };

// The names the command line and the JSON report use.
inline constexpr enum_name<tile_order> tile_order_names[] = {
    {tile_order::row_major, "row", "row by row, each row left to right"},
    {tile_order::col_major, "col", "column by column, each column top to bottom"},
    {tile_order::serpentine, "snake", "row by row, every other row right to left"},
    {tile_order::random, "random", "a shuffle drawn from the seed"},
};
static_assert(names_in_order(tile_order_names));
constexpr const char* to_string(tile_order order) {
    return name_of(tile_order_names, order);
}
constexpr std::optional<tile_order> parse_tile_order(std::string_view name) {
    return parse_name(tile_order_names, name);
}

struct tile {
    std::uint64_t index = 0;  // position in the visiting order
    std::uint64_t r0 = 0;     // origin: local PE(i, j) computes global C(r0 + i, c0 + j)
    std::uint64_t c0 = 0;
    std::uint64_t rows = 0;  // real rows in this tile, min(R, M - r0)
    std::uint64_t cols = 0;  // real columns in this tile, min(C, P - c0)
};

// All ceil(M/R) x ceil(P/C) tiles of tile_rows x tile_cols (an R x C array: R rows of C PEs) in
// the requested order. `seed` only matters for random order, which is a Fisher-Yates shuffle
// driven by a 64-bit SplitMix generator, so it is the same on every platform and standard library.
std::vector<tile> plan_tiles(std::uint64_t m, std::uint64_t p, std::uint64_t tile_rows,
                             std::uint64_t tile_cols, tile_order order, std::uint64_t seed = 0);
// Square N x N tiles.
std::vector<tile> plan_tiles(std::uint64_t m, std::uint64_t p, std::uint64_t n, tile_order order,
                             std::uint64_t seed = 0);

}  // namespace systolic
