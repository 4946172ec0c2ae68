#include "cpu.h"

#include <systolic/accelerator_driver.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "io/text.h"
#include "systolic/accelerator_job.h"
#include "systolic/accelerator_map.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "time_text.h"

namespace systolic::vp {

namespace {

std::uint32_t drv_read32(void* ctx, std::uint32_t offset) {
    return static_cast<cpu*>(ctx)->reg_read(offset);
}
void drv_write32(void* ctx, std::uint32_t offset, std::uint32_t value) {
    static_cast<cpu*>(ctx)->reg_write(offset, value);
}

std::string hex(std::uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

}  // namespace

cpu::cpu(const sc_core::sc_module_name& name, const config& cfg, std::vector<command> script,
         verify::format_environments& checks, std::ostream& out)
    : sc_core::sc_module(name),
      initiator_socket("initiator_socket"),
      irq("irq"),
      m_cfg(cfg),
      m_script(std::move(script)),
      m_out(out),
      m_envs(checks),
      m_dut(systolic_dev{this, drv_read32, drv_write32}, dtype::int32, {}) {
    SC_THREAD(run);
}

// One 32-bit register access through the bus, timed by its annotated delay.
void cpu::reg_access(tlm::tlm_command cmd, std::uint32_t offset, std::uint32_t& value) {
    tlm::tlm_generic_payload t;
    t.set_command(cmd);
    t.set_address(m_cfg.regs_base + offset);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(&value));
    t.set_data_length(4);
    t.set_streaming_width(4);
    t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
    sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
    initiator_socket->b_transport(t, delay);
    sc_core::wait(delay);
    if (!t.is_response_ok())
        throw step_failure{std::string(cmd == tlm::TLM_READ_COMMAND ? "register read" : "register write") +
                           " at " + hex(m_cfg.regs_base + offset) + ": " + t.get_response_string()};
}

std::uint32_t cpu::reg_read(std::uint32_t offset) {
    std::uint32_t v = 0;
    reg_access(tlm::TLM_READ_COMMAND, offset, v);
    return v;
}

void cpu::reg_write(std::uint32_t offset, std::uint32_t value) {
    reg_access(tlm::TLM_WRITE_COMMAND, offset, value);
}

void cpu::debug_write(std::uint64_t addr, const void* data, std::uint64_t len) {
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_WRITE_COMMAND);
    t.set_address(addr);
    t.set_data_ptr(static_cast<unsigned char*>(const_cast<void*>(data)));
    t.set_data_length(static_cast<unsigned int>(len));
    t.set_streaming_width(static_cast<unsigned int>(len));
    if (len && initiator_socket->transport_dbg(t) != len)
        throw step_failure{"cannot load " + std::to_string(len) + " bytes at " + hex(addr)};
}

void cpu::debug_read(std::uint64_t addr, void* data, std::uint64_t len) {
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(addr);
    t.set_data_ptr(static_cast<unsigned char*>(data));
    t.set_data_length(static_cast<unsigned int>(len));
    t.set_streaming_width(static_cast<unsigned int>(len));
    if (len && initiator_socket->transport_dbg(t) != len)
        throw step_failure{"cannot read " + std::to_string(len) + " bytes at " + hex(addr)};
}

bool cpu::wait_irq(const sc_core::sc_time& timeout) {
    if (!irq.read()) sc_core::wait(timeout, irq.posedge_event());
    return irq.read();
}

void cpu::fail(const command& c, const std::string& message) {
    ++m_failures;
    m_out << "FAIL line " << c.line << " (" << c.text << "): " << io::printable(message) << "\n";
}

void cpu::run() {
    for (const command& c : m_script) {
        try {
            exec(c);
        } catch (const step_failure& f) {
            fail(c, f.message);
        } catch (const std::exception& e) {  // e.g. a snapshot read outside RAM: a failure, not a crash
            fail(c, e.what());
        }
    }
    m_finished = true;  // nothing else is scheduled now: the simulation ends by starvation
    // The thread stays suspended rather than returning: libsystemc announces the switch away from a
    // thread that returned as one to an empty stack, so ASan would then misjudge the main stack
    // and report false errors for an exception thrown after sc_start (a failed stdout).
    sc_core::wait(m_never);
}

// A time from the script (at most 2^64 - 1 ps), cut to what is left of SystemC's range from now, so
// that no deadline wraps around. The platform keeps SystemC's default resolution, 1 ps, so an
// sc_time's value is picoseconds.
sc_core::sc_time cpu::from_now(std::uint64_t ps) const {
    const std::uint64_t now = sc_core::sc_time_stamp().value();
    return sc_core::sc_time::from_value(std::min(ps, ~std::uint64_t{0} - now));
}

void cpu::exec(const command& c) {
    const auto& a = c.args;
    const std::uint64_t timeout_ps = m_cfg.timeout.value();
    switch (c.verb) {
        case verb::write:
            reg_write(c.reg, c.value);
            break;
        case verb::read:
        case verb::print: {
            const std::uint32_t v = reg_read(c.reg);
            if (c.verb == verb::print)
                m_out << a[0] << " = " << hex(v) << " (" << value_name(c.reg, v) << ")\n";
            if (a.size() == 3) {
                ++m_checks;
                if (v != c.value)
                    fail(c, a[0] + " is " + hex(v) + " (" + value_name(c.reg, v) + "), expected " +
                                hex(c.value));
            }
            break;
        }
        case verb::poll: {
            const sc_core::sc_time until =
                sc_core::sc_time_stamp() + from_now(c.time_ps.value_or(timeout_ps));
            ++m_checks;
            for (;;) {
                const std::uint32_t v = reg_read(c.reg);
                if ((v & c.mask) == c.value) break;
                if (sc_core::sc_time_stamp() >= until) {
                    fail(c, "timed out: " + a[0] + " is " + hex(v));
                    break;
                }
                sc_core::wait(m_cfg.poll_interval);
            }
            break;
        }
        case verb::wait_irq:
            ++m_checks;
            if (!wait_irq(from_now(c.time_ps.value_or(timeout_ps)))) fail(c, "no interrupt");
            break;
        case verb::delay:
            sc_core::wait(from_now(*c.time_ps));
            break;
        case verb::mem:
            debug_write(c.address, c.bytes.data(), c.bytes.size());
            break;
        case verb::expect_mem: {
            ++m_checks;
            std::vector<std::uint8_t> have(c.bytes.size());
            debug_read(c.address, have.data(), have.size());
            if (have != c.bytes) fail(c, "memory at " + hex(c.address) + " differs");
            break;
        }
        case verb::job: {
            job_record rec;
            rec.name = a[0];
            with_format(c.job.dtype, [&](auto format) {
                using Format = decltype(format);
                rec.dtype = Format::name;
                run_job<Format>(c, rec);
            });
            ++m_checks;
            if (!rec.pass) fail(c, rec.message);
            m_jobs.push_back(std::move(rec));
            break;
        }
    }
}

template <class Format>
void cpu::run_job(const command& c, job_record& rec) {
    const job_spec& spec = c.job;
    const systolic_dev dev{this, drv_read32, drv_write32};
    // The problem: the seeds' example, or seeded random data as systolic-tb makes it.
    verify::problem<Format> pr = spec.seed_data
                                     ? verify::seed_example<Format>()
                                     : verify::random_problem<Format>({spec.m, spec.k, spec.p}, spec.seed);
    pr.column_scales = spec.scales;  // written where run.quant.columns says, by the environment
    pr.column_zero_points = spec.zero_points;
    const problem_shape s = pr.shape;
    rec.m = s.m;
    rec.k = s.k;
    rec.p = s.p;
    rec.expected = spec.expected;
    // At the script's addresses: a job the accelerator must refuse keeps the fields that make it wrong.
    const matmul_job job{s, spec.layout.a, spec.layout.b, spec.layout.c, spec.layout.partial, spec.run};

    verify::register_dut::config dc;
    dc.array_size = m_cfg.array_size;
    dc.irq = spec.use_irq ? irq.operator->() : nullptr;
    dc.poll_interval = m_cfg.poll_interval;
    m_dut.set_config(dc);
    m_dut.set_dtype(spec.dtype);
    verify::job_options opt;
    opt.time_limit = from_now(spec.timeout_ps.value_or(m_cfg.timeout.value()));
    opt.guard = m_cfg.ram_size;  // the whole RAM stays as it was, outside C and the partial sums
    verify::environment<Format>& env = m_envs.of<Format>();

    const auto header = [&] {
        m_out << "job " << io::printable(rec.name) << ": C = A*B with M=" << s.m << " K=" << s.k
              << " P=" << s.p << " on a " << m_cfg.array_size << "x" << m_cfg.array_size << " array, "
              << Format::name << " operands, " << Format::accumulator_name << " accumulators"
              << (job.run.quant.enabled ? ", int8 output" : "") << "\n";
    };
    const auto hung = [&](const job_result& r) {
        if (r.status != job_status::running) return false;
        systolic_reset(&dev);
        rec.message = "the job did not end within " + opt.time_limit.to_string();
        return true;
    };

    if (!rec.expected.ok()) {
        const std::uint32_t code = rec.expected.error;
        const verify::refusal_check r =
            env.check_refused(m_dut, job, verify::error_status(code), m_cfg.ram_size);
        if (hung(r.result)) return;
        rec.outcome = job_outcome{r.result.completed() ? SYSTOLIC_ERR_NONE : m_dut.error_code()};
        m_dma_violations += r.protocol_violations;
        header();
        rec.pass = r.pass() && m_dut.error_code() == code;
        m_out << "expected " << rec.expected.name() << ", got " << rec.outcome.name() << "; "
              << (r.untouched_ok && r.writes == 0 ? "memory untouched" : "memory changed") << "\n";
        if (!rec.pass) {
            rec.message =
                "expected " + rec.expected.name() + " and no memory change, got " + rec.outcome.name();
            for (const auto& e : r.errors)
                rec.message += "; " + e;
        }
        m_out << (rec.pass ? "PASS" : "FAIL") << "\n";
        return;
    }

    const verify::job_check<Format> out = env.check(m_dut, pr, opt, job);
    if (hung(out.result)) return;
    const job_result& r = out.result;
    rec.edges = r.advance_edges;
    rec.macs = r.macs_padded;
    rec.macs_real = r.macs_real;
    rec.cycles = m_dut.cycles();
    if (m_cfg.read_energy) {
        std::uint64_t pj = 0;  // ENERGY_LO, ENERGY_HI: little-endian, as the 64-bit value
        debug_read(m_cfg.regs_base + SYSTOLIC_REG_ENERGY_LO, &pj, sizeof pj);
        rec.energy_pj = pj;
    }
    rec.scoreboard = out.scoreboard;
    rec.outcome = job_outcome{r.completed() ? SYSTOLIC_ERR_NONE : m_dut.error_code()};
    m_dma_violations += out.scoreboard.protocol_violations;
    header();
    if (!r.completed()) {
        rec.message = "the job failed with " + r.error;
        m_out << rec.message << "\nFAIL\n";
        return;
    }

    rec.c = out.c;
    rec.c_descr = job.run.quant.enabled ? "|i1" : Format::accumulator_descr;
    const std::uint64_t csz = job.c.elem_size;
    const auto show = [&](const std::uint8_t* p) {
        std::ostringstream os;
        os.precision(9);
        if (job.run.quant.enabled) {
            os << int(std::int8_t(*p));
        } else {
            typename Format::accumulator_type v;
            std::memcpy(&v, p, sizeof v);
            os << +v;
        }
        return os.str();
    };
    std::uint64_t matches = 0;
    for (std::uint64_t i = 0; i < s.m * s.p; ++i)
        matches += std::memcmp(&out.c[i * csz], &out.reference[i * csz], csz) == 0;
    if (s.m * s.p <= 64) {
        m_out << "C=[";
        for (std::uint64_t row = 0; row < s.m; ++row) {
            m_out << (row ? ",[" : "[");
            for (std::uint64_t col = 0; col < s.p; ++col)
                m_out << (col ? "," : "") << show(&out.c[(row * s.p + col) * csz]);
            m_out << "]";
        }
        m_out << "]\n";
    }
    m_out << "advance edges: " << r.advance_edges << ", MACs: " << r.macs_padded << " with padding, "
          << r.macs_real << " real (utilization "
          << std::round(10000.0 * double(r.macs_real) / double(std::max<std::uint64_t>(r.macs_padded, 1))) /
                 100
          << "%)\n";
    m_out << "cycles: " << m_dut.cycles() << " (" << (spec.use_irq ? "interrupt " : "seen done ")
          << cli::format_time(m_dut.took()) << " after systolic_start())\n";
    if (rec.energy_pj) m_out << "energy: " << *rec.energy_pj << " pJ (ENERGY)\n";
    m_out << "checked: " << matches << " of " << s.m * s.p << " elements of C match the reference, "
          << (out.scoreboard.untouched_ok ? "the rest of RAM untouched" : "RAM outside C changed") << "\n";
    for (const auto& e : out.scoreboard.errors)
        rec.message += (rec.message.empty() ? "" : "; ") + e;
    rec.pass = out.pass();
    if (rec.pass) rec.message.clear();
    m_out << (rec.pass ? "PASS" : "FAIL") << "\n";
}

}  // namespace systolic::vp
