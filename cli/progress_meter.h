// What every progress bar needs, as plain C++: the rate and the time left from recent progress,
// and the width of the terminal a redrawn line must fit. The caller passes the time, so that tests
// drive the estimator with a fake clock. systolic-tb's and systolic-run's bars both use it.
#pragma once

#include <cstddef>
#include <deque>
#include <optional>
#include <string>

namespace systolic::cli {

// Work per second over the last `window` seconds of progress. The time before the first progress
// (a job's set-up, a first tile still running) is not counted, and older progress drops out of the
// window, so the estimate follows the job's current pace instead of its average since the start.
class rate_estimator {
public:
    explicit rate_estimator(double window_seconds = 5.0) : m_window(window_seconds) {}
    // `done` units of work (never decreasing) at `seconds` (any origin, never decreasing).
    void add(double seconds, double done);
    // None until two points of progress at least a tenth of a second apart.
    std::optional<double> rate() const;
    // Seconds until `total` at the current rate, counted from `now` (the time of the last call to
    // add() or later); never negative.
    std::optional<double> seconds_left(double total, double now) const;

private:
    struct point {
        double seconds, done;
    };
    double m_window;
    std::deque<point> m_points;  // a point at most every 50 ms; the front starts the window
    std::optional<point> m_last;
};

// "3 s left", "2 min 05 s left".
std::string time_left_text(double seconds);

// Columns of the terminal on `fd`: its window size, else $COLUMNS, else 80.
std::size_t terminal_width(int fd);

// `line` cut to `columns` - 1 characters, so that a line redrawn with "\r" never reaches the last
// column, where the terminal would wrap it and leave a copy behind at every redraw.
std::string fit_width(std::string line, std::size_t columns);

}  // namespace systolic::cli
