#include "progress_bar.h"

#include <unistd.h>

#include <cmath>

namespace systolic::tb {

std::string progress_line(std::uint64_t tiles_done, std::uint64_t tiles, std::uint64_t edges_done,
                          std::uint64_t edges, double seconds) {
    constexpr int width = 20;
    const double frac =
        edges ? double(edges_done) / double(edges) : (tiles ? double(tiles_done) / double(tiles) : 1);
    const int full = int(std::lround(std::min(1.0, frac) * width));
    std::string line =
        "[" + std::string(std::size_t(full), '#') + std::string(std::size_t(width - full), '.') + "] ";
    line += std::to_string(tiles_done) + "/" + std::to_string(tiles) + " tiles";
    char buf[96];
    const double rate = seconds > 0 ? double(edges_done) / seconds : 0;
    if (rate >= 1e6)
        std::snprintf(buf, sizeof buf, "  %.1f M edges/s", rate / 1e6);
    else if (rate >= 1e3)
        std::snprintf(buf, sizeof buf, "  %.1f k edges/s", rate / 1e3);
    else
        std::snprintf(buf, sizeof buf, "  %.0f edges/s", rate);
    line += buf;
    if (rate > 0 && edges_done < edges) {
        const double left = double(edges - edges_done) / rate;
        if (left >= 60)
            std::snprintf(buf, sizeof buf, "  %.0f min %02.0f s left", std::floor(left / 60),
                          std::fmod(left, 60));
        else
            std::snprintf(buf, sizeof buf, "  %.0f s left", std::ceil(left));
        line += buf;
    } else if (edges_done >= edges) {
        line += "  done";
    }
    return line;
}

progress_bar::progress_bar(mode m, std::uint64_t tiles, std::uint64_t edges, std::FILE* out)
    : m_mode(m),
      m_tiles(tiles),
      m_edges(edges),
      m_out(out),
      m_tty(::isatty(::fileno(out)) == 1),
      m_start(clock::now()),
      m_last(m_start) {}

void progress_bar::update(std::uint64_t tiles_done, std::uint64_t edges_done) {
    m_tiles_done = tiles_done;
    m_edges_done = edges_done;
    const auto now = clock::now();
    if (m_mode == mode::automatic && now - m_start < std::chrono::seconds(1)) return;
    // Redrawn in place on a terminal; elsewhere (a log file) one line a second.
    if (m_drawn && now - m_last < std::chrono::milliseconds(m_tty ? 200 : 1000)) return;
    m_last = now;
    draw();
}

void progress_bar::draw() {
    const double s = std::chrono::duration<double>(clock::now() - m_start).count();
    const std::string line = progress_line(m_tiles_done, m_tiles, m_edges_done, m_edges, s);
    if (m_tty)
        std::fprintf(m_out, "\r%s\x1b[K", line.c_str());
    else
        std::fprintf(m_out, "%s\n", line.c_str());
    std::fflush(m_out);
    m_drawn = true;
}

void progress_bar::finish() {
    if (m_mode == mode::forced || m_drawn) {
        draw();
        if (m_tty) std::fputc('\n', m_out);
        std::fflush(m_out);
    }
}

}  // namespace systolic::tb
