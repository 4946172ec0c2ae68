// A platform of a user's own that checks the accelerator's jobs with the verification environment:
// its own RAM and its own bus, the accelerator, and software that runs jobs through the registers.
// The environment sits between the accelerator's DMA and the bus, so it sees every transfer, and
// reaches the RAM with debug transport; register_dut drives the accelerator as the software would.
//
//   software --------------------------> bus --> ram             at 0x20000000
//   accel.dma --> env [checker, monitor] --^  --> accel.regs      at 0x40000000
#include <systolic/accelerator.h>
#include <systolic/verify/environment.h>
#include <systolic/verify/problem.h>
#include <systolic/verify/register_dut.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <systemc>
#include <vector>

using namespace systolic;

constexpr std::uint64_t ram_base = 0x20000000, ram_size = 0x100000, regs_base = 0x40000000;

// The user's RAM: any TLM-2.0 target with b_transport and transport_dbg will do.
struct ram : sc_core::sc_module {
    tlm_utils::simple_target_socket<ram> target_socket{"target_socket"};
    std::vector<unsigned char> bytes = std::vector<unsigned char>(ram_size);
    explicit ram(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        target_socket.register_b_transport(this, &ram::b_transport);
        target_socket.register_transport_dbg(this, &ram::transport_dbg);
    }
    unsigned int transport_dbg(tlm::tlm_generic_payload& t) {
        const std::uint64_t a = t.get_address(), len = t.get_data_length();
        if (a + len > ram_size) {
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return 0;
        }
        if (t.is_read()) std::memcpy(t.get_data_ptr(), &bytes[a], len);
        if (t.is_write()) std::memcpy(&bytes[a], t.get_data_ptr(), len);
        t.set_response_status(tlm::TLM_OK_RESPONSE);
        return static_cast<unsigned int>(len);
    }
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        if (transport_dbg(t) == t.get_data_length()) delay += sc_core::sc_time(10, sc_core::SC_NS);
    }
};

// The user's bus: two initiators in, RAM and registers out, addresses made local to each target.
struct bus : sc_core::sc_module {
    tlm_utils::simple_target_socket_tagged<bus> cpu_side{"cpu_side"}, dma_side{"dma_side"};
    tlm_utils::simple_initiator_socket<bus> to_ram{"to_ram"}, to_regs{"to_regs"};
    explicit bus(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        for (auto* s : {&cpu_side, &dma_side}) {
            s->register_b_transport(this, &bus::b_transport, 0);
            s->register_transport_dbg(this, &bus::transport_dbg, 0);
        }
    }
    tlm_utils::simple_initiator_socket<bus>* route(tlm::tlm_generic_payload& t) {
        const std::uint64_t a = t.get_address();
        if (a >= ram_base && a < ram_base + ram_size) {
            t.set_address(a - ram_base);
            return &to_ram;
        }
        if (a >= regs_base && a < regs_base + SYSTOLIC_REGS_SIZE) {
            t.set_address(a - regs_base);
            return &to_regs;
        }
        t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
        return nullptr;
    }
    void b_transport(int, tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        const std::uint64_t a = t.get_address();
        if (auto* out = route(t)) (*out)->b_transport(t, delay);
        t.set_address(a);
    }
    unsigned int transport_dbg(int, tlm::tlm_generic_payload& t) {
        const std::uint64_t a = t.get_address();
        unsigned int n = 0;
        if (auto* out = route(t)) n = (*out)->transport_dbg(t);
        t.set_address(a);
        return n;
    }
};

struct platform : sc_core::sc_module {
    ram memory{"memory"};
    bus interconnect{"interconnect"};
    accelerator accel{"accel", accelerator::config{}};
    verify::environment<int32_format> env{"env", ram_base, ram_size};
    tlm_utils::simple_initiator_socket<platform> cpu{"cpu"};
    sc_core::sc_signal<bool> irq{"irq"};
    int passed = 0, failed = 0;

    SC_HAS_PROCESS(platform);
    explicit platform(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        cpu.bind(interconnect.cpu_side);
        accel.dma.bind(env.target_socket);
        env.initiator_socket.bind(interconnect.dma_side);
        interconnect.to_ram.bind(memory.target_socket);
        interconnect.to_regs.bind(accel.regs);
        accel.irq.bind(irq);
        SC_THREAD(software);
    }

    // The software's register accessors, for the driver: one bus transaction each.
    static std::uint32_t access(platform* p, tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t v) {
        tlm::tlm_generic_payload t;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        t.set_command(cmd);
        t.set_address(regs_base + offset);
        t.set_data_ptr(reinterpret_cast<unsigned char*>(&v));
        t.set_data_length(4);
        t.set_streaming_width(4);
        p->cpu->b_transport(t, delay);
        sc_core::wait(delay);
        return v;
    }
    static std::uint32_t read32(void* p, std::uint32_t offset) {
        return access(static_cast<platform*>(p), tlm::TLM_READ_COMMAND, offset, 0);
    }
    static void write32(void* p, std::uint32_t offset, std::uint32_t value) {
        access(static_cast<platform*>(p), tlm::TLM_WRITE_COMMAND, offset, value);
    }

    void software() {
        verify::register_dut::config cfg;
        cfg.array_size = accel.cfg().array_size;
        cfg.irq = &irq;
        verify::register_dut dut({this, &read32, &write32}, dtype::int32, cfg);
        // Jobs the environment places in RAM, fills, runs and checks: every write of C, the memory
        // outside C, the edge counts and the TLM protocol.
        for (std::uint64_t seed = 1; seed <= 3; ++seed) {
            const auto pr = verify::random_problem<int32_format>({5 * seed, 7, 3 + seed}, seed);
            const auto check = env.check(dut, pr);
            (check.pass() ? passed : failed)++;
            for (const auto& e : check.scoreboard.errors)
                std::printf("job %llu: %s\n", static_cast<unsigned long long>(seed), e.c_str());
        }
        // A job the accelerator must refuse: C on top of A. It ends with ERR_OVERLAP, writes
        // nothing and leaves the memory as it was.
        matmul_job bad = env.plan_memory({4, 4, 4}, {});
        bad.c.base = bad.a.base;
        const auto refused = env.check_refused(dut, bad, job_status::rejected);
        (refused.pass() && refused.result.error == "ERR_OVERLAP" ? passed : failed)++;
    }
};

int sc_main(int, char*[]) {
    platform p("platform");
    sc_core::sc_start();
    std::printf("verified_platform: %d jobs checked, %d failed, %s\n", p.passed + p.failed, p.failed,
                p.failed == 0 && p.passed == 4 ? "PASS" : "FAIL");
    return p.failed == 0 && p.passed == 4 ? 0 : 1;
}
