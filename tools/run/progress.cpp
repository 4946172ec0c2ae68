#include "progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace systolic::run {

bool stderr_is_terminal() {
    return ::isatty(STDERR_FILENO) == 1;
}

std::string progress_line(const cli::progress_state& s, const std::string& label) {
    const double f = std::clamp(s.done / s.total, 0.0, 1.0);
    constexpr int bar = 30;
    const int filled = int(f * bar);
    std::string line = "[" + std::string(filled, '#') + std::string(bar - filled, '.') + "] ";
    char pct[16];
    std::snprintf(pct, sizeof pct, "%3d%% ", int(f * 100));
    line += pct;
    if (s.seconds_left) line += cli::time_left_text(*s.seconds_left) + "  ";
    line += label;
    return s.columns ? cli::fit_width(line, s.columns) : line;
}

progress_bar::progress_bar(bool enabled, double total) {
    if (enabled)
        m_bar.emplace(cli::progress_bar::mode::forced, total > 0 ? total : 1,
                      [this](const cli::progress_state& s) { return progress_line(s, m_label); });
}

void progress_bar::update(double done, const std::string& label, bool force) {
    if (!m_bar) return;
    m_label = label;
    m_bar->update(done, force);
}

void progress_bar::finish() {
    if (m_bar) m_bar->clear();
}

}  // namespace systolic::run
