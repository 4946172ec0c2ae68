#include "systolic/tiling.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "systolic/counting.h"

namespace systolic {

namespace {

std::uint64_t splitmix64(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

}  // namespace

std::vector<tile> plan_tiles(std::uint64_t m, std::uint64_t p, std::uint64_t n, tile_order order,
                             std::uint64_t seed) {
    return plan_tiles(m, p, n, n, order, seed);
}

std::vector<tile> plan_tiles(std::uint64_t m, std::uint64_t p, std::uint64_t height, std::uint64_t width,
                             tile_order order, std::uint64_t seed) {
    if (m == 0 || p == 0 || height == 0 || width == 0)
        throw std::invalid_argument("plan_tiles: dimensions must be positive");
    const std::uint64_t tile_rows = ceil_div(m, height);  // tiles down C
    const std::uint64_t tile_cols = ceil_div(p, width);   // tiles across C

    std::vector<std::pair<std::uint64_t, std::uint64_t>> grid;  // (tile row, tile column)
    grid.reserve(tile_rows * tile_cols);
    switch (order) {
        case tile_order::row_major:
        case tile_order::random:
            for (std::uint64_t ti = 0; ti < tile_rows; ++ti)
                for (std::uint64_t tj = 0; tj < tile_cols; ++tj)
                    grid.emplace_back(ti, tj);
            break;
        case tile_order::col_major:
            for (std::uint64_t tj = 0; tj < tile_cols; ++tj)
                for (std::uint64_t ti = 0; ti < tile_rows; ++ti)
                    grid.emplace_back(ti, tj);
            break;
        case tile_order::serpentine:
            for (std::uint64_t ti = 0; ti < tile_rows; ++ti)
                for (std::uint64_t s = 0; s < tile_cols; ++s)
                    grid.emplace_back(ti, ti % 2 == 0 ? s : tile_cols - 1 - s);
            break;
    }
    if (order == tile_order::random) {
        std::uint64_t state = seed;
        for (std::uint64_t i = grid.size(); i > 1; --i) {
            std::swap(grid[i - 1], grid[splitmix64(state) % i]);
        }
    }

    std::vector<tile> tiles;
    tiles.reserve(grid.size());
    for (const auto& [ti, tj] : grid) {
        tile t;
        t.index = tiles.size();
        t.r0 = ti * height;
        t.c0 = tj * width;
        t.rows = std::min(height, m - t.r0);
        t.cols = std::min(width, p - t.c0);
        tiles.push_back(t);
    }
    return tiles;
}

}  // namespace systolic
