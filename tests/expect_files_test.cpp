// systolic-run --expect's files (tools/run/expect_files.h): the check made before anything runs and
// the read made after a layer ran hold a file to the same rules, so that what the read hands to the
// comparison always has the layer's M x P values (fuzz/expect_fuzz.cpp fuzzes the pair).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "expect_files.h"
#include "io/npy.h"
#include "systolic/number_format.h"

namespace {

using namespace systolic;

class ExpectFiles : public ::testing::Test {
protected:
    void SetUp() override {
        m_dir =
            (std::filesystem::temp_directory_path() / ("systolic-expect-files-" + std::to_string(::getpid())))
                .string();
        std::filesystem::create_directories(m_dir);
        m_layer.name = "L";
        m_layer.gemm = {2, 5, 3};  // C is 2 x 3
    }
    void TearDown() override { std::filesystem::remove_all(m_dir); }

    void write(std::uint64_t rows, std::uint64_t cols) {
        const std::int32_t c[6] = {1, 2, 3, 4, 5, 6};
        io::write_npy(run::expected_file(m_dir, "L"), "<i4", rows, cols, c,
                      rows * cols * sizeof(std::int32_t));
    }
    std::string read_error() {
        try {
            run::read_expected_file<int8_format>(m_layer, m_dir);
        } catch (const io::npy_error& e) {
            return e.what();
        }
        return "no error";
    }

    std::string m_dir;
    run::layer m_layer;
};

TEST_F(ExpectFiles, TheReadGivesTheCheckedFilesValues) {
    write(2, 3);
    run::check_expected_file<int8_format>(m_layer, m_dir);
    EXPECT_EQ(run::read_expected_file<int8_format>(m_layer, m_dir),
              (std::vector<std::int32_t>{1, 2, 3, 4, 5, 6}));
}

// A sweep runs for hours: a file rewritten after the check must be refused by the read, not handed
// to the comparison with fewer values than C (read past their end) or in another shape.
TEST_F(ExpectFiles, AFileOfAnotherShapeAfterTheCheckIsRefusedWhenRead) {
    write(2, 3);
    run::check_expected_file<int8_format>(m_layer, m_dir);
    const std::string path = run::expected_file(m_dir, "L");
    write(1, 3);
    EXPECT_EQ(read_error(), path + " is 1x3 but layer L has C (M x P) of 2x3");
    write(3, 2);
    EXPECT_EQ(read_error(), path + " is 3x2 but layer L has C (M x P) of 2x3");
}

}  // namespace
