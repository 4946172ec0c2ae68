#include "systolic/observe/gtkw_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace systolic::observe {
namespace {

// GTKWave's trace flags (its analyzer.h): how a row is shown.
constexpr unsigned long flag_hex = 1ul << 1, flag_dec = 1ul << 2, flag_bin = 1ul << 3,
                        flag_rjustify = 1ul << 5, flag_blank = 1ul << 9, flag_signed = 1ul << 10,
                        flag_collapsed = 1ul << 12, flag_real = 1ul << 18, flag_closed = 1ul << 22,
                        flag_group_begin = 1ul << 23, flag_group_end = 1ul << 24;

unsigned long flags_of(gtkw_signal::kind k) {
    switch (k) {
        case gtkw_signal::kind::bit:
            return flag_rjustify | flag_bin;
        case gtkw_signal::kind::decimal:
            return flag_rjustify | flag_dec;
        case gtkw_signal::kind::signed_decimal:
            return flag_rjustify | flag_signed | flag_dec;
        case gtkw_signal::kind::hex:
            return flag_rjustify | flag_hex;
        case gtkw_signal::kind::real:
            return flag_rjustify | flag_real;
        case gtkw_signal::kind::text:
            return flag_rjustify | flag_dec;
    }
    return flag_rjustify;
}

std::string hex(unsigned long v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "@%lx\n", v);
    return buf;
}

void write_group(std::string& out, const gtkw_group& g) {
    const unsigned long closed = g.closed ? flag_closed : 0;
    out += hex(flag_group_begin | flag_blank | closed) + "-" + g.name + "\n";
    unsigned long current = 0;
    for (const gtkw_signal& s : g.signals) {
        if (const unsigned long f = flags_of(s.shown); f != current) {
            out += hex(f);
            current = f;
        }
        std::string row = s.name;
        if (s.shown != gtkw_signal::kind::real && s.shown != gtkw_signal::kind::text && s.width > 1)
            row += "[" + std::to_string(s.width - 1) + ":0]";  // GTKWave names a vector with its range
        out += (s.alias.empty() ? "" : "+{" + s.alias + "} ") + row + "\n";
    }
    for (const gtkw_group& sub : g.groups)
        write_group(out, sub);
    out += hex(flag_group_end | flag_blank | closed | (g.closed ? flag_collapsed : 0)) + "-" + g.name + "\n";
}

}  // namespace

double gtkw_zoom(const gtkw_view& v, std::uint64_t& start, double pixels, double min_clock_pixels) {
    const double finest = double(v.clock) / min_clock_pixels;  // time units per pixel, at most
    const auto fits = [&](std::uint64_t from, std::uint64_t to) {
        return double(to - from) / pixels <= finest;
    };
    const std::uint64_t margin = 2 * v.clock;
    double per_pixel = finest;
    start = v.has_edges && v.first_edge > margin ? v.first_edge - margin : 0;
    if (v.tile_end > v.tile_begin && fits(v.tile_begin, v.tile_end)) {
        start = v.tile_begin;
        per_pixel = double(v.tile_end - v.tile_begin) / pixels;
    } else if (v.has_edges && fits(start, v.last_edge + margin)) {
        per_pixel = double(v.last_edge + margin - start) / pixels;
    }
    return -std::log2(std::max(per_pixel, 1e-3));
}

std::string gtkw_file(const std::string& dumpfile, const std::vector<gtkw_group>& groups,
                      const gtkw_view& view, const std::vector<std::string>& comments) {
    std::string out = "[*]\n";
    for (const std::string& c : comments)
        out += "[*] " + c + "\n";
    out += "[*]\n[dumpfile] \"" + dumpfile + "\"\n";
    std::uint64_t start = 0;
    const double zoom = gtkw_zoom(view, start);
    out += "[timestart] " + std::to_string(start) + "\n[size] 1400 900\n[pos] -1 -1\n";
    // Zoom, the primary marker, then the named markers A..Z (-1: unset): A and B at the first tile's
    // first and last advance edge.
    char zoom_text[32];
    std::snprintf(zoom_text, sizeof zoom_text, "*%.6f ", zoom);
    out += zoom_text;
    if (view.has_edges) {
        out += std::to_string(view.first_edge) + " " + std::to_string(view.first_edge) + " " +
               std::to_string(view.last_edge);
    } else {
        out += "-1 -1 -1";
    }
    for (int m = 2; m < 26; ++m)
        out += " -1";
    out += "\n[sst_width] 220\n[signals_width] 300\n[sst_expanded] 1\n[sst_vpaned_height] 250\n";
    for (const gtkw_group& g : groups)
        write_group(out, g);
    out += "[pattern_trace] 1\n[pattern_trace] 0\n";
    return out;
}

}  // namespace systolic::observe
