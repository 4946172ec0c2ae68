#include "guest.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>

#include "systolic/qemu_pci/qemu_child.h"

namespace systolic::qemu {

namespace fs = std::filesystem;
using qemu_pci::initramfs_entry;
using kind = initramfs_entry::kind;

namespace {

// `path`'s bytes (its first `most`); `role` names it in the error: "the kernel /boot/x".
std::string read_file(const std::string& role, const std::string& path, std::size_t most = std::size_t(-1)) {
    std::ifstream in(path, std::ios::binary);
    if (!in) throw setup_error(role + " " + path + ": cannot be read");
    std::string bytes;
    if (most == std::size_t(-1)) {
        bytes.assign(std::istreambuf_iterator<char>(in), {});
    } else {
        bytes.resize(most);
        in.read(bytes.data(), std::streamsize(most));
        bytes.resize(std::size_t(in.gcount()));
    }
    return bytes;
}

template <class T>
T little(const std::string& b, std::size_t at) {
    T v = 0;
    for (std::size_t i = 0; i < sizeof(T); ++i)
        v |= T(static_cast<unsigned char>(b[at + i])) << (8 * i);
    return v;
}

// Whether `bytes` are a statically linked x86-64 ELF executable: no program interpreter.
bool static_x86_64(const std::string& b) {
    if (b.size() < 64 ||
        b.compare(0, 4,
                  "\x7f"
                  "ELF") != 0 ||
        b[4] != 2 || b[5] != 1)
        return false;
    if (little<std::uint16_t>(b, 18) != 62) return false;  // EM_X86_64
    const std::uint64_t phoff = little<std::uint64_t>(b, 32);
    const std::uint16_t phentsize = little<std::uint16_t>(b, 54), phnum = little<std::uint16_t>(b, 56);
    if (phentsize < 4) return false;
    for (std::uint16_t i = 0; i < phnum; ++i) {
        const std::uint64_t at = phoff + std::uint64_t(i) * phentsize;
        if (at + 4 > b.size()) return false;
        if (little<std::uint32_t>(b, at) == 3) return false;  // PT_INTERP: dynamically linked
    }
    return true;
}

// `text` as one word of a POSIX shell command line.
std::string quoted(const std::string& text) {
    std::string q = "'";
    for (char c : text)
        q += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return q + "'";
}

std::string exe_dir() {
    std::error_code ec;
    const fs::path self = fs::read_symlink("/proc/self/exe", ec);
    return ec ? std::string(".") : self.parent_path().string();
}

// The newest vmlinuz-* in dir, or nothing.
std::optional<std::string> newest_kernel(const fs::path& dir) {
    std::optional<std::string> best;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.path().filename().string().rfind("vmlinuz-", 0) == 0 && (!best || e.path().string() > *best))
            best = e.path().string();
    return best;
}

// dir's files under `to` in the archive, directories first.
void add_tree(const fs::path& from, const std::string& to, std::vector<initramfs_entry>& out) {
    std::error_code ec;
    if (fs::is_directory(from, ec)) {
        out.push_back({kind::directory, to, "", 0755});
        std::vector<fs::path> children;
        for (const auto& e : fs::directory_iterator(from, ec))
            children.push_back(e.path());
        std::sort(children.begin(), children.end());
        for (const fs::path& c : children)
            add_tree(c, to + "/" + c.filename().string(), out);
        return;
    }
    if (!fs::is_regular_file(from, ec))
        throw setup_error("--guest-file " + from.string() + ": not a file or directory");
    // As the host has it, so that a program or script among the files can be run.
    const auto executable = fs::status(from, ec).permissions() & fs::perms::owner_exec;
    out.push_back({kind::file, to, read_file("--guest-file", from.string()),
                   executable != fs::perms::none ? 0755u : 0644u});
}

}  // namespace

void check_qemu(const std::string& binary) {
    const auto v = qemu_pci::version_of(binary);
    if (!v)
        throw setup_error(binary +
                          " cannot be run (Debian: apt-get install qemu-system-x86, or --qemu BINARY)");
    if (v->major != qemu_major || v->minor != qemu_minor)
        throw setup_error(binary + " is QEMU " + std::to_string(v->major) + "." + std::to_string(v->minor) +
                          ": the multi-process PCI link is QEMU-private, and systolic-qemu speaks QEMU " +
                          std::to_string(qemu_major) + "." + std::to_string(qemu_minor) + "'s (Debian 12's)");
    for (const char* device : {"x-pci-proxy-dev", "ivshmem-doorbell"})
        if (!qemu_pci::has_device(binary, device))
            throw setup_error(binary + " has no " + device + " device");
}

std::string default_kernel() {
#ifdef SYSTOLIC_GUEST_KERNEL_DIR
    if (auto k = newest_kernel(fs::path(SYSTOLIC_GUEST_KERNEL_DIR) / "boot")) return *k;
#endif
    if (auto k = newest_kernel("/boot")) return *k;
    throw setup_error("no guest kernel: scripts/setup downloads Debian's, or give --kernel FILE");
}

std::string kernel_release(const std::string& bzimage) {
    // The x86 boot protocol: "HdrS" at 0x202, the version string at 0x200 + kernel_version (0x20e).
    const std::string head = read_file("the kernel", bzimage, 64 * 1024);
    if (head.size() < 0x210 || head.compare(0x202, 4, "HdrS") != 0)
        throw setup_error("the kernel " + bzimage + ": not a Linux x86 kernel (bzImage)");
    const std::size_t at = 0x200 + little<std::uint16_t>(head, 0x20e);
    const std::size_t end = head.find_first_of(std::string(" \0", 2), at);
    if (at >= head.size() || end == std::string::npos || end == at)
        throw setup_error("the kernel " + bzimage + ": its header names no release");
    return head.substr(at, end - at);
}

std::string module_release(const std::string& module) {
    const std::string bytes = read_file("the driver", module);
    const std::string key = std::string("\0vermagic=", 10);
    const std::size_t at = bytes.find(key);
    if (at == std::string::npos) throw setup_error(module + ": not a Linux kernel module (no vermagic)");
    const std::size_t from = at + key.size(), end = bytes.find(' ', from);
    return bytes.substr(from, end == std::string::npos ? std::string::npos : end - from);
}

guest_parts find_guest_parts(const std::string& release) {
    const fs::path here = exe_dir();
    guest_parts p;
    std::error_code ec;
    // The build tree (guest/ beside the executable, the driver in linux/module/<release>/), then the
    // install (share/systolic/qemu/, share/systolic/linux/<release>/).
    const fs::path share = here / ".." / "share" / "systolic";
    for (const fs::path& exit : {here / "guest" / "systolic-exit", share / "qemu" / "systolic-exit"})
        if (fs::exists(exit, ec)) {
            p.exit_writer = exit.lexically_normal().string();
            break;
        }
    if (p.exit_writer.empty())
        throw setup_error("systolic-exit, the guest's test-exit writer, is not installed");
    const fs::path modules[] = {here / ".." / "linux" / "module" / release / "systolic.ko",
                                share / "linux" / release / "systolic.ko"};
    for (const fs::path& module : modules)
        if (fs::exists(module, ec)) {
            p.module = module.lexically_normal().string();
            break;
        }
    if (p.module.empty())
        throw setup_error("no driver was built for Linux " + release + " (it needs Debian's linux-headers-" +
                          release + ": scripts/setup installs them), nor installed in " +
                          modules[1].lexically_normal().parent_path().string());
    for (const fs::path& tests :
         {here / ".." / "linux" / "systolic-linux-test", share / "qemu" / "systolic-linux-test"})
        if (fs::exists(tests, ec)) {
            p.driver_tests = tests.lexically_normal().string();
            break;
        }
    p.busybox = "/bin/busybox";
    if (!fs::exists(p.busybox, ec))
        throw setup_error("no /bin/busybox for the guest (apt-get install busybox-static)");
    return p;
}

guest_payload guest_payload_of(const std::vector<std::string>& run,
                               const std::vector<std::string>& guest_files) {
    guest_payload p;
    if (!run.empty()) {
        const std::string program = read_file("--run", run[0]);
        if (program.compare(0, 2, "#!") != 0 && !static_x86_64(program))
            throw setup_error("--run " + run[0] +
                              ": not a static x86-64 executable or a script (the guest has no libraries)");
        const std::string name = fs::path(run[0]).filename().string();
        p.files.push_back({kind::directory, "usr/local", "", 0755});
        p.files.push_back({kind::directory, "usr/local/bin", "", 0755});
        p.files.push_back({kind::file, "usr/local/bin/" + name, program, 0755});
        p.command = quoted("/usr/local/bin/" + name);
        for (std::size_t i = 1; i < run.size(); ++i)
            p.command += " " + quoted(run[i]);
    }
    for (const std::string& f : guest_files) {
        const std::string name = fs::path(f).lexically_normal().filename().string();
        if (name.empty() || name == "." || name == "..")
            throw setup_error("--guest-file " + f + ": names no file");
        add_tree(f, "data/" + name, p.files);
    }
    return p;
}

std::vector<initramfs_entry> guest_image(const guest_parts& parts, const guest_payload& user) {
    std::vector<initramfs_entry> e = {
        {kind::directory, "bin", "", 0755},         {kind::directory, "dev", "", 0755},
        {kind::directory, "proc", "", 0755},        {kind::directory, "sys", "", 0755},
        {kind::directory, "tmp", "", 01777},        {kind::directory, "lib", "", 0755},
        {kind::directory, "lib/modules", "", 0755}, {kind::directory, "usr", "", 0755},
        {kind::directory, "data", "", 0755}};
    e.push_back(qemu_pci::file_from(parts.busybox, "bin/busybox"));
    e.push_back(qemu_pci::file_from(parts.exit_writer, "bin/systolic-exit"));
    e.push_back(qemu_pci::file_from(parts.module, "lib/modules/systolic.ko", 0644));
    e.insert(e.end(), user.files.begin(), user.files.end());
    const std::string& command = user.command;
    // The program's status goes to the test-exit register; a driver that does not load or unload
    // is a failure of its own, said on the console.
    e.push_back({kind::file, "init",
                 "#!/bin/busybox sh\n"
                 "/bin/busybox mount -t proc proc /proc\n"
                 "/bin/busybox mount -t sysfs sysfs /sys\n"
                 "/bin/busybox mount -t devtmpfs devtmpfs /dev\n"
                 "/bin/busybox --install -s /bin\n"
                 "export PATH=/usr/local/bin:/bin HOME=/tmp\n"
                 "cd /data\n"
                 "if insmod /lib/modules/systolic.ko; then\n"
                 "  " +
                     (command.empty() ? std::string("true") : command) +
                     "\n"
                     "  status=$?\n"
                     "  if ! rmmod systolic; then\n"
                     "    echo 'systolic-qemu: the driver did not unload'\n"
                     "    [ $status -eq 0 ] && status=1\n"
                     "  fi\n"
                     "else\n"
                     "  echo 'systolic-qemu: the driver did not load'\n"
                     "  status=1\n"
                     "fi\n"
                     "systolic-exit $status\n"
                     "poweroff -f\n",
                 0755});
    return e;
}

std::vector<std::string> qemu_args(const std::string& kernel, const std::string& initrd,
                                   const std::string& append) {
    return {"-M",          "pc,memory-backend=mem",
            "-m",          std::to_string(guest_ram_mib) + "M",
            "-object",     "memory-backend-memfd,id=mem,size=" + std::to_string(guest_ram_mib) + "M,share=on",
            "-nodefaults", "-display",
            "none",        "-monitor",
            "none",        "-no-reboot",
            "-chardev",    "socket,id=console,fd=5",
            "-serial",     "chardev:console",
            "-kernel",     kernel,
            "-initrd",     initrd,
            "-append",     append,
            "-device",     "x-pci-proxy-dev,id=accel,fd=3",
            "-chardev",    "socket,id=doorbell,fd=4",
            "-device",     "ivshmem-doorbell,chardev=doorbell,vectors=1"};
}

}  // namespace systolic::qemu
