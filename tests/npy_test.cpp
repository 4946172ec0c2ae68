#include "io/npy.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#if defined(_WIN32)
#include <process.h>
#else
#include <sys/stat.h>
#include <unistd.h>
#endif

namespace {

namespace fs = std::filesystem;
using systolic::io::as_vector;
using systolic::io::npy_array;
using systolic::io::npy_error;
using systolic::io::read_matrix;
using systolic::io::read_npy;
using systolic::io::write_npy;

const char kNumpyPython[] = "/usr/bin/python3";

long current_pid() {
#if defined(_WIN32)
    return static_cast<long>(_getpid());
#else
    return static_cast<long>(getpid());
#endif
}

// Little-endian bytes of a vector of integers.
template <class T>
std::string le_bytes(const std::vector<T>& values) {
    std::string out;
    for (const T v : values) {
        auto u = static_cast<std::uint64_t>(v);
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            out += static_cast<char>(u & 0xff);
            u >>= 8;
        }
    }
    return out;
}

// A .npy file image with the given header dict text. The dict is padded with spaces and a '\n' so that the
// preamble plus header is a multiple of 64 bytes, as numpy does.
std::string npy_image(int major, const std::string& dict, const std::string& data) {
    const std::size_t len_bytes = major == 1 ? 2 : 4;
    const std::size_t preamble = 8 + len_bytes;
    std::string header = dict;
    const std::size_t pad = 64 - (preamble + header.size() + 1) % 64;
    header.append(pad, ' ');
    header += '\n';
    std::string out("\x93NUMPY", 6);
    out += static_cast<char>(major);
    out += '\0';
    std::size_t len = header.size();
    for (std::size_t i = 0; i < len_bytes; ++i) {
        out += static_cast<char>(len & 0xff);
        len >>= 8;
    }
    return out + header + data;
}

std::string dict_for(const std::string& descr, const std::string& shape, bool fortran = false) {
    return "{'descr': '" + descr + "', 'fortran_order': " + (fortran ? "True" : "False") +
           ", 'shape': " + shape + ", }";
}

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

std::string shell_quote(const std::string& s) {
    std::string out = "'";
    for (const char c : s) {
        if (c == '\'') {
            out += "'\\''";
        } else {
            out += c;
        }
    }
    return out + "'";
}

// Runs `f` and checks that it throws npy_error whose single-line message starts with "<path>: " and contains
// `fragment`.
template <class F>
::testing::AssertionResult throws_npy_error(const std::string& path, const std::string& fragment, F&& f) {
    try {
        f();
    } catch (const npy_error& e) {
        const std::string msg = e.what();
        if (msg.rfind(path + ": ", 0) != 0) {
            return ::testing::AssertionFailure() << "message does not start with '" << path << ": ': " << msg;
        }
        if (msg.find(fragment) == std::string::npos) {
            return ::testing::AssertionFailure() << "message lacks '" << fragment << "': " << msg;
        }
        if (msg.find('\n') != std::string::npos) {
            return ::testing::AssertionFailure() << "message is not a single line: " << msg;
        }
        return ::testing::AssertionSuccess() << msg;
    } catch (const std::exception& e) {
        return ::testing::AssertionFailure() << "threw a different exception: " << e.what();
    }
    return ::testing::AssertionFailure() << "did not throw";
}

// Gives every test its own scratch directory, removed afterwards.
class NpyFixture : public ::testing::Test {
protected:
    void SetUp() override {
        std::random_device rd;
        for (int attempt = 0; attempt < 100; ++attempt) {
            const fs::path candidate =
                fs::temp_directory_path() /
                ("npy_test_" + std::to_string(current_pid()) + "_" + std::to_string(rd()));
            std::error_code ec;
            if (fs::create_directory(candidate, ec)) {
                dir_ = candidate;
                return;
            }
        }
        FAIL() << "cannot create a temporary directory";
    }

    void TearDown() override {
        if (!dir_.empty()) {
            std::error_code ec;
            fs::remove_all(dir_, ec);
        }
    }

    std::string path(const std::string& name) const { return (dir_ / name).string(); }

    std::string put(const std::string& name, const std::string& bytes) const {
        const std::string p = path(name);
        std::ofstream out(p, std::ios::binary);
        out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
        EXPECT_TRUE(out.good()) << "cannot write fixture " << p;
        return p;
    }

    std::string put_i32(const std::string& name, const std::string& dict, int values, int major = 1) const {
        std::vector<std::int32_t> v(static_cast<std::size_t>(values));
        for (int i = 0; i < values; ++i)
            v[static_cast<std::size_t>(i)] = i;
        return put(name, npy_image(major, dict, le_bytes(v)));
    }

    // Names of the files left in the scratch directory.
    std::vector<std::string> listing() const {
        std::vector<std::string> names;
        for (const auto& e : fs::directory_iterator(dir_))
            names.push_back(e.path().filename().string());
        return names;
    }

    fs::path dir_;
};

class NpyRoundTrip : public NpyFixture {};
class NpyHeader : public NpyFixture {};
class NpyError : public NpyFixture {};
class NpyWrite : public NpyFixture {};
class NpyNumpy : public NpyFixture {};

// --------------------------------------------------------------------------------------------------------------

TEST_F(NpyRoundTrip, Int32) {
    const std::vector<std::int32_t> v = {0, -1, 2147483647, -2147483647 - 1, 5, 6, 7, 8, 9, 10, 11, -12};
    const std::string p = path("a.npy");
    write_npy(p, "<i4", 3, 4, v.data(), v.size() * sizeof(std::int32_t));

    const npy_array a = read_matrix(p, "<i4", "int32");
    EXPECT_EQ(a.descr, "<i4");
    EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{3, 4}));
    EXPECT_EQ(a.data.size(), 48u);
    EXPECT_EQ(as_vector<std::int32_t>(a), v);
    EXPECT_EQ(as_vector<std::int32_t>(read_npy(p)), v);
}

TEST_F(NpyRoundTrip, Int64) {
    const std::vector<std::int64_t> v = {INT64_MAX, INT64_MIN, 0, -1, 1LL << 40, -(1LL << 33)};
    const std::string p = path("b.npy");
    write_npy(p, "<i8", 2, 3, v.data(), v.size() * sizeof(std::int64_t));

    const npy_array a = read_matrix(p, "<i8", "int64");
    EXPECT_EQ(a.descr, "<i8");
    EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(as_vector<std::int64_t>(a), v);
}

TEST_F(NpyRoundTrip, Int8AndFloat32) {
    const std::vector<std::int8_t> v8 = {-128, 127, 0, -1};
    const std::string p8 = path("c.npy");
    write_npy(p8, "i1", 1, 4, v8.data(), v8.size());
    EXPECT_EQ(read_npy(p8).descr, "|i1");  // written canonically, as numpy would
    EXPECT_EQ(as_vector<std::int8_t>(read_matrix(p8, "|i1", "int8")), v8);

    const std::vector<float> vf = {1.5f, -0.25f, 3e38f, 0.0f, -1e-30f, 42.0f};
    const std::string pf = path("f.npy");
    write_npy(pf, "<f4", 3, 2, vf.data(), vf.size() * sizeof(float));
    EXPECT_EQ(as_vector<float>(read_matrix(pf, "<f4", "float32")), vf);
}

TEST_F(NpyRoundTrip, OverwritesExistingFileAndLeavesNoTemporary) {
    const std::string p = path("m.npy");
    const std::vector<std::int32_t> first = {1, 2, 3, 4};
    const std::vector<std::int32_t> second = {9, 8};
    write_npy(p, "<i4", 2, 2, first.data(), 16);
    write_npy(p, "<i4", 1, 2, second.data(), 8);
    EXPECT_EQ(as_vector<std::int32_t>(read_matrix(p, "<i4", "int32")), second);
    EXPECT_EQ(listing(), std::vector<std::string>{"m.npy"});
}

TEST_F(NpyRoundTrip, AsVectorRejectsPartialElement) {
    npy_array a;
    a.descr = "|u1";
    a.data = {1, 2, 3};
    EXPECT_THROW(as_vector<std::int32_t>(a), npy_error);
    EXPECT_EQ(as_vector<std::uint8_t>(a), (std::vector<std::uint8_t>{1, 2, 3}));
}

// --------------------------------------------------------------------------------------------------------------

TEST_F(NpyHeader, ByteExactInt64ThreeByThree) {
    std::vector<std::int64_t> v(9);
    for (std::size_t i = 0; i < v.size(); ++i)
        v[i] = static_cast<std::int64_t>(i);
    const std::string p = path("e.npy");
    write_npy(p, "<i8", 3, 3, v.data(), v.size() * 8);

    const std::string bytes = slurp(p);
    ASSERT_EQ(bytes.size(), 128u + 72u);
    EXPECT_EQ(bytes.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
    EXPECT_EQ(static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8), 118);
    const std::string dict = "{'descr': '<i8', 'fortran_order': False, 'shape': (3, 3), }";
    EXPECT_EQ(bytes.substr(10, dict.size()), dict);
    EXPECT_EQ(bytes.substr(10 + dict.size(), 127 - 10 - dict.size()),
              std::string(127 - 10 - dict.size(), ' '));
    EXPECT_EQ(bytes[127], '\n');
    EXPECT_EQ(bytes.substr(128), le_bytes(v));
}

TEST_F(NpyHeader, HeaderIsAlignedForAnyShape) {
    const std::vector<std::int32_t> one = {7};
    for (const std::uint64_t rows : {1ull, 12345678901ull}) {
        const std::string p = path("g.npy");
        // Zero columns keeps the data empty while the header shows a long first dimension.
        write_npy(p, "<i4", rows, rows == 1 ? 1 : 0, one.data(), rows == 1 ? 4 : 0);
        const std::string bytes = slurp(p);
        const std::size_t hlen =
            static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        EXPECT_EQ((10 + hlen) % 64, 0u) << rows;
        EXPECT_EQ(bytes[10 + hlen - 1], '\n') << rows;
        EXPECT_EQ(read_npy(p).shape, (std::vector<std::uint64_t>{rows, rows == 1 ? 1u : 0u}));
    }
}

TEST_F(NpyHeader, Version2) {
    const std::string p = put_i32("v2.npy", dict_for("<i4", "(3, 4)"), 12, 2);
    const npy_array a = read_matrix(p, "<i4", "int32");
    EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{3, 4}));
    EXPECT_EQ(as_vector<std::int32_t>(a)[11], 11);
}

TEST_F(NpyHeader, Version3) {
    const std::string p = put_i32("v3.npy", dict_for("<i4", "(2, 2)"), 4, 3);
    EXPECT_EQ(as_vector<std::int32_t>(read_matrix(p, "<i4", "int32")),
              (std::vector<std::int32_t>{0, 1, 2, 3}));
}

TEST_F(NpyHeader, KeysInAnotherOrder) {
    const std::string p = put_i32("k.npy", "{'shape': (2, 3), 'fortran_order': False, 'descr': '<i4'}", 6);
    const npy_array a = read_matrix(p, "<i4", "int32");
    EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{2, 3}));
    EXPECT_EQ(a.descr, "<i4");
}

TEST_F(NpyHeader, LooseSyntax) {
    const std::string p =
        put_i32("s.npy", "  {\"descr\":'<i4' ,'fortran_order' :False,'shape':( 2 ,3L , ) ,  }  ", 6);
    EXPECT_EQ(read_npy(p).shape, (std::vector<std::uint64_t>{2, 3}));
}

TEST_F(NpyHeader, OtherShapesViaReadNpy) {
    const std::string p1 = put_i32("one.npy", dict_for("<i4", "(5,)"), 5);
    EXPECT_EQ(read_npy(p1).shape, (std::vector<std::uint64_t>{5}));
    const std::string p0 = put_i32("scalar.npy", dict_for("<i4", "()"), 1);
    EXPECT_TRUE(read_npy(p0).shape.empty());
    EXPECT_EQ(read_npy(p0).data.size(), 4u);
}

TEST_F(NpyHeader, Int8DescrSpellings) {
    for (const char* descr : {"|i1", "<i1", "i1", "=i1"}) {
        const std::string p = put(std::string("i8_") + std::to_string(descr[0]) + ".npy",
                                  npy_image(1, dict_for(descr, "(1, 2)"), std::string("\x80\x7f", 2)));
        for (const char* expected : {"|i1", "<i1", "i1"}) {
            const npy_array a = read_matrix(p, expected, "int8");
            EXPECT_EQ(as_vector<std::int8_t>(a), (std::vector<std::int8_t>{-128, 127})) << descr << expected;
        }
    }
}

TEST_F(NpyHeader, NativeByteOrderIsLittleEndian) {
    const std::string p = put_i32("n.npy", dict_for("=i4", "(1, 3)"), 3);
    EXPECT_EQ(as_vector<std::int32_t>(read_matrix(p, "<i4", "int32")), (std::vector<std::int32_t>{0, 1, 2}));
}

// --------------------------------------------------------------------------------------------------------------

TEST_F(NpyError, BadMagic) {
    std::string image = npy_image(1, dict_for("<i4", "(1, 1)"), le_bytes(std::vector<std::int32_t>{1}));
    image[1] = 'M';
    const std::string p = put("x.npy", image);
    EXPECT_TRUE(throws_npy_error(p, "not a .npy file (bad magic)", [&] { read_npy(p); }));
    const std::string t = put("t.npy", "hello, world\n");
    EXPECT_TRUE(throws_npy_error(t, "bad magic", [&] { read_npy(t); }));
    const std::string e = put("empty.npy", "");
    EXPECT_TRUE(throws_npy_error(e, "not a .npy file", [&] { read_npy(e); }));
}

TEST_F(NpyError, UnsupportedVersion) {
    std::string image = npy_image(1, dict_for("<i4", "(1, 1)"), le_bytes(std::vector<std::int32_t>{1}));
    image[6] = '\x04';
    const std::string p = put("v.npy", image);
    EXPECT_TRUE(throws_npy_error(p, "unsupported .npy format version 4.0", [&] { read_npy(p); }));
}

TEST_F(NpyError, TruncatedData) {
    const std::string p = put_i32("B.npy", dict_for("<i4", "(3, 4)"), 5);
    EXPECT_TRUE(throws_npy_error(p,
                                 "truncated: header says 3x4 int32 (48 bytes of data) but the file holds 20",
                                 [&] { read_npy(p); }));
    EXPECT_TRUE(throws_npy_error(p, "truncated", [&] { read_matrix(p, "<i4", "int32"); }));
}

// numpy.load reads prod(shape) elements and ignores what follows, so systolic-tb does too.
TEST_F(NpyError, TrailingBytesAreIgnoredAsNumpyDoes) {
    const std::string p = put_i32("B.npy", dict_for("<i4", "(3, 4)"), 13);
    const npy_array a = read_npy(p);
    EXPECT_EQ(a.shape, (std::vector<std::uint64_t>{3, 4}));
    EXPECT_EQ(a.data.size(), 48u);
    EXPECT_EQ(read_matrix(p, "<i4", "int32").data.size(), 48u);
}

TEST_F(NpyError, TruncatedPreamble) {
    const std::string full = npy_image(2, dict_for("<i4", "(1, 1)"), le_bytes(std::vector<std::int32_t>{1}));
    const std::string p = put("p.npy", full.substr(0, 10));
    EXPECT_TRUE(throws_npy_error(p, "truncated", [&] { read_npy(p); }));
}

TEST_F(NpyError, WrongDtype) {
    const std::string p = put("A.npy", npy_image(1, dict_for("<f8", "(2, 2)"), std::string(32, '\0')));
    EXPECT_TRUE(throws_npy_error(p, "dtype '<f8' is not supported, expected int32 ('<i4')",
                                 [&] { read_matrix(p, "<i4", "int32"); }));
    // Same width, different kind.
    const std::string u = put_i32("u.npy", dict_for("<u4", "(2, 2)"), 4);
    EXPECT_TRUE(throws_npy_error(u, "dtype '<u4' is not supported", [&] { read_matrix(u, "<i4", "int32"); }));
}

TEST_F(NpyError, UnknownDtype) {
    const std::string p = put("o.npy", npy_image(1, dict_for("|O", "(1, 1)"), std::string(8, '\0')));
    EXPECT_TRUE(throws_npy_error(p, "dtype '|O' (Python objects) is not supported", [&] { read_npy(p); }));
    const std::string s = put("st.npy", npy_image(1,
                                                  "{'descr': [('a', '<i4')], 'fortran_order': False, "
                                                  "'shape': (1, 1), }",
                                                  std::string(4, '\0')));
    EXPECT_TRUE(throws_npy_error(s, "structured dtypes are not supported", [&] { read_npy(s); }));
}

TEST_F(NpyError, BigEndian) {
    const std::string p = put_i32("be.npy", dict_for(">i4", "(2, 2)"), 4);
    EXPECT_TRUE(throws_npy_error(p, "dtype '>i4' is big-endian", [&] { read_matrix(p, "<i4", "int32"); }));
}

TEST_F(NpyError, FortranOrder) {
    const std::string p = put_i32("f.npy", dict_for("<i4", "(2, 3)", true), 6);
    EXPECT_TRUE(throws_npy_error(p, "Fortran-order arrays are not supported, save with C order",
                                 [&] { read_matrix(p, "<i4", "int32"); }));
    EXPECT_TRUE(throws_npy_error(p, "Fortran-order", [&] { read_npy(p); }));
}

TEST_F(NpyError, OneDimensional) {
    const std::string p = put_i32("x.npy", dict_for("<i4", "(3,)"), 3);
    EXPECT_TRUE(
        throws_npy_error(p, "expected a 2-D array, got shape (3,)", [&] { read_matrix(p, "<i4", "int32"); }));
}

TEST_F(NpyError, ThreeDimensional) {
    const std::string p = put_i32("x.npy", dict_for("<i4", "(2, 1, 3)"), 6);
    EXPECT_TRUE(throws_npy_error(p, "expected a 2-D array, got shape (2,1,3)",
                                 [&] { read_matrix(p, "<i4", "int32"); }));
}

TEST_F(NpyError, ZeroDimension) {
    const std::string p = put_i32("x.npy", dict_for("<i4", "(0, 3)"), 0);
    EXPECT_EQ(read_npy(p).data.size(), 0u);  // valid .npy, just not a usable matrix
    EXPECT_TRUE(
        throws_npy_error(p, "shape (0,3) has a zero dimension", [&] { read_matrix(p, "<i4", "int32"); }));
}

#if !defined(_WIN32)
// A FIFO would block the reader forever, waiting for a writer: it is refused at once.
TEST_F(NpyError, FifoIsRefusedWithoutBlocking) {
    const std::string p = path("f.npy");
    ASSERT_EQ(::mkfifo(p.c_str(), 0600), 0);
    EXPECT_TRUE(throws_npy_error(p, "cannot open: not a regular file (a FIFO)", [&] { read_npy(p); }));
    EXPECT_TRUE(throws_npy_error(p, "not a regular file", [&] { read_matrix(p, "<i4", "int32"); }));
    EXPECT_TRUE(throws_npy_error("/dev/null", "not a regular file (a character device)",
                                 [&] { read_npy("/dev/null"); }));
}
#endif

TEST_F(NpyError, MissingFile) {
    const std::string p = path("nope.npy");
    EXPECT_TRUE(throws_npy_error(p, "cannot open: No such file or directory", [&] { read_npy(p); }));
    EXPECT_TRUE(throws_npy_error(dir_.string(), "cannot open", [&] { read_npy(dir_.string()); }));
}

TEST_F(NpyError, HeaderLengthPastEof) {
    std::string image = npy_image(1, dict_for("<i4", "(1, 1)"), le_bytes(std::vector<std::int32_t>{1}));
    image[8] = '\xff';
    image[9] = '\xff';
    const std::string p = put("h.npy", image);
    EXPECT_TRUE(
        throws_npy_error(p, "header length 65535 runs past the end of the file", [&] { read_npy(p); }));

    std::string image2 = npy_image(2, dict_for("<i4", "(1, 1)"), le_bytes(std::vector<std::int32_t>{1}));
    image2[8] = image2[9] = image2[10] = image2[11] = '\xff';
    const std::string p2 = put("h2.npy", image2);
    EXPECT_TRUE(throws_npy_error(p2, "header length 4294967295 runs past the end", [&] { read_npy(p2); }));
}

TEST_F(NpyError, MissingKeys) {
    const std::string a = put_i32("a.npy", "{'descr': '<i4', 'fortran_order': False}", 1);
    EXPECT_TRUE(throws_npy_error(a, "header is missing key 'shape'", [&] { read_npy(a); }));
    const std::string b = put_i32("b.npy", "{'shape': (1, 1), 'fortran_order': False}", 1);
    EXPECT_TRUE(throws_npy_error(b, "header is missing key 'descr'", [&] { read_npy(b); }));
    const std::string c = put_i32("c.npy", "{'shape': (1, 1), 'descr': '<i4'}", 1);
    EXPECT_TRUE(throws_npy_error(c, "header is missing key 'fortran_order'", [&] { read_npy(c); }));
}

TEST_F(NpyError, GarbageHeaders) {
    const std::vector<std::string> bad = {
        "",
        "not a dict",
        "{'descr' '<i4', 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': '<i4', 'fortran_order': false, 'shape': (1, 1)}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1)",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1)} junk",
        "{'descr': '<i4', 'fortran_order': False, 'shape': [1, 1]}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1)}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (-1, 1)}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1, x)}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 1), 'extra': 1}",
        "{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr: '<i4', 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': '<i4' 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': '', 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': '<i0', 'fortran_order': False, 'shape': (1, 1)}",
        "{'descr': '<i4', 'fortran_order': False, 'shape': (1, 99999999999999999999999)}",
        std::string("{'descr': '<i4',\0 'fortran_order': False, 'shape': (1, 1)}", 58),
    };
    for (std::size_t i = 0; i < bad.size(); ++i) {
        const std::string p =
            put("g" + std::to_string(i) + ".npy", npy_image(1, bad[i], std::string(4, '\0')));
        EXPECT_TRUE(throws_npy_error(p, "", [&] { read_npy(p); })) << bad[i];
    }
}

TEST_F(NpyError, HugeShapes) {
    // The element count overflows 64 bits.
    const std::string a = put_i32("a.npy", dict_for("<i4", "(4294967296, 4294967296)"), 1);  // 2^64 elements
    EXPECT_TRUE(throws_npy_error(a, "more elements than fit in 64 bits", [&] { read_npy(a); }));
    // The byte count overflows 64 bits even though the element count does not.
    const std::string b = put_i32("b.npy", dict_for("<i8", "(4611686018427387904, 1)"), 1);
    EXPECT_TRUE(throws_npy_error(b, "1 TiB", [&] { read_npy(b); }));
    // Fits in 64 bits but is more than 2^40 bytes: must be refused before any allocation.
    const std::string c = put_i32("c.npy", dict_for("<i4", "(1048576, 262145)"), 1);
    EXPECT_TRUE(throws_npy_error(c, "1 TiB", [&] { read_matrix(c, "<i4", "int32"); }));
    // Large but plausible: reported as truncated, not allocated.
    const std::string d = put_i32("d.npy", dict_for("<i4", "(1048576, 1024)"), 1);
    EXPECT_TRUE(throws_npy_error(d, "truncated: header says 1048576x1024 int32", [&] { read_npy(d); }));
}

// --------------------------------------------------------------------------------------------------------------

TEST_F(NpyWrite, MissingDirectoryThrowsAndLeavesNoFile) {
    const std::vector<std::int32_t> v = {1, 2, 3, 4};
    const fs::path missing = dir_ / "no_such_dir";
    const std::string p = (missing / "out.npy").string();
    EXPECT_TRUE(throws_npy_error(p, "directory " + missing.string() + " does not exist",
                                 [&] { write_npy(p, "<i4", 2, 2, v.data(), 16); }));
    EXPECT_FALSE(fs::exists(missing));
    EXPECT_TRUE(listing().empty());
}

TEST_F(NpyWrite, SizeMismatchThrowsAndLeavesNoFile) {
    const std::vector<std::int32_t> v = {1, 2, 3, 4};
    const std::string p = path("w.npy");
    EXPECT_TRUE(throws_npy_error(p, "needs 16 bytes of data but 12 were given",
                                 [&] { write_npy(p, "<i4", 2, 2, v.data(), 12); }));
    EXPECT_TRUE(
        throws_npy_error(p, "not a supported dtype", [&] { write_npy(p, "<q9", 2, 2, v.data(), 16); }));
    EXPECT_TRUE(listing().empty());
}

TEST_F(NpyWrite, DirectoryTargetIsRefusedAndLeavesNoTemporary) {
    // A rename over a directory would fail only after the data was written: refused up front.
    const fs::path target = dir_ / "blocked.npy";
    fs::create_directory(target);
    std::ofstream(target / "keep").put('x');
    const std::vector<std::int32_t> v = {1};
    EXPECT_TRUE(throws_npy_error(target.string(), "exists and is a directory",
                                 [&] { write_npy(target.string(), "<i4", 1, 1, v.data(), 4); }));
    EXPECT_EQ(listing(), std::vector<std::string>{"blocked.npy"});
}

// --------------------------------------------------------------------------------------------------------------

// Python side of the interoperability test. "make DIR" writes files with numpy; "check DIR" loads the files
// written by write_npy and exits non-zero on any mismatch.
const char kInteropScript[] = R"PY(
import io, sys
import numpy as np

mode, d = sys.argv[1], sys.argv[2]
a32 = (np.arange(12, dtype='<i4').reshape(3, 4) - 6) * 357913941
a64 = (np.arange(6, dtype='<i8').reshape(2, 3) - 3) * (1 << 61)
if mode == 'make':
    np.save(d + '/np_i32.npy', a32)
    np.save(d + '/np_i64.npy', a64)
    np.save(d + '/np_i8.npy', np.array([[-128, 127], [0, -1]], dtype=np.int8))
    np.save(d + '/np_3x3.npy', np.arange(9, dtype='<i8').reshape(3, 3))
    np.save(d + '/np_f64.npy', np.ones((2, 2)))
    np.save(d + '/np_fortran.npy', np.asfortranarray(a32))
    np.save(d + '/np_big.npy', a32.astype('>i4'))
    for v in (2, 3):
        with open(d + '/np_v%d.npy' % v, 'wb') as f:
            np.lib.format.write_array(f, a32, version=(v, 0))
else:
    def same(name, expected):
        got = np.load(d + '/' + name)
        assert got.dtype == expected.dtype, (name, got.dtype)
        assert got.shape == expected.shape, (name, got.shape)
        assert (got == expected).all(), (name, got)
        buf = io.BytesIO()
        np.save(buf, expected)
        with open(d + '/' + name, 'rb') as f:
            ours = f.read()
        # Byte-for-byte identical to numpy.save (when this numpy pads headers the way ours does).
        if hasattr(np.lib.format, 'GROWTH_AXIS_MAX_DIGITS') or name == 'ours_3x3.npy':
            assert ours == buf.getvalue(), (name, ours[:128], buf.getvalue()[:128])
    same('ours_i32.npy', a32)
    same('ours_i64.npy', a64)
    same('ours_3x3.npy', np.arange(9, dtype='<i8').reshape(3, 3))
    same('ours_wide.npy', np.arange(3 * 1000, dtype='<i4').reshape(1000, 3))
)PY";

TEST_F(NpyNumpy, InteropWithNumpy) {
    if (std::system((std::string(kNumpyPython) + " -c 'import numpy' >/dev/null 2>&1").c_str()) != 0) {
        GTEST_SKIP() << kNumpyPython << " with numpy is not available";
    }
    const std::string script = put("interop.py", kInteropScript);
    const std::string run = std::string(kNumpyPython) + " " + shell_quote(script) + " ";
    ASSERT_EQ(std::system((run + "make " + shell_quote(dir_.string())).c_str()), 0);

    // numpy -> us
    std::vector<std::int32_t> a32(12);
    for (std::size_t i = 0; i < a32.size(); ++i)
        a32[i] = (static_cast<std::int32_t>(i) - 6) * 357913941;
    std::vector<std::int64_t> a64(6);
    for (std::size_t i = 0; i < a64.size(); ++i) {
        a64[i] = (static_cast<std::int64_t>(i) - 3) * (std::int64_t{1} << 61);
    }
    EXPECT_EQ(as_vector<std::int32_t>(read_matrix(path("np_i32.npy"), "<i4", "int32")), a32);
    EXPECT_EQ(as_vector<std::int64_t>(read_matrix(path("np_i64.npy"), "<i8", "int64")), a64);
    EXPECT_EQ(as_vector<std::int32_t>(read_matrix(path("np_v2.npy"), "<i4", "int32")), a32);
    EXPECT_EQ(as_vector<std::int32_t>(read_matrix(path("np_v3.npy"), "<i4", "int32")), a32);
    EXPECT_EQ(as_vector<std::int8_t>(read_matrix(path("np_i8.npy"), "<i1", "int8")),
              (std::vector<std::int8_t>{-128, 127, 0, -1}));
    EXPECT_TRUE(throws_npy_error(path("np_f64.npy"), "dtype '<f8' is not supported, expected int32 ('<i4')",
                                 [&] { read_matrix(path("np_f64.npy"), "<i4", "int32"); }));
    EXPECT_TRUE(throws_npy_error(path("np_fortran.npy"), "Fortran-order",
                                 [&] { read_matrix(path("np_fortran.npy"), "<i4", "int32"); }));
    EXPECT_TRUE(throws_npy_error(path("np_big.npy"), "big-endian",
                                 [&] { read_matrix(path("np_big.npy"), "<i4", "int32"); }));

    // us -> numpy
    write_npy(path("ours_i32.npy"), "<i4", 3, 4, a32.data(), a32.size() * 4);
    write_npy(path("ours_i64.npy"), "<i8", 2, 3, a64.data(), a64.size() * 8);
    std::vector<std::int64_t> sq(9);
    for (std::size_t i = 0; i < sq.size(); ++i)
        sq[i] = static_cast<std::int64_t>(i);
    write_npy(path("ours_3x3.npy"), "<i8", 3, 3, sq.data(), sq.size() * 8);
    std::vector<std::int32_t> wide(3000);
    for (std::size_t i = 0; i < wide.size(); ++i)
        wide[i] = static_cast<std::int32_t>(i);
    write_npy(path("ours_wide.npy"), "<i4", 1000, 3, wide.data(), wide.size() * 4);
    EXPECT_EQ(std::system((run + "check " + shell_quote(dir_.string())).c_str()), 0);

    // numpy's own 3x3 int64 file and ours are the same bytes.
    EXPECT_EQ(slurp(path("np_3x3.npy")), slurp(path("ours_3x3.npy")));
}

}  // namespace
