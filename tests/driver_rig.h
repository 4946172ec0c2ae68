// For SystemC tests that drive the accelerator from the test body, as software would: one rig per
// process, the driver's register accessors over a test initiator, and running the simulation until
// nothing is left to do. The accelerator's registers never wait, so the accessors may be called
// from the test body between sc_start calls.
#pragma once

#include <gtest/gtest.h>

#include <systolic/accelerator_driver.h>

#include <cstdint>
#include <memory>
#include <systemc>

#include "test_initiator.h"
#include "tlm_expect.h"

namespace systolic::tb {

// The rig of a test executable, rig_environment<rig>::get(): elaborated once per process (SystemC
// elaborates once), before the first test, and destroyed with GoogleTest's environments at exit.
// Naming get() registers the environment.
template <class Rig>
class rig_environment : public ::testing::Environment {
public:
    void SetUp() override {
        if (m_rig) return;
        m_rig = std::make_unique<Rig>();
        s_rig = m_rig.get();
    }
    static Rig& get() {
        (void)s_registered;
        return *s_rig;
    }

private:
    std::unique_ptr<Rig> m_rig;
    static inline Rig* s_rig = nullptr;
    static inline ::testing::Environment* const s_registered =
        ::testing::AddGlobalTestEnvironment(new rig_environment);
};

// The driver's accessors over a test initiator: every access must be answered OK.
inline std::uint32_t driver_read32(void* ctx, std::uint32_t offset) {
    std::uint32_t v = 0xdeadbeef;
    EXPECT_TLM_OK(static_cast<test_initiator*>(ctx)->read(offset, v)) << "offset " << offset;
    return v;
}
inline void driver_write32(void* ctx, std::uint32_t offset, std::uint32_t value) {
    EXPECT_TLM_OK(static_cast<test_initiator*>(ctx)->write(offset, value)) << "offset " << offset;
}
inline systolic_dev driver_device(test_initiator& cpu) {
    return systolic_dev{&cpu, driver_read32, driver_write32};
}

// Runs the simulation until nothing is left to do (or the limit, a hang).
inline void settle(sc_core::sc_time limit = sc_core::sc_time(10, sc_core::SC_MS)) {
    if (sc_core::sc_pending_activity()) sc_core::sc_start(limit, sc_core::SC_EXIT_ON_STARVATION);
}

}  // namespace systolic::tb
