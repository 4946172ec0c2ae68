// Text from files and command lines, made safe to print in a one-line message.
#pragma once

#include <string>
#include <string_view>

namespace systolic::io {

// `text` with every control character, NUL and DEL written as \xNN, so that a message stays one
// line and is not cut short at a NUL. Other bytes pass unchanged.
std::string printable(std::string_view text);

// What a file that is not a regular one is, for messages: "a directory", "a FIFO", ... (st_mode).
std::string file_kind(unsigned mode);

// The text of errno value `err` ("No such file or directory").
std::string errno_text(int err);

}  // namespace systolic::io
