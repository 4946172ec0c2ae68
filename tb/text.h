// Text that the executables read from files (topologies, job scripts, job files): the check that it
// is UTF-8, made before anything is parsed so that a bad byte is named with its line, and the
// escaping of control characters in what is printed back. Plain C++, header-only, so that the fuzz
// targets use the same code.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

namespace systolic::tb {

// Where the first byte that is not well-formed UTF-8 lies: line and column (bytes), 1-based;
// line 0 when the whole text is UTF-8. Overlong forms, surrogates and code points past U+10FFFF
// are not UTF-8 (RFC 3629).
struct text_position {
    std::size_t line = 0, column = 0;
    unsigned char byte = 0;
};

inline text_position find_invalid_utf8(std::string_view s) {
    std::size_t line = 1, line_start = 0;
    for (std::size_t i = 0; i < s.size();) {
        const auto b = static_cast<unsigned char>(s[i]);
        if (b == '\n') {
            ++line;
            line_start = ++i;
            continue;
        }
        std::size_t n = 0;
        unsigned char lo = 0x80, hi = 0xbf;  // the range of the second byte
        if (b < 0x80) {
            ++i;
            continue;
        } else if (b >= 0xc2 && b <= 0xdf) {
            n = 1;
        } else if (b >= 0xe0 && b <= 0xef) {
            n = 2;
            if (b == 0xe0) lo = 0xa0;  // overlong
            if (b == 0xed) hi = 0x9f;  // surrogates
        } else if (b >= 0xf0 && b <= 0xf4) {
            n = 3;
            if (b == 0xf0) lo = 0x90;  // overlong
            if (b == 0xf4) hi = 0x8f;  // past U+10FFFF
        } else {
            return {line, i - line_start + 1, b};
        }
        for (std::size_t k = 1; k <= n; ++k) {
            const auto c = i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0;
            if (i + k >= s.size() || c < (k == 1 ? lo : 0x80) || c > (k == 1 ? hi : 0xbf))
                return {line, i - line_start + 1, b};
        }
        i += n + 1;
    }
    return {};
}

// "<source>:<line>: not UTF-8 text (byte 0xNN at column C)", or empty when the text is UTF-8.
inline std::string utf8_error(std::string_view text, const std::string& source) {
    const text_position p = find_invalid_utf8(text);
    if (p.line == 0) return {};
    char buf[64];
    std::snprintf(buf, sizeof buf, ": not UTF-8 text (byte 0x%02x at column %zu)", p.byte, p.column);
    return source + ":" + std::to_string(p.line) + buf;
}

// The text with every control character (below 0x20, and 0x7f) written as \xNN, so that what a
// file holds cannot cut a message short, clear a terminal or start a new line.
inline std::string printable(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (const char ch : s) {
        const auto c = static_cast<unsigned char>(ch);
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\x%02x", c);
            out += buf;
        } else {
            out += ch;
        }
    }
    return out;
}

}  // namespace systolic::tb
