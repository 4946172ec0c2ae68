// Every file an executable writes, all or nothing (docs/reliability.md):
//  - add() checks an output before the job runs: not empty, not an input nor another output
//    (compared by device and inode, so spellings, symlinks and hard links are caught), not an
//    existing symlink, device, FIFO, socket or directory (a rename would replace it), in a
//    directory that exists, with a name the file system accepts; and it creates the output's
//    temporary there at once, so an unwritable place is found now and not after the job;
//  - prepare() writes and fsyncs every temporary; commit() renames them into place only when all
//    are complete (stdout is written in between), as one transaction: every target is checked
//    again before the first rename, and a rename that fails puts back the previous files of those
//    already renamed, so the outputs are all new or all as they were;
//  - any failure, a destructor before commit(), or a SIGINT/SIGTERM/SIGHUP (io/process.h) removes
//    every temporary.
// Temporaries are ".systolic-PID-N.tmp" beside their outputs, short whatever the output's name.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "io/error.h"
#include "io/process.h"

namespace systolic::io {

struct named_path {
    std::string option;  // "--c-out", "--topology", ... for messages
    std::string path;
};

class output_set {
public:
    output_set() = default;
    output_set(const output_set&) = delete;
    output_set& operator=(const output_set&) = delete;
    ~output_set();  // removes every temporary (and created directory) not committed

    // An input that no output may be; one that does not exist is skipped (its reader says so).
    void add_input(const named_path& input);
    // Checks an output against the rules above and creates its temporary; io_error if refused.
    void add(const named_path& output);
    // Creates the directory `dir.path` (never its parents) unless it exists; it is removed again
    // on failure if it is still empty. io_error if it cannot be, or is an input.
    void make_directory(const named_path& dir);

    // The bytes of the output added as `path`, as pieces that must stay alive until prepare()
    // returns. An output given no bytes (and not streamed) is left as it was.
    void set(const std::string& path, std::vector<std::string_view> pieces);
    // The temporary of the output added as `path`, open for writing while the job runs; the
    // caller owns the descriptor and syncs and closes it before prepare().
    int stream(const std::string& path);
    // Writes and fsyncs every temporary that set() gave bytes; io_error (all removed) on failure.
    void prepare();
    // Renames every written temporary into place, all or none: it first re-checks that no target
    // has become a special file, then renames with SIGINT, SIGTERM and SIGHUP held, keeping each
    // previous file (a hard link) until all are in place; then syncs the directories.
    void commit();

private:
    struct entry {
        named_path out;
        std::string temp;
        cleanup::slot* slot = nullptr;
        std::vector<std::string_view> pieces;
        bool has_bytes = false;
        bool streamed = false;
    };
    entry& find(const std::string& path);
    void discard();

    std::vector<named_path> m_inputs;
    std::vector<entry> m_entries;
    struct created_dir {
        std::string path;
        cleanup::slot* slot = nullptr;
    };
    std::vector<created_dir> m_dirs;
    bool m_committed = false;
};

// One file through an output_set: checked against `inputs`, written, synced and renamed.
void write_file(const named_path& output, std::vector<std::string_view> pieces,
                const std::vector<named_path>& inputs = {});

}  // namespace systolic::io
