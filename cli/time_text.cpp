#include "time_text.h"

#include <cmath>
#include <cstdio>
#include <systemc>

namespace systolic::cli {

std::string format_time_ps(double ps) {
    if (!(ps > 0)) return "0 s";
    struct unit {
        double ps;
        const char* name;
    };
    static constexpr unit units[] = {{1, "ps"}, {1e3, "ns"}, {1e6, "us"}, {1e9, "ms"}, {1e12, "s"}};
    constexpr std::size_t last = std::size(units) - 1;
    std::size_t u = 0;
    while (u < last && ps >= units[u + 1].ps)
        ++u;
    // Three significant digits: 1, 2 or 0 decimals. A value that rounds up to 1000 (999.7 ns) is
    // the next unit's 1.00.
    auto decimals = [](double v) { return v < 9.995 ? 2 : v < 99.95 ? 1 : 0; };
    double v = ps / units[u].ps;
    if (u < last && v >= 999.5) {
        ++u;
        v = ps / units[u].ps;
    }
    char text[48];
    std::snprintf(text, sizeof text, "%.*f %s", decimals(v), v, units[u].name);
    return text;
}

std::string format_time(const sc_core::sc_time& t) {
    return format_time_ps(t.to_seconds() * 1e12);
}

}  // namespace systolic::cli
