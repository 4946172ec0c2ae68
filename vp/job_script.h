// The job script that systolic-vp's CPU runs (docs/virtual-platform.md describes the format): one
// command per line, `#` starts a comment, words are separated by blanks, and a command's options are
// key=value words. Parsing is plain C++, so a bad script is refused, with its line, before the
// platform starts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <systemc>

namespace systolic::vp {

struct script_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct command {
    int line = 0;
    std::string verb;               // job, write, read, poll, wait-irq, delay, mem, expect-mem, print
    std::vector<std::string> args;  // positional words after the verb
    std::map<std::string, std::string> keys;  // key=value words
    std::string text;                         // the line as written, for messages
};

// Parses a script; throws script_error("<name>:<line>: ...") for an unknown verb, a missing or
// surplus argument or an unknown option.
std::vector<command> parse_script(const std::string& text, const std::string& name);

// Numbers: decimal or 0x hex, optionally negative (two's complement in 32 or 64 bits).
std::optional<std::uint64_t> parse_number(const std::string& s);
// Times: a number with a unit, e.g. 10us, 250ns, 1ms, 2s.
std::optional<sc_core::sc_time> parse_time(const std::string& s);

// A register by name (ID, CTRL, ..., as in SYSTOLIC_REG_<name>) or a numeric offset.
std::optional<std::uint32_t> register_offset(const std::string& s);
// A value for a register: a number, or names of its fields or values joined by '|' (START|IRQ_EN,
// INT8, OVERLAP, ...), looked up in the register map.
std::optional<std::uint32_t> register_value(std::uint32_t offset, const std::string& s);
// The name of a register value (ERROR codes and other enumerations), or the number.
std::string value_name(std::uint32_t offset, std::uint32_t value);

}  // namespace systolic::vp
