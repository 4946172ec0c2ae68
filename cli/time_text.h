// Simulated times for people: every value in the unit that suits it (ps, ns, us, ms, s) with three
// significant digits, so that the figures on one summary line compare at a glance:
//   "264 ns", "4.00 ns", "1.39 ms". Every summary line that prints a time uses it.
#pragma once

#include <string>

namespace sc_core {
class sc_time;
}

namespace systolic::cli {

// A time of `ps` picoseconds (non-negative); "0 s" for zero.
std::string format_time_ps(double ps);
std::string format_time(const sc_core::sc_time& t);

}  // namespace systolic::cli
