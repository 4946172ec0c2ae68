// The guest systolic-qemu boots: the checks before QEMU starts (the QEMU, the kernel, the driver,
// the program), the initramfs it builds (busybox, the driver, the test-exit writer, the user's
// program and files, an /init that ties them), and QEMU's command line. Plain C++, no SystemC.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "systolic/qemu_pci/initramfs.h"

namespace systolic::qemu {

// Something the run needs is missing or unusable (exit 2): one line.
struct setup_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// The QEMU this platform speaks to: the multi-process link is QEMU-private, so only the version it
// was written against (7.2, Debian 12's) is accepted, with its proxy and doorbell devices.
inline constexpr int qemu_major = 7, qemu_minor = 2;
void check_qemu(const std::string& binary);

// The guest's kernel when none is given: the one scripts/setup downloads into the build tree, else
// the newest /boot/vmlinuz-*.
std::string default_kernel();
// The release a bzImage names in its header ("6.1.0-57-amd64"), and the one a module was built for
// (its vermagic).
std::string kernel_release(const std::string& bzimage);
std::string module_release(const std::string& module);

// The guest's own files: busybox (static), the test-exit writer, the driver, and the driver's tests
// (linux/tests), whose seed job is what the guest runs when no program is given.
struct guest_parts {
    std::string busybox, exit_writer, module, driver_tests;
};
// The driver built for the kernel release `release`, and the rest: in the build tree, else where the
// install put them.
guest_parts find_guest_parts(const std::string& release);

// What the user gives the guest, read and checked before anything else: the program `run[0]` in
// /usr/local/bin with its command line (run's other words), and each guest file or directory under
// /data. A program that is no static x86-64 executable or script, or a file that cannot be read, is
// a setup_error naming its option.
struct guest_payload {
    std::vector<qemu_pci::initramfs_entry> files;
    std::string command;  // the shell command that runs the program; empty: none
};
guest_payload guest_payload_of(const std::vector<std::string>& run,
                               const std::vector<std::string>& guest_files);

// The initramfs: busybox, the driver in /lib/modules, systolic-exit, the user's payload, and /init,
// which loads the driver, runs the program, unloads the driver, writes the program's status to the
// test-exit register and powers off.
std::vector<qemu_pci::initramfs_entry> guest_image(const guest_parts& parts, const guest_payload& user);

// The guest's RAM, which QEMU shares with this process as a memfd.
inline constexpr unsigned guest_ram_mib = 512;

// QEMU's arguments: fd 3 is the accelerator's link, fd 4 the doorbell's, fd 5 the serial console.
std::vector<std::string> qemu_args(const std::string& kernel, const std::string& initrd,
                                   const std::string& append);

}  // namespace systolic::qemu
