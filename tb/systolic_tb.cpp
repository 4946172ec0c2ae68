// systolic-tb: runs one matrix product on the systolic array model and checks it with the
// scoreboard. Exit status: 0 pass, 1 scoreboard or watchdog failure, 2 bad usage or bad input.
#include <cstdlib>
#include <iostream>
#include <memory>
#include <systemc>

#include "cli_options.h"
#include "io/process.h"
#include "systolic/log.h"
#include "tb_job.h"

namespace {

using namespace systolic;
using namespace systolic::tb;

int dispatch(const options& o) {
    return with_format(o.dtype, [&](auto format) {
        using Format = decltype(format);
        std::unique_ptr<verify::testbench<Format>> bench;
        return run_job<Format>(
            o, [&](const typename verify::testbench<Format>::config& cfg) -> verify::testbench<Format>& {
                bench = std::make_unique<verify::testbench<Format>>("tb", cfg);
                return *bench;
            });
    });
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    options o;
    const parse_result parsed = parse_command_line(argc, argv, o);
    try {
        if (!parsed.run) {
            std::cerr << parsed.err;
            if (!parsed.out.empty()) io::write_stdout(parsed.out);
            return parsed.exit_status;
        }
        set_log_level(cli::log_level_of(o.outputs));
        return dispatch(o);
    } catch (const std::exception& e) {  // usage_error, npy_error, out_of_memory, an unwritable output
        std::cerr << "systolic-tb: error: " << one_line(e.what()) << "\n";
        return exit_usage;
    }
}

// Our own entry point, so that SystemC's banner is off before SystemC initialises: stdout carries
// only results (and the JSON report with --json -).
int main(int argc, char* argv[]) {
    if (const int status = io::start("systolic-tb"); status != 0) return status;
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
