// A Linux initramfs (the kernel's "newc" cpio archive, uncompressed) written from a list of entries:
// the guest's busybox, its /init and the programs it runs, with no cpio tool. Plain C++.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace systolic::qemu_pci {

struct initramfs_entry {
    enum class kind { directory, file, symlink };
    kind type = kind::file;
    std::string path;      // inside the archive, without a leading '/': "bin/busybox"
    std::string contents;  // a file's bytes, or a symlink's target
    std::uint32_t permissions = 0755;
};

// The file at host_path as an entry at path (throws std::runtime_error naming it when it cannot be read).
initramfs_entry file_from(const std::string& host_path, const std::string& path,
                          std::uint32_t permissions = 0755);

// Writes the archive to out (throws std::runtime_error naming it when it cannot be written).
void write_initramfs(const std::string& out, const std::vector<initramfs_entry>& entries);

}  // namespace systolic::qemu_pci
