// A GTKWave save file (.gtkw) for one VCD: plain C++. The signals in groups, each row under an
// alias that places it ("pe_0_1_acc" rather than the leaf "acc[63:0]", which GTKWave would show
// four times for four PEs), and a view of the first tile: zoomed so that its advance edges are
// apart, with markers at its first and last advance edge.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace systolic::observe {

struct gtkw_signal {
    enum class kind { bit, decimal, signed_decimal, hex, real, text };
    std::string name;    // the VCD's dotted name, "tb.array.row_0.pe_0_1.acc"
    unsigned width = 1;  // bits (wires only)
    kind shown = kind::bit;
    std::string alias;  // the row's name in GTKWave; empty: the name itself
};

struct gtkw_group {
    std::string name;
    bool closed = false;  // collapsed until clicked
    std::vector<gtkw_signal> signals = {};
    std::vector<gtkw_group> groups = {};  // nested, after the signals
};

// In the VCD's time units.
struct gtkw_view {
    std::uint64_t tile_begin = 0, tile_end = 0;   // the first tile, from its clear to the next tile
    std::uint64_t first_edge = 0, last_edge = 0;  // its first and last advance edge
    std::uint64_t clock = 1000;                   // one advance edge
    bool has_edges = false;
};

// The file's text; `dumpfile` is written as given (GTKWave opens it when given the save file alone).
std::string gtkw_file(const std::string& dumpfile, const std::vector<gtkw_group>& groups,
                      const gtkw_view& view, const std::vector<std::string>& comments);

// The view's zoom as GTKWave has it: log2 of pixels per time unit. The window shows the first tile
// in `pixels` when that leaves every clock at least `min_clock_pixels`, else the advance edges,
// else it starts at the first edge with clocks `min_clock_pixels` wide. Sets `start`.
double gtkw_zoom(const gtkw_view& view, std::uint64_t& start, double pixels = 900,
                 double min_clock_pixels = 8);

}  // namespace systolic::observe
