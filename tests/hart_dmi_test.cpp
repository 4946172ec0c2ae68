// The hart as a SystemC initiator over a data RAM whose DMI is revoked while the program runs: the
// hart stops using the pointer, asks again, is refused, and runs on with every access to that RAM a
// b_transport; the program's result, written to the finisher, is the same. (Code runs from RAM
// mapped over DMI only: hart_core_test has the fault of a fetch from anywhere else.)
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <systemc>

#include "finisher.h"
#include "hart.h"
#include "router.h"
#include "rv_asm.h"
#include "systolic/memory.h"

namespace {

using namespace systolic;
using namespace systolic::components;
using namespace systolic::components::testing;

constexpr std::uint64_t ram_base = 0x80000000, data_base = 0x90000000, ram_size = 0x10000;
constexpr std::uint64_t finisher_base = 0x00100000;

// Forwards everything to the memory behind it; revoke() invalidates every grant and refuses DMI
// from then on, counting the b_transports that come instead.
struct dmi_switch : sc_core::sc_module {
    tlm_utils::simple_target_socket<dmi_switch> target_socket;
    tlm_utils::simple_initiator_socket<dmi_switch> initiator_socket;
    bool refused = false;
    std::uint64_t transports_after = 0;

    explicit dmi_switch(const sc_core::sc_module_name& name)
        : sc_core::sc_module(name), target_socket("target_socket"), initiator_socket("initiator_socket") {
        target_socket.register_b_transport(this, &dmi_switch::b_transport);
        target_socket.register_transport_dbg(this, &dmi_switch::transport_dbg);
        target_socket.register_get_direct_mem_ptr(this, &dmi_switch::get_direct_mem_ptr);
    }
    void revoke() {
        refused = true;
        target_socket->invalidate_direct_mem_ptr(0, ~sc_dt::uint64{0});
    }

private:
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& d) {
        transports_after += refused;
        initiator_socket->b_transport(t, d);
    }
    unsigned int transport_dbg(tlm::tlm_generic_payload& t) { return initiator_socket->transport_dbg(t); }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
        if (!refused) return initiator_socket->get_direct_mem_ptr(t, dmi);
        dmi.allow_none();
        dmi.set_start_address(0);
        dmi.set_end_address(ram_size - 1);
        return false;
    }
};

struct bench : sc_core::sc_module {
    router bus{"bus"};
    dmi_switch dmi{"dmi"};
    memory ram{"ram", memory::config{0, ram_size}};
    memory data{"data", memory::config{0, ram_size}};
    components::finisher finisher{"finisher"};
    sc_core::sc_signal<bool> low{"low"};
    hart cpu;

    SC_HAS_PROCESS(bench);
    explicit bench(const sc_core::sc_module_name& name) : sc_core::sc_module(name), cpu("cpu", config()) {
        cpu.initiator_socket.bind(bus.target_socket);
        bus.initiator_socket.bind(ram.target_socket);
        bus.initiator_socket.bind(dmi.target_socket);
        dmi.initiator_socket.bind(data.target_socket);
        bus.initiator_socket.bind(finisher.target_socket);
        bus.map(ram_base, ram_size, 0, "ram");
        bus.map(data_base, ram_size, 1, "data");
        bus.map(finisher_base, finisher::size, 2, "finisher");
        cpu.irq_external.bind(low);
        cpu.irq_timer.bind(low);
        finisher.on_finish([this](std::uint32_t, const sc_core::sc_time&) { cpu.halt(); });
        cpu.on_stop([] { sc_core::sc_stop(); });
        SC_THREAD(revoke_later);
    }
    static hart::config config() {
        hart::config c;
        c.ram.push_back({ram_base, ram_size, "ram", {}});
        c.ram.push_back({data_base, ram_size, "data", {}});
        c.devices.push_back({finisher_base, finisher::size, "finisher", {}});
        return c;
    }
    void revoke_later() {
        sc_core::wait(5, sc_core::SC_US);
        dmi.revoke();
    }
};

TEST(HartDmi, ARevokedGrantFallsBackToTransactionsAndTheProgramRunsOn) {
    tlm::tlm_global_quantum::instance().set(sc_core::sc_time(1, sc_core::SC_US));
    bench b("bench");
    // 20480 rounds of a store and a load of a counter in the data RAM (100 us at one instruction
    // per ns), then the last value loaded to the finisher.
    program p(ram_base);
    p.op(rv::lui(rv::s0, data_base >> 12)).op(rv::lui(rv::t0, 5));
    p.op(rv::addi(rv::a0, rv::a0, 1))
        .op(rv::sw(rv::a0, rv::s0, 0))
        .op(rv::lw(rv::a1, rv::s0, 0))
        .op(rv::addi(rv::t0, rv::t0, -1))
        .op(rv::bne(rv::t0, rv::zero, -16))
        .op(rv::lui(rv::t1, finisher_base >> 12))
        .op(rv::sw(rv::a1, rv::t1, 0))
        .op(rv::wfi);
    p.copy_to(b.ram.core().data());
    b.cpu.reset(ram_base);
    sc_core::sc_start(sc_core::sc_time(1, sc_core::SC_MS));
    ASSERT_TRUE(b.cpu.stopped());
    EXPECT_FALSE(b.cpu.fault()) << b.cpu.fault()->what;
    ASSERT_TRUE(b.finisher.code());
    EXPECT_EQ(*b.finisher.code(), 20480u);
    // The revocation came after about a thousand rounds; the data of the others went over the bus.
    EXPECT_GT(b.dmi.transports_after, 2 * 19000u);
    EXPECT_LT(b.dmi.transports_after, 2 * 20480u);
    EXPECT_EQ(b.data.core().data()[0], 20480 % 256);
    EXPECT_EQ(b.cpu.retired(), 2 + 5 * 20480u + 3);  // the last block's wfi included
}

}  // namespace
