#include "progress_bar.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <utility>

namespace systolic::cli {

std::string progress_line(std::uint64_t tiles_done, std::uint64_t tiles, std::uint64_t edges_done,
                          std::uint64_t edges, std::optional<double> rate, std::optional<double> seconds_left,
                          std::size_t columns) {
    // Most useful first, so that a narrow terminal cuts the rate before the time left.
    std::string figures = std::to_string(tiles_done) + "/" + std::to_string(tiles) + " tiles";
    if (edges_done >= edges)
        figures += "  done";
    else if (seconds_left)
        figures += "  " + time_left_text(*seconds_left);
    char buf[96];
    if (rate) {
        if (*rate >= 1e6)
            std::snprintf(buf, sizeof buf, "  %.1f M edges/s", *rate / 1e6);
        else if (*rate >= 1e3)
            std::snprintf(buf, sizeof buf, "  %.1f k edges/s", *rate / 1e3);
        else
            std::snprintf(buf, sizeof buf, "  %.0f edges/s", *rate);
        figures += buf;
    }
    // In a narrow terminal the bar gives up its room first (down to none), then the figures are cut.
    std::size_t width = 20;
    if (columns) {
        const std::size_t room = fit_width(std::string(columns, ' '), columns).size();
        const std::size_t spare = room > figures.size() + 3 ? room - figures.size() - 3 : 0;
        width = std::min(width, spare);
        if (width < 5) return fit_width(figures, columns);
    }
    const double frac =
        edges ? double(edges_done) / double(edges) : (tiles ? double(tiles_done) / double(tiles) : 1);
    const auto full = std::size_t(std::lround(std::min(1.0, frac) * double(width)));
    return "[" + std::string(full, '#') + std::string(width - full, '.') + "] " + figures;
}

progress_bar::progress_bar(mode m, double total, text line, std::FILE* out)
    : m_mode(m),
      m_total(total),
      m_line(std::move(line)),
      m_out(out),
      m_tty(::isatty(::fileno(out)) == 1),
      m_start(clock::now()),
      m_last(m_start) {}

progress_bar::~progress_bar() {
    clear();  // an error message after an unfinished bar starts a line of its own
}

void progress_bar::update(double done, bool now) {
    m_done = done;
    const auto t = clock::now();
    m_rate.add(std::chrono::duration<double>(t - m_start).count(), done);
    if (m_mode == mode::automatic && t - m_start < std::chrono::seconds(1)) return;
    // Redrawn in place on a terminal; elsewhere (a log file) one line a second.
    if (!now && m_drawn && t - m_last < std::chrono::milliseconds(m_tty ? 200 : 1000)) return;
    m_last = t;
    draw(false);
}

void progress_bar::draw(bool last) {
    const double s = std::chrono::duration<double>(clock::now() - m_start).count();
    // While running, the recent rate; the last line says the average of the whole work.
    const std::optional<double> rate =
        last ? (s > 0 ? std::optional<double>(m_done / s) : std::nullopt) : m_rate.rate();
    const std::string line =
        m_line({m_done, m_total, rate, last ? std::nullopt : m_rate.seconds_left(m_total, s), last,
                m_tty ? terminal_width(::fileno(m_out)) : 0});
    if (m_tty)
        std::fprintf(m_out, "\r%s\x1b[K", line.c_str());
    else
        std::fprintf(m_out, "%s\n", line.c_str());
    std::fflush(m_out);
    m_drawn = true;
}

void progress_bar::finish() {
    if (m_mode == mode::forced || m_drawn) {
        draw(true);
        if (m_tty) std::fputc('\n', m_out);
        std::fflush(m_out);
    }
    m_drawn = false;
}

void progress_bar::clear() {
    if (m_tty && m_drawn) {
        std::fprintf(m_out, "\r\x1b[K");
        std::fflush(m_out);
    }
    m_drawn = false;
}

}  // namespace systolic::cli
