// The one progress bar of the executables: a line on stderr (or `out`) redrawn in place at most five
// times a second on a terminal, one line a second elsewhere, with the rate and the time left at the
// recent rate (progress_meter.h) and fitted to the terminal's width. What the line says is the
// caller's: systolic-tb's tiles and edges (progress_line below), systolic-run's jobs and layers.
// `automatic` stays silent for the first second, so work shorter than that prints nothing; `forced`
// draws from the start.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "progress_meter.h"
#include "systolic/edge_observer.h"

namespace systolic::cli {

// What a line can show: `done` of `total` units of work (any unit), the rate in units per second
// (the recent rate while running, the average on the last line) and the seconds left (left out on
// the last line and while unknown). `columns` is the terminal's width (0: no limit).
struct progress_state {
    double done, total;
    std::optional<double> rate, seconds_left;
    bool last;
    std::size_t columns;
};

class progress_bar {
public:
    enum class mode { forced, automatic };
    using text = std::function<std::string(const progress_state&)>;
    progress_bar(mode m, double total, text line, std::FILE* out = stderr);
    ~progress_bar();
    progress_bar(const progress_bar&) = delete;
    progress_bar& operator=(const progress_bar&) = delete;
    // Counts `done` units and redraws if it is time to, or at once with `now`.
    void update(double done, bool now = false);
    // Draws the last line (if any line was drawn, or in `forced` mode) and ends it with a newline.
    void finish();
    // Erases the line from a terminal (before anything else is printed there); the destructor does too.
    void clear();

private:
    using clock = std::chrono::steady_clock;
    void draw(bool last);
    mode m_mode;
    double m_total, m_done = 0;
    text m_line;
    std::FILE* m_out;
    bool m_tty;
    clock::time_point m_start, m_last;
    rate_estimator m_rate;
    bool m_drawn = false;
};

// systolic-tb's line, as plain C++ (testable without a clock): `rate` in edges per second and
// `seconds_left` are left out while unknown. With `columns` (a terminal's width; 0: no limit) the
// line fits in columns - 1 characters: the bar shrinks, then goes, before the figures are cut.
//   [##########..........]  12/40 tiles  2 s left  3.1 M edges/s
std::string progress_line(std::uint64_t tiles_done, std::uint64_t tiles, std::uint64_t edges_done,
                          std::uint64_t edges, std::optional<double> rate, std::optional<double> seconds_left,
                          std::size_t columns = 0);

// systolic-tb's bar: advance edges of the job's, with the tiles drained so far. It updates at step
// granularity (clear, load, advance, drain): nothing is done per edge.
template <class Format>
class progress_observer final : public edge_observer<Format> {
public:
    progress_observer(progress_bar::mode m, std::uint64_t tiles, std::uint64_t edges, std::FILE* out = stderr)
        : m_bar(
              m, double(edges),
              [this, tiles, edges](const progress_state& s) {
                  return progress_line(m_tiles, tiles, m_edges, edges, s.rate, s.seconds_left, s.columns);
              },
              out) {}
    bool wants_edges() const override { return false; }
    void on_edge(const edge_event<Format>&) override {}
    void on_step_end(const step_event<Format>& e) override {
        if (e.step.kind == step_kind::advance) m_edges += e.step.edges;
        if (e.step.kind == step_kind::drain && e.step.last_chunk) ++m_tiles;
        m_bar.update(double(m_edges));
    }
    void finish() { m_bar.finish(); }

private:
    std::uint64_t m_tiles = 0, m_edges = 0;
    progress_bar m_bar;
};

}  // namespace systolic::cli
