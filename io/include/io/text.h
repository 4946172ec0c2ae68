// Text from files and command lines: the check that it is UTF-8, made before anything is parsed so
// that a bad byte is named with its line, and the escaping that keeps a message on one line.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace systolic::io {

// `text` with every control character, NUL and DEL written as \xNN, so that a message stays one
// line and is not cut short at a NUL. Other bytes pass unchanged.
std::string printable(std::string_view text);

// "0x" and the lowercase hexadecimal digits of `v`, for addresses and codes in messages.
std::string hex(std::uint64_t v);

// What a file that is not a regular one is, for messages: "a directory", "a FIFO", ... (st_mode).
std::string file_kind(unsigned mode);

// The text of errno value `err` ("No such file or directory").
std::string errno_text(int err);

// Where the first byte that is not well-formed UTF-8 lies: line and column (bytes), 1-based;
// line 0 when the whole text is UTF-8. Overlong forms, surrogates and code points past U+10FFFF
// are not UTF-8 (RFC 3629).
struct text_position {
    std::size_t line = 0, column = 0;
    unsigned char byte = 0;
};
text_position find_invalid_utf8(std::string_view text);

// "<source>:<line>: not UTF-8 text (byte 0xNN at column C)", or empty when the text is UTF-8.
std::string utf8_error(std::string_view text, const std::string& source);

// "<source>:1: the file starts with a UTF-8 byte order mark (EF BB BF), which <reader> reads as
// part of <what>; save it without one", or empty when the text does not start with one. Every
// reader of SCALE-Sim's files (topologies, .cfg) says it the same way, so the mark is named and
// never printed raw.
std::string bom_error(std::string_view text, const std::string& source, const std::string& reader,
                      const std::string& what);

}  // namespace systolic::io
