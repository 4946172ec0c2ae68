#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace systolic::run {

bool stderr_is_terminal() {
    return ::isatty(STDERR_FILENO) == 1;
}

progress_bar::progress_bar(bool enabled, double total) : m_enabled(enabled), m_total(total > 0 ? total : 1) {}

progress_bar::~progress_bar() {
    finish();
}

void progress_bar::update(double done, const std::string& label, bool force) {
    if (!m_enabled) return;
    const auto now = std::chrono::steady_clock::now();
    const double seconds = std::chrono::duration<double>(now - m_start).count();
    m_rate.add(seconds, done);
    if (!force && m_drawn && now - m_last < std::chrono::milliseconds(100)) return;
    m_last = now;
    const double f = std::clamp(done / m_total, 0.0, 1.0);
    constexpr int bar = 30;
    const int filled = int(f * bar);
    std::string line = "[" + std::string(filled, '#') + std::string(bar - filled, '.') + "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%% ", int(f * 100));
    line += pct;
    if (const auto left = m_rate.seconds_left(m_total, seconds)) line += tb::time_left_text(*left) + "  ";
    line += label;
    std::fprintf(stderr, "\r%s\x1b[K", tb::fit_width(line, tb::terminal_width(STDERR_FILENO)).c_str());
    std::fflush(stderr);
    m_drawn = true;
}

void progress_bar::finish() {
    if (!m_enabled || !m_drawn) return;
    std::fprintf(stderr, "\r\x1b[K");
    std::fflush(stderr);
    m_drawn = false;
}

}  // namespace systolic::run
