// An allocation that fails inside a SystemC process (the tile controller's thread) is reported as
// what was being allocated, as one that fails outside: SystemC turns the escaping std::bad_alloc
// into error E549 thrown out of sc_start, and allocating() recognises it. Other reports pass
// through unchanged.
#include <gtest/gtest.h>

#include <new>
#include <string>
#include <systemc>

#include "allocating.h"

namespace {

using namespace systolic::tb;

struct failing_thread : sc_core::sc_module {
    SC_HAS_PROCESS(failing_thread);
    explicit failing_thread(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
        SC_THREAD(run);
    }
    void run() {
        wait(sc_core::sc_time(1, sc_core::SC_NS));
        throw std::bad_alloc();
    }
};

TEST(AllocationFailure, InsideASystemCThreadSaysWhatWasAllocated) {
    failing_thread t("t");
    // This one error is expected: SystemC's own handling, without the suite's failure on every error.
    sc_core::sc_report_handler::set_handler(sc_core::sc_report_handler::default_handler);
    sc_core::sc_report_handler::set_actions(sc_core::SC_ERROR, sc_core::SC_THROW);
    try {
        allocating("running the job", [] { sc_core::sc_start(); });
        FAIL() << "sc_start returned";
    } catch (const out_of_memory& e) {
        EXPECT_EQ(std::string(e.what()), "out of memory while running the job");
    }
}

TEST(AllocationFailure, TheMessageSaysWhatTheBudgetPromised) {
    memory_budget b;
    b.estimate = 3u << 20;
    b.limit = 4u << 20;
    b.limit_given = true;
    set_memory_budget(b);
    EXPECT_EQ(std::string(out_of_memory("reading --a a.npy").what()),
              "out of memory while reading --a a.npy, although the estimate of about 3.0 MiB was within the "
              "limit of 4.0 MiB set by --max-memory: the machine had less to give (other processes, or a "
              "limit such as ulimit -v)");
}

TEST(AllocationFailure, SizesGetTheDigitsThatTellThemApart) {
    EXPECT_EQ(format_bytes_apart(2000ull << 20, 2090ull << 20),
              (std::pair<std::string, std::string>{"1.95 GiB", "2.04 GiB"}));
    EXPECT_EQ(format_bytes_apart(1ull << 20, 10ull << 20),
              (std::pair<std::string, std::string>{"1.0 MiB", "10 MiB"}));
    EXPECT_EQ(format_bytes_apart((1ull << 30) + 2048, 1ull << 30).first, "1.000002 GiB");
}

}  // namespace
