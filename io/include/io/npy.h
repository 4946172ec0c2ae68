// Minimal reader/writer for NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// Only what the testbench needs: plain numeric dtypes, C order, little-endian data. Every problem with an
// input file is reported as an npy_error whose message is a single line starting with the file path.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace systolic::io {

// Thrown for any unreadable, malformed or unsupported input, and for failed writes. what() is one line that
// starts with the file path, e.g. "A.npy: dtype '<f8' is not supported, expected int32 ('<i4')".
class npy_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct npy_array {
    std::string descr;                 // numpy dtype descr as in the header, e.g. "<i4"
    std::vector<std::uint64_t> shape;  // e.g. {3, 4}
    std::vector<std::uint8_t> data;    // raw little-endian element bytes, C order
};

// Reads a .npy file (format versions 1.0, 2.0 and 3.0). Validates the magic, the version, the header dict
// (keys 'descr', 'fortran_order' and 'shape' in any order, Python-dict syntax) and that the file holds at
// least prod(shape) * itemsize bytes of data; bytes after the data are ignored, as numpy.load ignores them.
// Fortran-order files are rejected. Only regular files are read: a FIFO, device or directory is refused
// without blocking.
npy_array read_npy(const std::string& path);

// The same for a .npy image in memory; `name` stands for the path in messages.
npy_array parse_npy(const void* data, std::size_t size, const std::string& name);

// Reads a 2-D C-order matrix whose dtype must be `expected_descr` ("<i4", "<i8", "|i1", "<f4", ...).
// '|i1', '<i1' and 'i1' are all accepted for int8; a '=' (or missing) byte order means the host order.
// Big-endian data and zero-sized dimensions are rejected. `what` is a human name of the dtype used in
// messages, e.g. "int32".
npy_array read_matrix(const std::string& path, const std::string& expected_descr, const std::string& what);

// read_matrix's checks without reading the data: descr and shape only (data stays empty), so that a job's
// memory can be estimated before anything large is allocated.
npy_array read_matrix_header(const std::string& path, const std::string& expected_descr,
                             const std::string& what);

// read_matrix for a .npy image in memory.
npy_array parse_matrix(const void* data, std::size_t size, const std::string& name,
                       const std::string& expected_descr, const std::string& what);

// The header bytes numpy.save writes for a rows x cols C-order array of `descr` (version 1.0, padded to
// 64 bytes). Throws npy_error (starting with `path`) for a dtype it cannot write.
std::string npy_header(const std::string& path, const std::string& descr, std::uint64_t rows,
                       std::uint64_t cols);

// Writes a rows x cols C-order array through write_file: checked as every output is, written to
// a temporary beside it, synced and renamed over `path`, so a failed write never leaves a partial
// file. The header is version 1.0, laid out exactly as numpy.save does. `bytes` must equal
// rows * cols * itemsize(descr).
void write_npy(const std::string& path, const std::string& descr, std::uint64_t rows, std::uint64_t cols,
               const void* data, std::size_t bytes);

// Copies the raw element bytes of `a` into a vector<T>. The caller is responsible for T matching a.descr;
// throws npy_error if the data size is not a multiple of sizeof(T).
template <class T>
std::vector<T> as_vector(const npy_array& a) {
    static_assert(std::is_trivially_copyable<T>::value, "as_vector needs a trivially copyable element type");
    if (a.data.size() % sizeof(T) != 0) {
        throw npy_error("npy data (dtype '" + a.descr + "', " + std::to_string(a.data.size()) +
                        " bytes) is not a whole number of " + std::to_string(sizeof(T)) + "-byte elements");
    }
    std::vector<T> out(a.data.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), a.data.data(), a.data.size());
    return out;
}

}  // namespace systolic::io
