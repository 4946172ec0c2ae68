#include "io/text.h"

#include <sys/stat.h>

#include <cstdio>
#include <cstring>

namespace systolic::io {

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7f) {
            char hex[8];
            std::snprintf(hex, sizeof hex, "\\x%02x", u);
            out += hex;
        } else {
            out += c;
        }
    }
    return out;
}

std::string hex(std::uint64_t v) {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
    return buf;
}

std::string file_kind(unsigned mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

std::string errno_text(int err) {
    return err != 0 ? std::string(std::strerror(err)) : "unknown error";
}

text_position find_invalid_utf8(std::string_view s) {
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

std::string utf8_error(std::string_view text, const std::string& source) {
    const text_position p = find_invalid_utf8(text);
    if (p.line == 0) return {};
    char buf[64];
    std::snprintf(buf, sizeof buf, ": not UTF-8 text (byte 0x%02x at column %zu)", p.byte, p.column);
    return source + ":" + std::to_string(p.line) + buf;
}

std::string bom_error(std::string_view text, const std::string& source, const std::string& reader,
                      const std::string& what) {
    if (text.substr(0, 3) != "\xef\xbb\xbf") return {};
    return source + ":1: the file starts with a UTF-8 byte order mark (EF BB BF), which " + reader +
           " reads as part of " + what + "; save it without one";
}

}  // namespace systolic::io
