#include "systolic/qemu_pci/initramfs.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace systolic::qemu_pci {

namespace {

// One newc header field: eight hex digits.
void field(std::string& out, std::uint64_t v) {
    char text[9];
    std::snprintf(text, sizeof text, "%08llx", static_cast<unsigned long long>(v & 0xffffffffu));
    out += text;
}

void pad4(std::string& out) {
    while (out.size() % 4)
        out += '\0';
}

void entry(std::string& out, std::uint32_t ino, std::uint32_t mode, const std::string& name,
           const std::string& data) {
    out += "070701";
    for (std::uint64_t v : {std::uint64_t(ino), std::uint64_t(mode), std::uint64_t(0), std::uint64_t(0),
                            std::uint64_t((mode & 0170000) == 0040000 ? 2 : 1), std::uint64_t(0),
                            std::uint64_t(data.size()), std::uint64_t(0), std::uint64_t(0), std::uint64_t(0),
                            std::uint64_t(0), std::uint64_t(name.size() + 1), std::uint64_t(0)})
        field(out, v);
    out += name;
    out += '\0';
    pad4(out);
    out += data;
    pad4(out);
}

}  // namespace

initramfs_entry file_from(const std::string& host_path, const std::string& path, std::uint32_t permissions) {
    std::ifstream in(host_path, std::ios::binary);
    std::ostringstream bytes;
    if (!in || !(bytes << in.rdbuf()))
        throw std::runtime_error("cannot read " + host_path + " for the initramfs");
    return {initramfs_entry::kind::file, path, bytes.str(), permissions};
}

void write_initramfs(const std::string& out, const std::vector<initramfs_entry>& entries) {
    std::string archive;
    std::uint32_t ino = 1;
    for (const initramfs_entry& e : entries) {
        const std::uint32_t type = e.type == initramfs_entry::kind::directory ? 0040000
                                   : e.type == initramfs_entry::kind::symlink ? 0120000
                                                                              : 0100000;
        entry(archive, ino++, type | (e.permissions & 07777), e.path,
              e.type == initramfs_entry::kind::directory ? std::string() : e.contents);
    }
    entry(archive, 0, 0, "TRAILER!!!", "");
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    if (!f || !f.write(archive.data(), std::streamsize(archive.size())) || !f.flush())
        throw std::runtime_error("cannot write the initramfs " + out);
}

}  // namespace systolic::qemu_pci
