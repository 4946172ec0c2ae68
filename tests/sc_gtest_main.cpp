// Entry point for test executables that elaborate SystemC: GoogleTest runs inside sc_main, and a
// report handler turns every SystemC warning, error or fatal report into a test failure.
#include <gtest/gtest.h>

#include <cstdlib>
#include <systemc>

namespace {

void fail_on_report(const sc_core::sc_report& report, const sc_core::sc_actions& actions) {
    if (report.get_severity() >= sc_core::SC_WARNING) {
        ADD_FAILURE() << "SystemC " << (report.get_severity() == sc_core::SC_WARNING ? "warning" : "error")
                      << " " << report.get_msg_type() << ": " << report.get_msg();
    }
    // Keep SystemC's own handling for stopping and aborting, without its printing.
    sc_core::sc_report_handler::default_handler(report, actions & ~(sc_core::SC_DISPLAY | sc_core::SC_LOG));
}

}  // namespace

int sc_main(int argc, char* argv[]) {
    ::testing::InitGoogleTest(&argc, argv);
    sc_core::sc_report_handler::set_handler(fail_on_report);
    return RUN_ALL_TESTS();
}

int main(int argc, char* argv[]) {
    ::setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
    return sc_core::sc_elab_and_sim(argc, argv);
}
