#include "progress_meter.h"

#include <sys/ioctl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace systolic::cli {

void rate_estimator::add(double seconds, double done) {
    if (m_last && done <= m_last->done) return;  // no progress: nothing to learn
    if (!m_last && done <= 0) return;            // nothing done yet: the clock has not started
    m_last = point{seconds, done};
    if (m_points.empty() || seconds - m_points.back().seconds >= 0.05) m_points.push_back(*m_last);
    // Keep one point at or before the window's start, so the window spans it once it can.
    while (m_points.size() > 2 && m_points[1].seconds <= seconds - m_window)
        m_points.pop_front();
}

std::optional<double> rate_estimator::rate() const {
    if (!m_last || m_points.empty()) return std::nullopt;
    const point& first = m_points.front();
    const double span = m_last->seconds - first.seconds;
    if (span < 0.1) return std::nullopt;
    return (m_last->done - first.done) / span;
}

std::optional<double> rate_estimator::seconds_left(double total, double now) const {
    const auto r = rate();
    if (!r || !(*r > 0)) return std::nullopt;
    const double left = (total - m_last->done) / *r - (now - m_last->seconds);
    return std::max(0.0, left);
}

std::string time_left_text(double seconds) {
    char buf[64];
    if (seconds >= 59.5) {
        const double s = std::round(seconds);
        std::snprintf(buf, sizeof buf, "%.0f min %02.0f s left", std::floor(s / 60), std::fmod(s, 60));
    } else {
        std::snprintf(buf, sizeof buf, "%.0f s left", std::ceil(seconds));
    }
    return buf;
}

std::size_t terminal_width(int fd) {
    winsize ws{};
    if (::ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n > 0 && n < 100000) return std::size_t(n);
    }
    return 80;
}

std::string fit_width(std::string line, std::size_t columns) {
    const std::size_t room = columns > 1 ? columns - 1 : 1;
    if (line.size() > room) line.resize(room);
    return line;
}

}  // namespace systolic::cli
