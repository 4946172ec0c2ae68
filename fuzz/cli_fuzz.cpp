// libFuzzer target: systolic-tb's command-line parser on arbitrary argument lists (the input split
// at NUL bytes). Every list must either parse or be refused with exit status 2 and exactly one line
// on stderr; no other exception may escape. Seeds: fuzz/corpus/cli.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "cli_options.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"systolic-tb"};
    std::string current;
    for (std::size_t i = 0; i < size && args.size() < 64; ++i) {
        if (data[i] == 0) {
            args.push_back(current);
            current.clear();
        } else {
            current += static_cast<char>(data[i]);
        }
    }
    if (!current.empty() && args.size() < 64) args.push_back(current);
    std::vector<const char*> argv;
    for (const auto& a : args)
        argv.push_back(a.c_str());
    argv.push_back(nullptr);

    systolic::tb::options o;
    const systolic::tb::parse_result r =
        systolic::tb::parse_command_line(static_cast<int>(args.size()), argv.data(), o);
    if (!r.run && r.exit_status == 2) {
        // One line: the message ends in its only newline.
        if (r.err.empty() || r.err.back() != '\n' || r.err.find('\n') != r.err.size() - 1) std::abort();
    }
    if (r.run && ((o.c_out && o.c_out->empty()) || (o.json && o.json->empty()))) std::abort();
    return 0;
}
