// The smallest platform a user writes: a memory of its own (any TLM-2.0 LT target will do), the
// accelerator, and sc_main programming one job through the registers with the installed driver.
#include <systolic/accelerator.h>
#include <systolic/accelerator_driver.h>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <systemc>
#include <vector>

extern "C" int consumer_probe(const systolic_dev* dev, uint32_t* n);

// A plain RAM at 0x10000000: b_transport only, no DMI.
struct ram : sc_core::sc_module {
    static constexpr std::uint64_t base = 0x10000000, size = 0x10000;
    tlm_utils::simple_target_socket<ram> target_socket{"target_socket"};
    std::vector<unsigned char> bytes = std::vector<unsigned char>(size);
    explicit ram(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {
        target_socket.register_b_transport(this, &ram::b_transport);
    }
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        const std::uint64_t a = t.get_address(), len = t.get_data_length();
        if (a < base || a + len > base + size) {
            t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
            return;
        }
        unsigned char* p = &bytes[a - base];
        if (t.is_read()) std::memcpy(t.get_data_ptr(), p, len);
        if (t.is_write()) std::memcpy(p, t.get_data_ptr(), len);
        delay += sc_core::sc_time(5, sc_core::SC_NS);
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }
};

// Register accesses from sc_main (the accelerator's registers never wait).
struct host : sc_core::sc_module {
    tlm_utils::simple_initiator_socket<host> socket{"socket"};
    explicit host(const sc_core::sc_module_name& n) : sc_core::sc_module(n) {}
    std::uint32_t access(tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t v) {
        tlm::tlm_generic_payload t;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        t.set_command(cmd);
        t.set_address(offset);
        t.set_data_ptr(reinterpret_cast<unsigned char*>(&v));
        t.set_data_length(4);
        t.set_streaming_width(4);
        t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        socket->b_transport(t, delay);
        if (!t.is_response_ok()) {
            std::fprintf(stderr, "consumer: register access at 0x%x failed\n", offset);
            std::exit(1);
        }
        return v;
    }
};

std::uint32_t rd(void* ctx, std::uint32_t off) {
    return static_cast<host*>(ctx)->access(tlm::TLM_READ_COMMAND, off, 0);
}
void wr(void* ctx, std::uint32_t off, std::uint32_t v) {
    static_cast<host*>(ctx)->access(tlm::TLM_WRITE_COMMAND, off, v);
}

int sc_main(int, char*[]) {
    systolic::accelerator::config cfg;
    cfg.array_size = 2;
    systolic::accelerator accel("accel", cfg);
    ram mem("ram");
    host cpu("cpu");
    sc_core::sc_signal<bool> irq("irq");
    cpu.socket.bind(accel.regs);
    accel.dma.bind(mem.target_socket);
    accel.irq.bind(irq);

    const std::int32_t a[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, b[9] = {1, 0, 2, 0, 1, 0, 2, 0, 1};
    std::memcpy(&mem.bytes[0x000], a, sizeof a);
    std::memcpy(&mem.bytes[0x100], b, sizeof b);
    const systolic_dev dev{&cpu, rd, wr};
    std::uint32_t n = 0;
    if (consumer_probe(&dev, &n) != 0 || n != 2) return std::puts("consumer: probe failed"), 1;
    systolic_job job;
    systolic_job_init(&job);
    job.m = job.k = job.p = 3;
    job.a_addr = ram::base;
    job.b_addr = ram::base + 0x100;
    job.c_addr = ram::base + 0x200;
    systolic_program(&dev, &job);
    systolic_start(&dev, 1);
    sc_core::sc_start();
    std::int64_t c[9];
    std::memcpy(c, &mem.bytes[0x200], sizeof c);
    const std::int64_t want[9] = {7, 2, 5, 16, 5, 14, 25, 8, 23};
    const bool ok = irq.read() && systolic_outcome(&dev) == 1 && std::memcmp(c, want, sizeof c) == 0;
    std::printf("consumer: C(0,0)=%lld C(2,2)=%lld irq=%d, %s\n", static_cast<long long>(c[0]),
                static_cast<long long>(c[8]), int(irq.read()), ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
}
