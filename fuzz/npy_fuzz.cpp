// libFuzzer target: the .npy reader on arbitrary bytes. Every input must either parse into an array
// whose data matches its header, or be refused with an npy_error; anything else (a crash, a
// sanitizer report, another exception, a hang) is a bug. Seeds: fuzz/corpus/npy.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "io/npy.h"

namespace {

std::uint64_t elements(const systolic::io::npy_array& a) {
    std::uint64_t n = 1;
    for (const std::uint64_t d : a.shape)
        n *= d;
    return n;
}

void check(const systolic::io::npy_array& a) {
    // Whatever parsed must be self-consistent: the data is a whole number of elements of the shape.
    const std::uint64_t n = elements(a);
    if (n == 0 ? !a.data.empty() : a.data.size() % n != 0) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace systolic::io;
    try {
        check(parse_npy(data, size, "fuzz.npy"));
    } catch (const npy_error&) {
    }
    for (const char* descr : {"<i4", "|i1", "<f4", "<i8"}) {
        try {
            const npy_array a = parse_matrix(data, size, "fuzz.npy", descr, "matrix");
            if (a.shape.size() != 2 || a.shape[0] == 0 || a.shape[1] == 0) std::abort();
            check(a);
        } catch (const npy_error&) {
        }
    }
    return 0;
}
