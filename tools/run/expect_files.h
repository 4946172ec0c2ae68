// systolic-run --expect's files: <dir>/<layer>.c.npy per layer, the C each layer must give (M x P),
// checked before anything runs and read after the layer ran. Plain C++ (the fuzzers link it alone).
#pragma once

#include <string>
#include <vector>

#include "io/npy.h"
#include "topology.h"

namespace systolic::run {

// The expected C of a layer under --expect: <dir>/<layer>.c.npy (M x P), in the accumulator type
// (float32 for fp32 and bf16, int32 for int8, int64 for int32).
inline std::string expected_file(const std::string& dir, const std::string& layer_name) {
    return dir + "/" + layer_name + ".c.npy";
}

template <class Format>
std::string expected_dtype() {
    return Format::is_integer ? Format::accumulator_name : "float32";
}

// A layer's expected C must be M x P.
inline void check_expected_shape(const io::npy_array& c, const layer& l, const std::string& path) {
    if (c.shape[0] != l.gemm.m || c.shape[1] != l.gemm.p)
        throw io::npy_error(path + " is " + std::to_string(c.shape[0]) + "x" + std::to_string(c.shape[1]) +
                            " but layer " + l.name + " has C (M x P) of " + std::to_string(l.gemm.m) + "x" +
                            std::to_string(l.gemm.p));
}

// Checks a layer's expected file (dtype, 2-D, M x P) without reading its data.
template <class Format>
void check_expected_file(const layer& l, const std::string& dir) {
    const std::string path = expected_file(dir, l.name);
    check_expected_shape(io::read_matrix_header(path, Format::accumulator_descr, expected_dtype<Format>()), l,
                         path);
}

// Reads a layer's expected C (M x P values) once the layer has run, held to the check's rules again:
// a sweep runs for hours, and a file rewritten since its check must not reach the comparison with
// fewer values than C has.
template <class Format>
std::vector<typename Format::accumulator_type> read_expected_file(const layer& l, const std::string& dir) {
    using acc = typename Format::accumulator_type;
    const std::string path = expected_file(dir, l.name);
    const io::npy_array e = io::read_matrix(path, Format::accumulator_descr, expected_dtype<Format>());
    check_expected_shape(e, l, path);
    return io::as_vector<acc>(e);
}

}  // namespace systolic::run
