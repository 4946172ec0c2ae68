#include "pe_selection.h"

#include "cli_options.h"

namespace systolic::tb {
namespace {

// "A" or "A:B" as an inclusive range inside [0, n).
void parse_range(const std::string& whole, const std::string& part, const char* what, std::size_t n,
                 std::size_t& lo, std::size_t& hi) {
    const auto colon = part.find(':');
    const std::string a = part.substr(0, colon), b = colon == std::string::npos ? a : part.substr(colon + 1);
    const std::int64_t max = std::int64_t(n) - 1;
    auto bound = [&](const std::string& t) {
        try {
            return parse_int("--vcd-pes", t, 0, max);
        } catch (const usage_error&) {
            throw usage_error("--vcd-pes '" + one_line(whole) + "': " + what + " '" + one_line(t) +
                              "' is not an index in [0, " + std::to_string(max) + "]");
        }
    };
    lo = std::size_t(bound(a));
    hi = std::size_t(bound(b));
    if (lo > hi)
        throw usage_error("--vcd-pes '" + one_line(whole) + "': the " + what + " range " + a + ":" + b +
                          " is empty (first above last)");
}

}  // namespace

pe_selection parse_pe_selection(const std::optional<std::string>& text, std::size_t rows, std::size_t cols) {
    pe_selection s;
    if (!text) {
        if (rows <= default_traced_array && cols <= default_traced_array)
            s = {0, rows - 1, 0, cols - 1, true};
        return s;
    }
    if (*text == "none") return s;
    if (*text == "all") return {0, rows - 1, 0, cols - 1, true};
    const auto comma = text->find(',');
    if (comma == std::string::npos || text->find(',', comma + 1) != std::string::npos)
        throw usage_error(
            "--vcd-pes must be all, none or R0:R1,C0:C1 (inclusive PE rows and columns), got '" +
            one_line(*text) + "'");
    parse_range(*text, text->substr(0, comma), "row", rows, s.row0, s.row1);
    parse_range(*text, text->substr(comma + 1), "column", cols, s.col0, s.col1);
    s.any = true;
    return s;
}

}  // namespace systolic::tb
