// libFuzzer target: systolic-run --merge's job-file reader on arbitrary text. Every input must
// either give a record whose fields are in their ranges and which writes back as a job file that
// reads back the same (what --merge reports is what the file held), or be refused with a
// report_error whose message is one line; anything else is a bug. Seeds: fuzz/corpus/job_file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "run_report.h"
#include "topology.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace systolic::run;
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    try {
        const layer_record r = parse_job_file(text, "fuzz.json");
        if (r.m == 0 || r.k == 0 || r.p == 0) std::abort();
        if (r.m > max_dimension || r.k > max_dimension || r.p > max_dimension) std::abort();
        if (r.layer_id >= r.layers_in_topology || r.macs_real > r.macs_padded) std::abort();
        const std::string again = job_file_text(r);
        if (job_file_text(parse_job_file(again, "again.json")) != again) std::abort();
    } catch (const report_error& e) {
        if (std::string(e.what()).find('\n') != std::string::npos) std::abort();  // one line
    }
    return 0;
}
