#include "systolic/observe/pe_selection.h"

#include <charconv>
#include <cstdint>
#include <stdexcept>

namespace systolic::observe {
namespace {

// "A" or "A:B" as an inclusive range inside [0, n).
void parse_range(const std::string& whole, const std::string& part, const char* what, std::size_t n,
                 std::size_t& lo, std::size_t& hi) {
    const auto colon = part.find(':');
    const std::string a = part.substr(0, colon), b = colon == std::string::npos ? a : part.substr(colon + 1);
    const std::size_t max = n - 1;
    // Decimal digits after an optional sign, nothing else (as every integer option is read).
    auto bound = [&](const std::string& t) {
        const bool sign = !t.empty() && (t[0] == '+' || t[0] == '-');
        const char* const first = t.data() + sign;
        const char* const last = t.data() + t.size();
        std::size_t v = 0;
        const auto [end, err] = std::from_chars(first, last, v);
        const bool digits = first != last && *first >= '0' && *first <= '9' && end == last;
        if (!digits || err != std::errc() || v > max || (t[0] == '-' && v != 0))
            throw std::invalid_argument("--vcd-pes '" + whole + "': " + what + " '" + t +
                                        "' is not an index in [0, " + std::to_string(max) + "]");
        return v;
    };
    lo = bound(a);
    hi = bound(b);
    if (lo > hi)
        throw std::invalid_argument("--vcd-pes '" + whole + "': the " + what + " range " + a + ":" + b +
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
        throw std::invalid_argument(
            "--vcd-pes must be all, none or R0:R1,C0:C1 (inclusive PE rows and columns), got '" + *text +
            "'");
    parse_range(*text, text->substr(0, comma), "row", rows, s.row0, s.row1);
    parse_range(*text, text->substr(comma + 1), "column", cols, s.col0, s.col1);
    s.any = true;
    return s;
}

}  // namespace systolic::observe
