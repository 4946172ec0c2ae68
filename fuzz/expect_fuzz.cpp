// libFuzzer target: systolic-run --expect's directory reader. The input is split at "--next-file--"
// into up to three layers' files: each part starts with the layer's M and P (16 bits each, little
// endian, plus one), and the rest is its <layer>.c.npy, written to a scratch directory of this process
// (a part shorter than 4 bytes: the layer has no file). For every number format, the check made before
// anything runs (check_expected_file) and the read made after the layer ran (read_expected_file) must
// agree: both accept, and the read gives M x P values, or both refuse with an npy_error on one line
// that starts with the file's path and holds no control characters. A file the check accepts and the
// read refuses would fail a run after it simulated the layer; anything else is a bug too.
// Seeds: fuzz/corpus/expect.
#include <stdlib.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "expect_files.h"
#include "systolic/number_format.h"

namespace {

using namespace systolic;

// The scratch directory, made once per process and removed when it ends.
struct scratch_dir {
    std::string path;
    scratch_dir() {
        const char* tmp = std::getenv("TMPDIR");
        std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/systolic-expect-fuzz-XXXXXX";
        if (!::mkdtemp(pattern.data())) std::abort();
        path = pattern;
    }
    ~scratch_dir() {
        for (int i = 0; i < 3; ++i)
            ::unlink(run::expected_file(path, "l" + std::to_string(i)).c_str());
        ::rmdir(path.c_str());
    }
};

void check_message(const io::npy_error& e, const std::string& path) {
    const std::string what = e.what();
    if (what.rfind(path, 0) != 0) std::abort();
    for (const char ch : what)  // one line, no control characters
        if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) std::abort();
}

template <class Format>
void agree(const run::layer& l, const std::string& dir) {
    const std::string path = run::expected_file(dir, l.name);
    bool checked = false;
    try {
        run::check_expected_file<Format>(l, dir);
        checked = true;
    } catch (const io::npy_error& e) {
        check_message(e, path);
    }
    try {
        const auto c = run::read_expected_file<Format>(l, dir);
        if (!checked || c.size() != l.gemm.m * l.gemm.p) std::abort();
    } catch (const io::npy_error& e) {
        if (checked) std::abort();
        check_message(e, path);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const scratch_dir dir;
    constexpr std::string_view separator = "--next-file--";
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    std::vector<run::layer> layers;
    for (int i = 0; i < 3 && !rest.empty(); ++i) {
        const std::size_t end = rest.find(separator);
        const std::string_view part = rest.substr(0, end);
        rest = end == std::string_view::npos ? std::string_view() : rest.substr(end + separator.size());
        run::layer l;
        l.id = std::size_t(i);
        l.name = "l" + std::to_string(i);
        const std::string path = run::expected_file(dir.path, l.name);
        ::unlink(path.c_str());
        if (part.size() >= 4) {
            const auto u16 = [&](std::size_t at) {
                return std::uint64_t(std::uint8_t(part[at])) | std::uint64_t(std::uint8_t(part[at + 1])) << 8;
            };
            l.gemm = {u16(0) + 1, 1, u16(2) + 1};
            std::FILE* f = std::fopen(path.c_str(), "wb");
            if (!f) std::abort();
            if (part.size() > 4 && std::fwrite(part.data() + 4, 1, part.size() - 4, f) != part.size() - 4)
                std::abort();
            if (std::fclose(f) != 0) std::abort();
        } else {
            l.gemm = {1, 1, 1};
        }
        layers.push_back(l);
    }
    for (const run::layer& l : layers) {
        systolic::for_each_format([&](auto format) { agree<decltype(format)>(l, dir.path); });
    }
    return 0;
}
