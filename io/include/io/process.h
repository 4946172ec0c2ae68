// What every executable does first and last: its standard descriptors, its signals and its stdout.
//
// A SIGINT, SIGTERM or SIGHUP removes every temporary an output_set holds (and any directory it
// created, if empty) and then ends the process by that signal, so the shell reports 128 + the
// signal's number (130, 143, 129). SIGPIPE is ignored: a closed pipe is a failed write on stdout,
// which is reported like any other.
#pragma once

#include <string>
#include <string_view>

#include "io/error.h"

namespace systolic::io {

// Call first in main(). Puts /dev/null on a closed stdin or stderr (so that no file opened later
// takes their number), ignores SIGPIPE and installs the signal handlers. A closed stdout would take
// a later file's output: returns 2 after one line on stderr then, else 0.
int start(const char* program);

// Writes text to std::cout and flushes it; io_error "writing to stdout failed: ..." if either fails
// (a closed pipe, a full disk). Call it before output_set::commit(), as the message promises.
void write_stdout(std::string_view text);
// Flushes std::cout; io_error as above if this or any earlier write to it failed.
void flush_stdout();

// The signals that stop a job, everywhere: start()'s handlers end the process by them, an
// output_set holds them while it renames, systolic-run forwards them to its job processes, and the
// Python module turns them into a stopped job.
extern const int stop_signals[3];  // SIGINT, SIGTERM, SIGHUP

// What the signal handlers do, for a program that caught the signal itself (systolic-run, which
// first stops its job processes): removes every registered temporary, then ends the process by
// `sig`. Async-signal-safe.
void end_by_signal(int sig);

// The registry the signal handlers clean up: paths are unlinked (directories removed if empty)
// from the handler, so everything in it is preallocated and lock-free to read.
namespace cleanup {
struct slot;
// Registers a path; `directory` ones are removed after the files. io_error for a path too long.
slot* add(const std::string& path, bool directory);
// Forgets a path (it was renamed into place, or removed).
void drop(slot* s);
}  // namespace cleanup

}  // namespace systolic::io
