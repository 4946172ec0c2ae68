// Every executable's command-line parse: --help printed (stdout flushed, so that a closed stdout is
// reported), or a parse error as one line on stderr with the nearest option's name. Header-only,
// like cli_suggest.h, for the executables that link no more of systolic::cli (systolic-partition).
#pragma once

#include <CLI/CLI.hpp>

#include <iostream>
#include <optional>

#include "cli_suggest.h"
#include "io/process.h"
#include "io/text.h"

namespace systolic::cli {

// The status to exit with now (help given: 0; a bad command line: `usage_status`), or nothing to
// go on with the options parsed.
inline std::optional<int> parse_command_line(CLI::App& app, int argc, char** argv, const char* program,
                                             int usage_status) {
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        const int status = app.exit(e);
        try {
            io::flush_stdout();
        } catch (const std::exception& e) {
            std::cerr << program << ": error: " << e.what() << "\n";
            return usage_status;
        }
        return status;
    } catch (const CLI::ParseError& e) {
        std::cerr << program << ": error: " << io::printable(parse_error_text(app, e)) << "\n";
        return usage_status;
    }
    return std::nullopt;
}

}  // namespace systolic::cli
