// libFuzzer target: systolic-vp's job-script reader on arbitrary text, against the platform's RAM.
// Every input must either parse into commands that the CPU can run as they are (each job's scratch
// span in RAM, its matrices in RAM when it is expected to complete, every mem command in RAM), or
// be refused with a script_error whose message is one line without control characters; anything
// else (a crash, a sanitizer report, another exception, a hang) is a bug. Seeds: fuzz/corpus/vp_script.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "job_script.h"

namespace {

using namespace systolic;

bool in_ram(const vp::ram_window& ram, address_range r) {
    return r.base >= ram.base && r.end <= address_range::wide{ram.base} + ram.size;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    const vp::ram_window ram;
    try {
        for (const vp::command& c : vp::parse_script(text, "fuzz.vps", ram)) {
            for (const char ch : c.text)
                if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();
            if (c.verb == vp::verb::mem || c.verb == vp::verb::expect_mem) {
                if (c.bytes.empty() ||
                    !in_ram(ram, {c.address, address_range::wide{c.address} + c.bytes.size()}))
                    std::abort();
            } else if (c.verb == vp::verb::job) {
                const vp::job_layout& l = c.job.layout;
                if (l.scratch > ram.size) std::abort();
                if (c.job.expected.ok())
                    for (const matrix_layout* m : {&l.a, &l.b, &l.c, &l.partial})
                        if (!m->range().empty() && !in_ram(ram, m->range())) std::abort();
            } else if (c.verb == vp::verb::delay && !c.time_ps) {
                std::abort();
            }
        }
    } catch (const vp::script_error& e) {
        for (const char ch : std::string(e.what()))
            if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();  // one line, printable
    }
    return 0;
}
