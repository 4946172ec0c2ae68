// A file written while the job runs, through a large buffer: appends are memcpys, and the kernel sees
// one write per megabyte. The first failure is remembered (later appends are dropped) and reported
// by finish(), which flushes, syncs and closes. Plain C++; the caller owns the path (an
// output_set's temporary, so that a failed run leaves nothing behind).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace systolic::observe {

class file_sink {
public:
    // Takes ownership of an open, writable descriptor.
    explicit file_sink(int fd, std::string name);
    file_sink(const file_sink&) = delete;
    file_sink& operator=(const file_sink&) = delete;
    ~file_sink();  // closes the descriptor if finish() was not called

    void append(std::string_view text) {
        if (m_buf.size() + text.size() > capacity) flush();
        m_buf.append(text.data(), text.size());
    }
    void append(char c) {
        if (m_buf.size() + 1 > capacity) flush();
        m_buf.push_back(c);
    }
    // Room for `n` more bytes at the end of the buffer, to format into directly; commit() the count.
    char* reserve(std::size_t n) {
        if (m_buf.size() + n > capacity) flush();
        m_mark = m_buf.size();
        m_buf.resize(m_mark + n);
        return &m_buf[m_mark];
    }
    void commit(std::size_t used) { m_buf.resize(m_mark + used); }

    std::uint64_t bytes() const { return m_written + m_buf.size(); }
    // Flushes, syncs and closes. Returns "" or what went wrong (one line, naming the file).
    std::string finish();

private:
    static constexpr std::size_t capacity = std::size_t(1) << 20;
    void flush();

    int m_fd;
    std::string m_name;
    std::string m_buf;
    std::size_t m_mark = 0;
    std::uint64_t m_written = 0;
    std::string m_error;
};

}  // namespace systolic::observe
