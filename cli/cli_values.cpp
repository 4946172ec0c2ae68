#include "cli_values.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

#include "io/text.h"

namespace systolic::cli {
namespace {

bool all_digits(const std::string& s, std::size_t from) {
    if (from >= s.size()) return false;
    for (std::size_t i = from; i < s.size(); ++i)
        if (s[i] < '0' || s[i] > '9') return false;
    return true;
}

}  // namespace

std::string quoted(const std::string& text) {
    return "'" + one_line(text) + "'";
}

std::string one_line(const std::string& text) {
    return io::printable(text);
}

void parse_array_shape(const std::string& option, const std::string& text, std::int64_t& rows,
                       std::int64_t& cols) {
    constexpr std::int64_t i64_max = std::numeric_limits<std::int64_t>::max();
    constexpr std::int64_t i64_min = std::numeric_limits<std::int64_t>::min();
    const auto x = text.find_first_of("xX");
    if (x == std::string::npos) {  // N: the square array, as before
        rows = cols = parse_int(option, text, i64_min, i64_max);
        return;
    }
    if (!all_digits(text.substr(0, x), 0) || !all_digits(text.substr(x + 1), 0))
        throw usage_error(option + " " + quoted(text) +
                          " must be N or RxC (rows x columns of PEs, e.g. 16 or 12x14)");
    rows = parse_int(option, text.substr(0, x), i64_min, i64_max);
    cols = parse_int(option, text.substr(x + 1), i64_min, i64_max);
}

std::string array_shape_text(std::int64_t rows, std::int64_t cols) {
    return rows == cols ? std::to_string(rows) : std::to_string(rows) + "x" + std::to_string(cols);
}

std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t lo, std::int64_t hi) {
    const std::size_t digits = !text.empty() && (text[0] == '-' || text[0] == '+') ? 1 : 0;
    if (!all_digits(text, digits)) throw usage_error(option + " " + quoted(text) + " is not an integer");
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        throw usage_error(option + " " + quoted(text) + " is out of range [" + std::to_string(lo) + ", " +
                          std::to_string(hi) + "]");
    }
    return v;
}

std::uint64_t parse_uint(const std::string& option, const std::string& text) {
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::size_t digits = !text.empty() && text[0] == '+' ? 1 : 0;
    if (!text.empty() && text[0] == '-' && all_digits(text, 1))
        throw usage_error(option + " " + quoted(text) + " is out of range [0, " + std::to_string(max) + "]");
    if (!all_digits(text, digits))
        throw usage_error(option + " " + quoted(text) + " is not a non-negative integer");
    errno = 0;
    char* end = nullptr;
    const unsigned long long v = std::strtoull(text.c_str(), &end, 10);
    if (errno == ERANGE)
        throw usage_error(option + " " + quoted(text) + " is out of range [0, " + std::to_string(max) + "]");
    return v;
}

double parse_real(const std::string& option, const std::string& text) {
    // strtod also takes hex floats, "inf" and "nan"; the callers reject what they cannot use.
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])))
        throw usage_error(option + " " + quoted(text) + " is not a number");
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size())
        throw usage_error(option + " " + quoted(text) + " is not a number");
    if (errno == ERANGE && std::isinf(v))
        throw usage_error(option + " " + quoted(text) + " is out of the range of a double");
    return v;  // an underflow to zero or a subnormal is a number; a scale of 0 is refused later
}

std::uint64_t parse_size(const std::string& option, const std::string& text) {
    std::size_t i = 0;
    while (i < text.size() && ((text[i] >= '0' && text[i] <= '9') || text[i] == '.'))
        ++i;
    const std::string number = text.substr(0, i);
    std::string suffix = text.substr(i);
    const bool number_ok = !number.empty() && number.find_first_of("0123456789") != std::string::npos &&
                           number.find('.') == number.rfind('.');
    double unit = 1;
    if (!suffix.empty()) {
        const char u = static_cast<char>(std::toupper(static_cast<unsigned char>(suffix[0])));
        const std::string rest = suffix.substr(1);
        const std::string units = "KMGT";
        const auto at = units.find(u);
        if (at != std::string::npos && (rest.empty() || rest == "B" || rest == "iB" || rest == "b")) {
            unit = std::ldexp(1.0, 10 * int(at + 1));
            suffix.clear();
        } else if (suffix == "B") {
            suffix.clear();
        }
    }
    if (!number_ok || !suffix.empty())
        throw usage_error(option + " " + quoted(text) + " is not a size (e.g. 512M, 4G, 1048576)");
    const double bytes = std::strtod(number.c_str(), nullptr) * unit;
    if (!(bytes < 0x1p64))
        throw usage_error(option + " " + quoted(text) + " is out of range (at most 16 EiB)");
    if (bytes < 1) throw usage_error(option + " " + quoted(text) + " must be at least one byte");
    return static_cast<std::uint64_t>(bytes);
}

std::optional<std::uint64_t> parse_time(std::string_view s) {
    static const std::pair<const char*, std::uint64_t> units[] = {
        {"ps", 1}, {"ns", 1000}, {"us", 1000000}, {"ms", 1000000000}, {"s", 1000000000000}};
    for (const auto& [suffix, ps] : units) {
        const std::string_view u = suffix;
        if (s.size() <= u.size() || s.substr(s.size() - u.size()) != u) continue;
        const std::string_view num = s.substr(0, s.size() - u.size());
        if (!std::isdigit(static_cast<unsigned char>(num.back()))) continue;  // "10ms" is not 10m + "s"
        std::uint64_t v = 0;
        for (const char ch : num) {
            if (ch < '0' || ch > '9') return std::nullopt;
            const std::uint64_t d = std::uint64_t(ch - '0');
            if (v > (~std::uint64_t{0} - d) / 10) return std::nullopt;  // v * 10 + d would pass 2^64 - 1
            v = v * 10 + d;
        }
        if (v > ~std::uint64_t{0} / ps) return std::nullopt;
        return v * ps;
    }
    return std::nullopt;
}

std::uint64_t parse_positive_time(const std::string& option, const std::string& text, bool bare_seconds) {
    std::optional<std::uint64_t> ps = parse_time(text);
    if (!ps && bare_seconds && all_digits(text, 0)) ps = parse_time(text + "s");
    if (!ps || *ps == 0)
        throw usage_error(option + " " + one_line(text) +
                          ": not a time (a whole number above zero with ps, ns, us, ms or s)");
    return *ps;
}

std::string format_bytes(std::uint64_t bytes) {
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (bytes < 1024) return std::to_string(bytes) + " bytes";
    double v = double(bytes);
    int u = -1;
    while (v >= 1024 && u < 5) {
        v /= 1024;
        ++u;
    }
    char text[32];
    std::snprintf(text, sizeof text, v < 10 ? "%.1f %s" : "%.0f %s", v, units[u]);
    return text;
}

}  // namespace systolic::cli
