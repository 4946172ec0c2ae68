// systolic-tb's outputs, all-or-nothing: every path is checked before the job runs, every file is
// written to a temporary next to it and flushed, and only when all of them (and stdout) succeeded are
// they renamed into place. A failure leaves no output and no temporary behind.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace systolic::tb {

struct named_path {
    std::string option;  // "--c-out", "--a", ... for messages
    std::string path;
};

// Refuses (usage_error) an empty path, an output that is an input or another output (the same file,
// however spelled, hard links included), an existing output that is not a regular file (a device, a
// FIFO, a directory: it would be replaced by a file, or a rename would hit /dev/null), and an output
// whose directory does not exist.
void check_output_paths(const std::vector<named_path>& outputs, const std::vector<named_path>& inputs);

class output_set {
public:
    output_set() = default;
    output_set(const output_set&) = delete;
    output_set& operator=(const output_set&) = delete;
    ~output_set();  // removes the temporaries of anything not committed

    // The bytes of one file, as pieces that must stay alive until prepare() returns.
    void add(const std::string& path, std::vector<std::string_view> pieces);
    // A file the caller writes itself while the job runs: creates its temporary now and returns the
    // descriptor (the caller writes, syncs and closes it before prepare()). Throws std::runtime_error
    // with one line if the temporary cannot be created. Removed like the others unless committed.
    int add_streamed(const std::string& path);
    // Writes and flushes every temporary; on failure removes them all and throws std::runtime_error
    // with a one-line message that starts with the path.
    void prepare();
    // Renames every temporary into place (re-checking that the target is still not a special file).
    void commit();

private:
    struct entry {
        std::string path;
        std::string temp;
        std::vector<std::string_view> pieces;
        bool written = false;
        bool committed = false;
        bool streamed = false;  // written by the caller
    };
    void discard();
    static std::string temp_for(const std::string& path);
    std::vector<entry> m_entries;
};

// Writes text to stdout and flushes it; false if either failed (a full disk, a closed descriptor).
bool write_stdout(std::string_view text);

}  // namespace systolic::tb
