// The job script that systolic-vp's CPU runs (docs/virtual-platform.md describes the format): one
// command per line, `#` starts a comment, words are separated by blanks, and a command's options are
// key=value words. Parsing is plain C++ (no SystemC), and it is complete: every number is read whole
// and checked against its range, every name against its one list (the register map's, for register
// values and job options), every key is known, and every job is laid out in the platform's RAM. So
// a bad script is refused with its file and line before the platform starts, and the CPU only runs
// what was parsed.
#pragma once

#include <systolic/accelerator_regs.h>

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "systolic/accelerator_map.h"
#include "systolic/job.h"
#include "systolic/job_names.h"
#include "systolic/matrix_layout.h"
#include "systolic/names.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tiling.h"

namespace systolic::vp {

struct script_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The platform's RAM, as the script sees it (addresses in scripts are bus addresses); the CPU's
// configuration takes its defaults from here.
struct ram_window {
    std::uint64_t base = 0x80000000;
    std::uint64_t size = 16 << 20;
};

// Where a job's matrices lie: A, B, C and, with partial sums over two chunks or more, the
// partial-sum buffer (rows == 0 otherwise); the per-column vectors' place is the job's
// run.quant.columns->base. `scratch` is the span from the RAM's base that the job
// fills and loads before it starts.
struct job_layout {
    matrix_layout a, b, c, partial;
    std::uint64_t scratch = 0;
};

// What a job ends with, expected (the `expect` key) or seen: completion, or the accelerator's
// refusal with an ERROR code (regmap::error_values names them).
struct job_outcome {
    std::uint32_t error = SYSTOLIC_ERR_NONE;  // SYSTOLIC_ERR_*; NONE: the job completes

    bool ok() const { return error == SYSTOLIC_ERR_NONE; }
    std::string name() const;  // "ok", or the error's name, ERR_<NAME>
    bool operator==(const job_outcome& o) const { return error == o.error; }
    bool operator!=(const job_outcome& o) const { return error != o.error; }
};

// One `job` command's options. The parser sets every field, from the option or from its default
// (docs/virtual-platform.md); a named option takes only the values its register has a code for.
struct job_spec {
    systolic::dtype dtype = systolic::dtype::int32;
    bool seed_data = false;  // the seeds' 3x3 example instead of seeded random data
    std::uint64_t m = 0, k = 0, p = 0, seed = 1;
    // How the job runs (order, k_tile, policy, overflow, int8 output, dataflow), as the registers
    // take it; run.quant.columns when the job has per-column vectors, placed by the layout.
    run_options run;
    // scales= and zero_points=: P per-column scales, P zero points (empty without them; with
    // zero points alone, the tensor's scale for every column).
    std::vector<double> scales;
    std::vector<std::int32_t> zero_points;
    std::uint32_t a_stride = 0, b_stride = 0, c_stride = 0;
    bool use_irq = true;
    std::optional<std::uint64_t> timeout_ps;  // default: the CPU's
    job_outcome expected;
    job_layout layout;
};

// A script's commands, one per line.
enum class verb { job, write, read, poll, wait_irq, delay, mem, expect_mem, print };
inline constexpr enum_name<verb> verb_names[] = {
    {verb::job, "job", "run a matrix multiply through the driver and check it"},
    {verb::write, "write", "write a register"},
    {verb::read, "read", "read a register, optionally comparing it with a value"},
    {verb::poll, "poll", "read a register until its masked bits hold a value"},
    {verb::wait_irq, "wait-irq", "wait for the interrupt"},
    {verb::delay, "delay", "let simulated time pass"},
    {verb::mem, "mem", "write values into RAM"},
    {verb::expect_mem, "expect-mem", "compare RAM with values"},
    {verb::print, "print", "print a register and its value's name"},
};
static_assert(names_in_order(verb_names));
constexpr const char* to_string(verb v) {
    return name_of(verb_names, v);
}

struct command {
    int line = 0;
    vp::verb verb = vp::verb::job;
    std::vector<std::string> args;            // positional words after the verb
    std::map<std::string, std::string> keys;  // key=value words
    std::string text;                         // the line as written, control characters escaped

    // What the words mean, by verb.
    std::uint32_t reg = 0;                 // write, read, poll, print: the register's offset
    std::uint32_t value = 0, mask = 0;     // write, read ==, poll
    std::optional<std::uint64_t> time_ps;  // delay, wait-irq, poll: the time given, if any
    std::uint64_t address = 0;             // mem, expect-mem
    std::vector<std::uint8_t> bytes;       // mem, expect-mem: the values, little-endian
    job_spec job;                          // job
};

// Parses a script against the platform's RAM; throws script_error("<name>:<line>: ...") for text
// that is not UTF-8, an unknown verb, key or name, a missing or surplus argument, a value out of
// range, or a job that does not fit.
std::vector<command> parse_script(std::string_view text, const std::string& name, const ram_window& ram = {});

// A whole number: decimal digits, or 0x and hex digits; with `allow_negative`, optionally preceded
// by '-' (the result is then the number's two's complement).
std::optional<std::uint64_t> parse_number(std::string_view s, bool allow_negative = false);

// A register by name (ID, CTRL, ..., as in SYSTOLIC_REG_<name>) or a numeric offset.
std::optional<std::uint32_t> register_offset(std::string_view s);
// A value for a register: a 32-bit number (negative ones from -2^31, as two's complement), or names
// of its fields or values joined by '|' (START|IRQ_EN, INT8, OVERLAP, ...), from the register map.
std::optional<std::uint32_t> register_value(std::uint32_t offset, std::string_view s);
// The name of a register value (ERROR codes and other enumerations), or the number.
std::string value_name(std::uint32_t offset, std::uint32_t value);

}  // namespace systolic::vp
