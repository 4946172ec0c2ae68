// A one-line progress bar on stderr, redrawn in place at most ten times a second, with the time
// left at the recent rate and cut to the terminal's width (tb/progress_meter.h, as systolic-tb's
// bar); off when stderr is not a terminal, so logs and pipes never see it. Plain C++.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

#include "progress_meter.h"

namespace systolic::run {

class progress_bar {
public:
    // `total`: the work of the whole run in any unit (systolic-run uses PE-updates).
    progress_bar(bool enabled, double total);
    ~progress_bar();

    bool enabled() const { return m_enabled; }
    // `done` of the total, with a label such as "layer 3/6 Linear2 on 128x128, tile 57/104".
    void update(double done, const std::string& label, bool force = false);
    // Clears the line (call before printing anything else on stderr).
    void finish();

private:
    bool m_enabled;
    double m_total;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start = std::chrono::steady_clock::now(), m_last{};
    tb::rate_estimator m_rate;
};

// True when stderr is a terminal.
bool stderr_is_terminal();

}  // namespace systolic::run
