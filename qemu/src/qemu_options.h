// systolic-qemu's command line: the options, parsed and checked. Its own unit, compiled cold, as
// every command line's is (docs/performance.md).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <systemc>
#include <vector>

#include "energy_options.h"
#include "output_options.h"
#include "systolic/job_names.h"
#include "systolic/qemu_pci/pci_device.h"
#include "systolic/verify/fault_names.h"

namespace systolic::qemu {

struct qemu_options {
    std::size_t array = 16;  // N: an N x N array
    engine_kind engine = engine_kind::cycle;
    verify::fault inject = verify::fault::none;
    qemu_pci::time_mode time = qemu_pci::time_mode::settle;
    sc_core::sc_time quantum = sc_core::sc_time(1, sc_core::SC_US);
    std::chrono::milliseconds timeout{std::chrono::minutes(10)};  // wall-clock
    std::string qemu = "qemu-system-x86_64";
    std::optional<std::string> kernel, initrd;  // nothing: the defaults
    std::string append = "console=ttyS0 quiet panic=-1";
    std::vector<std::string> qemu_args;    // --qemu-arg: appended to QEMU's command line
    std::vector<std::string> run;          // PROG ARGS...; empty: the built-in example
    std::vector<std::string> guest_files;  // --guest-file: copied to /data in the guest
    std::optional<std::string> json;
    cli::output_options outputs;  // --vcd, --trace, --log-level
    cli::energy_options energy;   // --energy, --tech-node
};

// Parses argv into o and sets the log level. Everything after `--run PROG` is PROG's arguments.
// Returns the exit status when the program is done (help: 0; bad usage: one line on stderr,
// `usage_status`), nothing otherwise.
std::optional<int> parse_options(int argc, char* argv[], qemu_options& o, int usage_status);

}  // namespace systolic::qemu
