// The strict conversions of every command line: integers, reals, sizes, times and array shapes are
// read as text and converted here, so that a value out of range is an error quoting what the user
// typed, never a silently clamped or wrapped value. Plain C++ (no SystemC, no CLI11), so that the
// fuzzers link it with the parsers that use it.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace systolic::cli {

// Bad usage or bad input: one line on stderr, exit status 2.
struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// text with control characters (a newline typed into an argument) shown as \xNN, so that an error
// message quoting it stays on one line: io::printable, under the name the command lines use.
std::string one_line(const std::string& text);
// The text as a message quotes it: one line, in single quotes.
std::string quoted(const std::string& text);

// Strict decimal integers: optional sign, digits only, in [lo, hi]. The message quotes `text`.
std::int64_t parse_int(const std::string& option, const std::string& text, std::int64_t lo, std::int64_t hi);
std::uint64_t parse_uint(const std::string& option, const std::string& text);
// A finite double written in full (no trailing text); overflow is an error quoting `text`.
double parse_real(const std::string& option, const std::string& text);
// A size in bytes: digits with an optional binary suffix K, M, G, T (optionally followed by "iB" or
// "B"), e.g. "1G", "512MiB", "1048576". Fractions such as "1.5G" are accepted.
std::uint64_t parse_size(const std::string& option, const std::string& text);
// A time: a whole decimal number with a unit, ps, ns, us, ms or s, as picoseconds ("250ns"). A time
// past 2^64 - 1 ps (about 213 days), SystemC's range at its 1 ps resolution, is not one. The one
// time syntax of systolic-vp's scripts and of the time options (parse_positive_time).
std::optional<std::uint64_t> parse_time(std::string_view s);
// A time option's value, above zero, as picoseconds: parse_time's syntax, and with bare_seconds a
// whole number of seconds too (systolic-qemu's --timeout). Anything else, zero included, is a
// usage_error "OPTION TEXT: not a time (...)". The time options of systolic-soc and systolic-qemu.
std::uint64_t parse_positive_time(const std::string& option, const std::string& text, bool bare_seconds);

// --array as typed: "N" (rows = cols = N) or "RxC", each an integer (range-checked later). Any
// other form ("4x", "x", "4x4x4") is a usage_error quoting the text.
void parse_array_shape(const std::string& option, const std::string& text, std::int64_t& rows,
                       std::int64_t& cols);
// "N" for a square array, "RxC" otherwise.
std::string array_shape_text(std::int64_t rows, std::int64_t cols);

// Bytes as "1.5 GiB", "300 MiB", "12 KiB" or "512 bytes".
std::string format_bytes(std::uint64_t bytes);

}  // namespace systolic::cli
