// How every executable opens a file it reads: regular files only, opened without blocking and
// checked on the open descriptor, so a FIFO, a device, a socket or a directory is refused at once
// (and swapping the file after a check cannot sneak one in), and whole-file reads are capped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "io/error.h"

namespace systolic::io {

// The most a text input (a script, a topology, a sweep or job file) may hold.
constexpr std::uint64_t text_input_limit = std::uint64_t(64) << 20;

class input_file {
public:
    // Throws io_error "PATH: cannot open: ..." for a missing file or anything but a regular file.
    explicit input_file(const std::string& path);
    ~input_file();
    input_file(const input_file&) = delete;
    input_file& operator=(const input_file&) = delete;

    const std::string& path() const { return m_path; }
    // The size fstat reports. A /proc or /sys file reports 0 (or a page) whatever it holds:
    // known_size() refuses such a file where the size matters.
    std::uint64_t size() const { return m_size; }
    // size(), after making sure a file that reports 0 bytes really is empty.
    std::uint64_t known_size();
    // Exactly n bytes from the current position; false on a short read or an error.
    bool read(void* dst, std::size_t n);
    // The rest of the file, read to its end (so a /proc file gives what it holds); io_error
    // "PATH: larger than ..." once it passes `limit` bytes.
    std::string read_all(std::uint64_t limit);

private:
    std::string m_path;
    int m_fd = -1;
    std::uint64_t m_size = 0;
};

// input_file(path).read_all(limit).
std::string read_text_file(const std::string& path, std::uint64_t limit = text_input_limit);

}  // namespace systolic::io
