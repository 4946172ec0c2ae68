// systolic-run's progress line on a terminal: the share of the run's work done, the time left and
// what runs now, drawn by the executables' one progress bar (cli/progress_bar.h), e.g.
//   [#########.....................]  30% 12 s left  job 3/6: layer 2 Linear2 on 128x128, tile 57/104
// Off when stderr is not a terminal, so logs and pipes never see it. Plain C++.
#pragma once

#include <optional>
#include <string>

#include "progress_bar.h"

namespace systolic::run {

class progress_bar {
public:
    // `total`: the work of the whole run in any unit (systolic-run uses PE-updates).
    progress_bar(bool enabled, double total);

    bool enabled() const { return m_bar.has_value(); }
    // `done` of the total, with a label such as "layer 3/6 Linear2 on 128x128, tile 57/104".
    void update(double done, const std::string& label, bool force = false);
    // Clears the line (call before printing anything else on stderr); the destructor does too.
    void finish();

private:
    std::string m_label;
    std::optional<cli::progress_bar> m_bar;
};

// The line for `done` of `total` with `label`, at most `columns` - 1 characters (0: no limit).
std::string progress_line(const cli::progress_state& s, const std::string& label);

// True when stderr is a terminal.
bool stderr_is_terminal();

}  // namespace systolic::run
