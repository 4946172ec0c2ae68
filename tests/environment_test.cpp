// The verification environment driving a DUT of a platform's own through the adapter interface
// (dut.h), not a tile_controller: a small device that reads A and B over TLM, multiplies them and
// writes C. The environment checks its jobs fully (every write, memory outside C, protocol) and
// refuses to count a job as right when the device writes twice, writes beside C or breaks a refusal.
#include <gtest/gtest.h>

#include <tlm_utils/simple_initiator_socket.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/job.h"
#include "systolic/memory.h"
#include "systolic/number_format.h"
#include "systolic/verify/dut.h"
#include "systolic/verify/environment.h"
#include "systolic/verify/problem.h"

namespace {

using namespace systolic;
using namespace systolic::verify;
using fmt = int32_format;

enum class behaviour { right, write_row_twice, write_past_row, refuse, refuse_but_write };

// A platform's own device: reads the operands a row at a time, multiplies, writes C a row at a time.
SC_MODULE(toy_device), public dut {
    tlm_utils::simple_initiator_socket<toy_device> initiator_socket;
    behaviour mode = behaviour::right;

    SC_CTOR(toy_device) : initiator_socket("initiator_socket") {
        SC_THREAD(run);
    }

    void start(const matmul_job& job) override {
        m_job = job;
        m_busy = true;
        m_result = job_result{};
        m_result.status = job_status::running;
        m_start.notify(sc_core::SC_ZERO_TIME);
    }
    const sc_core::sc_event& done_event() const override {
        return m_done;
    }
    bool busy() const override {
        return m_busy;
    }
    job_result result() override {
        return m_result;
    }
    systolic::expected_counts expected_counts(const problem_shape&, std::uint64_t, dataflow_kind)
        const override {
        return {};  // it counts no advance edges and reports no tiles
    }

private:
    void access(tlm::tlm_command cmd, std::uint64_t addr, void* data, std::uint64_t len) {
        tlm::tlm_generic_payload t;
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        t.set_command(cmd);
        t.set_address(addr);
        t.set_data_ptr(static_cast<unsigned char*>(data));
        t.set_data_length(static_cast<unsigned int>(len));
        t.set_streaming_width(static_cast<unsigned int>(len));
        t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        initiator_socket->b_transport(t, delay);
        if (!t.is_response_ok()) throw std::runtime_error("toy_device: bus error");
    }

    void run() {
        for (;;) {
            sc_core::wait(m_start);
            const auto& s = m_job.shape;
            if (mode == behaviour::refuse || mode == behaviour::refuse_but_write) {
                if (mode == behaviour::refuse_but_write) {
                    std::int64_t zero = 0;
                    access(tlm::TLM_WRITE_COMMAND, m_job.c.base, &zero, sizeof zero);
                }
                m_result.status = job_status::rejected;
                m_result.error = "refused";
            } else {
                std::vector<std::int32_t> a(s.m * s.k), b(s.k * s.p);
                for (std::uint64_t r = 0; r < s.m; ++r)
                    access(tlm::TLM_READ_COMMAND, m_job.a.address(r, 0), &a[r * s.k], s.k * 4);
                for (std::uint64_t r = 0; r < s.k; ++r)
                    access(tlm::TLM_READ_COMMAND, m_job.b.address(r, 0), &b[r * s.p], s.p * 4);
                std::vector<std::int64_t> row(s.p + 1);
                for (std::uint64_t i = 0; i < s.m; ++i) {
                    for (std::uint64_t j = 0; j < s.p; ++j) {
                        row[j] = 0;
                        for (std::uint64_t k = 0; k < s.k; ++k)
                            row[j] += std::int64_t(a[i * s.k + k]) * b[k * s.p + j];
                    }
                    const std::uint64_t len = (s.p + (mode == behaviour::write_past_row && i == 0)) * 8;
                    access(tlm::TLM_WRITE_COMMAND, m_job.c.address(i, 0), row.data(), len);
                    if (mode == behaviour::write_row_twice && i == 0)
                        access(tlm::TLM_WRITE_COMMAND, m_job.c.address(i, 0), row.data(), s.p * 8);
                }
                m_result.status = job_status::completed;
            }
            m_busy = false;
            m_done.notify(sc_core::SC_ZERO_TIME);
        }
    }

    matmul_job m_job;
    job_result m_result;
    bool m_busy = false;
    sc_core::sc_event m_start, m_done;
};

constexpr std::uint64_t ram_base = 0x10000, ram_size = 0x4000;

// RAM of its own behind the environment, reached by debug transport, and a software thread that
// runs the cases below one after another.
SC_MODULE(platform) {
    memory ram;
    environment<fmt> env;
    toy_device device;

    struct results {
        job_check<fmt> right, twice, past;
        std::string fault_refusal;
        refusal_check refused, refused_but_wrote, refused_wrong_status;
    } r;

    SC_CTOR(platform)
        : ram("ram", memory::config{ram_base, ram_size}), env("env", ram_base, ram_size), device("device") {
        device.initiator_socket.bind(env.target_socket);
        env.initiator_socket.bind(ram.target_socket);
        SC_THREAD(software);
    }

    void software() {
        const auto pr = random_problem<fmt>({5, 7, 3}, 11);
        r.right = env.check(device, pr);
        device.mode = behaviour::write_row_twice;
        r.twice = env.check(device, pr);
        device.mode = behaviour::write_past_row;
        r.past = env.check(device, pr);
        device.mode = behaviour::right;
        job_options o;
        o.inject = fault::no_mask;
        try {
            env.check(device, pr, o);
        } catch (const std::invalid_argument& e) {
            r.fault_refusal = e.what();
        }

        const matmul_job job = env.plan_memory(pr.shape, {});
        device.mode = behaviour::refuse;
        r.refused = env.check_refused(device, job, job_status::rejected);
        r.refused_wrong_status = env.check_refused(device, job, job_status::bus_error);
        device.mode = behaviour::refuse_but_write;
        r.refused_but_wrote = env.check_refused(device, job, job_status::rejected);
    }
};

std::string joined(const std::vector<std::string>& lines) {
    std::string s;
    for (const auto& l : lines)
        s += l + "\n";
    return s;
}

TEST(Environment, ChecksADeviceOfAPlatformsOwnThroughTheAdapter) {
    platform p("platform");
    sc_core::sc_start();
    const auto& r = p.r;

    EXPECT_TRUE(r.right.pass()) << joined(r.right.scoreboard.errors);
    EXPECT_EQ(r.right.scoreboard.checked, 5u * 3u);
    EXPECT_EQ(r.right.c_as<std::int64_t>(),
              reference_gemm<fmt>({5, 7, 3}, random_problem<fmt>({5, 7, 3}, 11).a,
                                  random_problem<fmt>({5, 7, 3}, 11).b));
    EXPECT_GT(p.env.checker.checked(), 0u);

    EXPECT_FALSE(r.twice.pass());
    EXPECT_EQ(r.twice.scoreboard.duplicates, 3u);

    EXPECT_FALSE(r.past.pass());
    EXPECT_EQ(r.past.scoreboard.out_of_range_writes, 1u);

    EXPECT_EQ(r.fault_refusal, "verify: this DUT cannot plant the fault no-mask");

    EXPECT_TRUE(r.refused.pass()) << joined(r.refused.errors);
    EXPECT_FALSE(r.refused_wrong_status.pass());
    EXPECT_EQ(joined(r.refused_wrong_status.errors), "expected status bus_error, got rejected: refused\n");
    EXPECT_FALSE(r.refused_but_wrote.pass());
    EXPECT_EQ(r.refused_but_wrote.writes, 1u);
    EXPECT_FALSE(r.refused_but_wrote.untouched_ok);
}

}  // namespace
