// systolic-tb's progress bar on stderr: tiles done of total, the time left and advance edges per
// second of wall time, both at the recent rate (progress_meter.h), redrawn in place at most a few
// times a second and fitted to the terminal's width.
//   [##########..........]  12/40 tiles  2 s left  3.1 M edges/s
// `auto` mode (the default when stderr is a terminal) stays silent for the first second, so a job
// with less work than that prints nothing; `forced` (--progress) draws from the start. It updates
// at step granularity (clear, load, advance, drain): nothing is done per edge.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "progress_meter.h"
#include "systolic/edge_observer.h"

namespace systolic::tb {

// The line, as plain C++ (testable without a clock): `rate` in edges per second and `seconds_left`
// are left out while unknown. With `columns` (a terminal's width; 0: no limit) the line fits in
// columns - 1 characters: the bar shrinks, then goes, before the figures are cut.
std::string progress_line(std::uint64_t tiles_done, std::uint64_t tiles, std::uint64_t edges_done,
                          std::uint64_t edges, std::optional<double> rate, std::optional<double> seconds_left,
                          std::size_t columns = 0);

class progress_bar {
public:
    enum class mode { forced, automatic };
    progress_bar(mode m, std::uint64_t tiles, std::uint64_t edges, std::FILE* out = stderr);
    // Counts and redraws if it is time to.
    void update(std::uint64_t tiles_done, std::uint64_t edges_done);
    // The last line (if any was drawn), ended with a newline.
    void finish();

private:
    using clock = std::chrono::steady_clock;
    void draw(bool final);
    mode m_mode;
    std::uint64_t m_tiles, m_edges, m_tiles_done = 0, m_edges_done = 0;
    std::FILE* m_out;
    bool m_tty;
    clock::time_point m_start, m_last;
    rate_estimator m_rate;
    bool m_drawn = false;
};

template <class Format>
class progress_observer final : public edge_observer<Format> {
public:
    explicit progress_observer(progress_bar& bar) : m_bar(bar) {}
    bool wants_edges() const override { return false; }
    void on_edge(const edge_event<Format>&) override {}
    void on_step_end(const step_event<Format>& e) override {
        if (e.step.kind == step_kind::advance) m_edges += e.step.edges;
        if (e.step.kind == step_kind::drain && e.step.last_chunk) ++m_tiles;
        m_bar.update(m_tiles, m_edges);
    }

private:
    progress_bar& m_bar;
    std::uint64_t m_tiles = 0, m_edges = 0;
};

}  // namespace systolic::tb
