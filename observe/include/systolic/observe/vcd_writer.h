// A value-change dump (IEEE 1364 VCD) writer: plain C++, no SystemC. Declare the variables by their
// dotted hierarchical names ("tb.array.row_1.pe_1_2.acc"), the scopes follow from the names; then
// move time forward and set values. Only changes are written: setting a variable to the value it
// already has costs a compare. A timestamp is written only when something changes at it, and time
// never goes backwards (a value set "earlier" is written at the current time).
// Wires are up to 64 bits wide and written in binary with leading zeros dropped; reals in the
// shortest text that reads back to the same double.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "systolic/observe/file_sink.h"

namespace systolic::observe {

class vcd_writer {
public:
    using id = std::uint32_t;

    explicit vcd_writer(file_sink& out) : m_out(out) {}

    // Header, before any variable: the timescale ("1 ps", "10 ns", ...), the writing program and free text.
    void set_timescale(std::string ts) { m_timescale = std::move(ts); }
    void set_version(std::string program) { m_version = std::move(program); }
    // A comment already given is not repeated (observers that share the writer each give theirs).
    void add_comment(std::string text) {
        if (std::find(m_comments.begin(), m_comments.end(), text) == m_comments.end())
            m_comments.push_back(std::move(text));
    }

    // A wire of 1..64 bits (kind "wire", or "integer" etc. as the VCD's var type) or a real.
    id add_wire(const std::string& path, unsigned width, const char* kind = "wire");
    // `single`: the values are floats, written in the shortest text that reads back to the same float.
    id add_real(const std::string& path, bool single = false);
    // A text variable (GTKWave's "string" type), e.g. a phase by name; `initial` at time 0. Values
    // must not contain white space.
    id add_string(const std::string& path, const std::string& initial);

    // Writes the header and the initial values (every variable 0) at time 0.
    void end_definitions();

    // Later changes happen at `time` (in timescale units); earlier times are clamped to the last.
    void set_time(std::uint64_t time) {
        if (time > m_time) m_time = time;
    }
    std::uint64_t time() const { return m_time; }

    void set(id v, std::uint64_t bits) {
        var& x = m_vars[v];
        bits &= x.mask;
        if (bits == x.bits) return;
        x.bits = bits;
        emit_wire(x, bits);
    }
    void set_real(id v, double value);
    void set_string(id v, std::string_view text);

    // Flushes and closes the file: "" or what went wrong.
    std::string finish();

private:
    struct var {
        std::string path;
        std::string code;  // the short identifier code
        unsigned width = 1;
        const char* kind = "wire";
        bool real = false;
        bool single = false;
        bool text = false;
        std::string value;  // text variables: the last value written
        std::uint64_t mask = 1;
        std::uint64_t bits = 0;  // the last value written (reals: the double's bits)
    };
    void emit_time() {
        if (m_written_time == m_time && m_time_started) return;
        write_time();
    }
    void write_time();
    void emit_wire(const var& x, std::uint64_t bits);
    static std::string code_for(std::size_t index);

    file_sink& m_out;
    std::string m_timescale = "1 ps";
    std::string m_version = "systolic-tb";  // the program that wrote the file
    std::vector<std::string> m_comments;
    std::vector<var> m_vars;
    std::uint64_t m_time = 0;
    std::uint64_t m_written_time = 0;
    bool m_time_started = false;
};

}  // namespace systolic::observe
