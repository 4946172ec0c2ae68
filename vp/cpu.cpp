#include "cpu.h"

#include <systolic/accelerator_driver.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "io/text.h"
#include "systolic/accelerator_job.h"
#include "systolic/counting.h"
#include "systolic/number_format.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/reference_gemm.h"
#include "systolic/verify/register_dut.h"
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

// The accumulator (or int8) element at p as text: integers exactly, floats with 9 digits.
template <class T>
std::string element(const std::uint8_t* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    std::ostringstream os;
    os.precision(9);
    os << +v;
    return os.str();
}

bool in_ram(const matrix_layout& l, const cpu::config& cfg) {
    const address_range r = l.range();
    return !r.empty() && r.base >= cfg.ram_base && r.end <= address_range::wide{cfg.ram_base} + cfg.ram_size;
}

}  // namespace

// A copy of the whole RAM, read by bus address. Every access is bounds-checked: an address outside
// the copy is a failure, never a stray read.
class cpu::ram_snapshot {
public:
    ram_snapshot(std::uint64_t base, const std::vector<std::uint8_t>& bytes) : m_base(base), m_bytes(bytes) {}
    const std::uint8_t* at(std::uint64_t addr, std::uint64_t len) const {
        if (addr < m_base || len > m_bytes.size() || addr - m_base > m_bytes.size() - len)
            throw std::out_of_range(std::to_string(len) + " bytes at " + hex(addr) + " lie outside RAM");
        return m_bytes.data() + (addr - m_base);
    }
    std::uint64_t size() const { return m_bytes.size(); }
    std::uint8_t operator[](std::uint64_t i) const { return m_bytes[i]; }

private:
    std::uint64_t m_base;
    const std::vector<std::uint8_t>& m_bytes;
};

cpu::cpu(const sc_core::sc_module_name& name, const config& cfg, std::vector<command> script,
         std::ostream& out)
    : sc_core::sc_module(name),
      initiator_socket("initiator_socket"),
      irq("irq"),
      m_cfg(cfg),
      m_script(std::move(script)),
      m_out(out) {
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

// The buffers are kept from job to job: a fresh 16 MiB twice per job cost more than the job.
cpu::ram_snapshot cpu::snapshot(std::vector<std::uint8_t>& buffer) {
    buffer.resize(m_cfg.ram_size);
    debug_read(m_cfg.ram_base, buffer.data(), buffer.size());
    return ram_snapshot(m_cfg.ram_base, buffer);
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
    if (c.verb == "write") {
        reg_write(c.reg, c.value);
    } else if (c.verb == "read" || c.verb == "print") {
        const std::uint32_t v = reg_read(c.reg);
        if (c.verb == "print") m_out << a[0] << " = " << hex(v) << " (" << value_name(c.reg, v) << ")\n";
        if (a.size() == 3) {
            ++m_checks;
            if (v != c.value)
                fail(c, a[0] + " is " + hex(v) + " (" + value_name(c.reg, v) + "), expected " + hex(c.value));
        }
    } else if (c.verb == "poll") {
        const sc_core::sc_time until = sc_core::sc_time_stamp() + from_now(c.time_ps.value_or(timeout_ps));
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
    } else if (c.verb == "wait-irq") {
        ++m_checks;
        if (!wait_irq(from_now(c.time_ps.value_or(timeout_ps)))) fail(c, "no interrupt");
    } else if (c.verb == "delay") {
        sc_core::wait(from_now(*c.time_ps));
    } else if (c.verb == "mem") {
        debug_write(c.address, c.bytes.data(), c.bytes.size());
    } else if (c.verb == "expect-mem") {
        ++m_checks;
        std::vector<std::uint8_t> have(c.bytes.size());
        debug_read(c.address, have.data(), have.size());
        if (have != c.bytes) fail(c, "memory at " + hex(c.address) + " differs");
    } else if (c.verb == "job") {
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
    }
}

template <class Format>
void cpu::run_job(const command& c, job_record& rec) {
    using op_t = typename Format::operand_type;
    using acc_t = typename Format::accumulator_type;
    const systolic_dev dev{this, drv_read32, drv_write32};
    const job_spec& spec = c.job;
    const job_layout& lay = spec.layout;

    // The problem: the seeds' example, or seeded random data as systolic-tb makes it.
    verify::problem<Format> pr = spec.seed_data
                                     ? verify::seed_example<Format>()
                                     : verify::random_problem<Format>({spec.m, spec.k, spec.p}, spec.seed);
    const problem_shape s = pr.shape;
    rec.m = s.m;
    rec.k = s.k;
    rec.p = s.p;

    systolic_job job;
    systolic_job_init(&job);
    // The parser takes only the values whose registers have codes.
    job.dtype = regmap::code_for(regmap::dtype_values, dtype_names, spec.dtype).value();
    job.m = std::uint32_t(s.m);
    job.k = std::uint32_t(s.k);
    job.p = std::uint32_t(s.p);
    job.order = regmap::code_for(regmap::order_values, tile_order_names, spec.order).value();
    job.k_policy = regmap::code_for(regmap::k_policy_values, k_policy_names, spec.k_policy).value();
    job.overflow = regmap::code_for(regmap::overflow_values, overflow_mode_names, spec.overflow).value();
    job.out_dtype = regmap::code_for(regmap::out_dtype_values, output_dtype_names, spec.out_dtype).value();
    job.rounding = regmap::code_for(regmap::rounding_values, rounding_mode_names, spec.rounding).value();
    job.k_tile = spec.k_tile;
    job.scale = spec.scale;
    job.zero_point = spec.zero_point;
    job.a_stride = spec.a_stride;
    job.b_stride = spec.b_stride;
    job.c_stride = spec.c_stride;
    job.a_addr = lay.a.base;
    job.b_addr = lay.b.base;
    job.c_addr = lay.c.base;
    const bool partials = lay.partial.rows != 0;
    if (partials) job.partial_addr = lay.partial.base;
    const std::uint64_t csz = lay.c.elem_size;

    // Mark the job's scratch span and C, so that an unwritten element shows; load the operands that
    // lie in RAM (as a debugger's loader would; a job expected to be refused may point elsewhere).
    const std::vector<std::uint8_t> mark(lay.scratch, 0xcd);
    debug_write(m_cfg.ram_base, mark.data(), mark.size());
    if (in_ram(lay.c, m_cfg) && lay.c.range().end > m_cfg.ram_base + lay.scratch) {  // C moved away
        const std::vector<std::uint8_t> c_mark(std::uint64_t(lay.c.range().end - lay.c.base), 0xcd);
        debug_write(lay.c.base, c_mark.data(), c_mark.size());
    }
    if (in_ram(lay.a, m_cfg))
        for (std::uint64_t r = 0; r < s.m; ++r)
            debug_write(lay.a.address(r, 0), &pr.a[r * s.k], s.k * sizeof(op_t));
    if (in_ram(lay.b, m_cfg))
        for (std::uint64_t r = 0; r < s.k; ++r)
            debug_write(lay.b.address(r, 0), &pr.b[r * s.p], s.p * sizeof(op_t));
    const ram_snapshot before = snapshot(m_ram_before);

    // The driver's part: program, start, wait (interrupt or polling), read the outcome.
    const bool use_irq = spec.use_irq;
    const sc_core::sc_time timeout = from_now(spec.timeout_ps.value_or(m_cfg.timeout.value()));
    systolic_program(&dev, &job);
    const sc_core::sc_time t0 = sc_core::sc_time_stamp();
    systolic_start(&dev, use_irq);
    bool ended = false;
    if (use_irq) {
        ended = wait_irq(timeout);
    } else {
        const sc_core::sc_time until = t0 + timeout;
        while (!(ended = systolic_outcome(&dev) != 0) && sc_core::sc_time_stamp() < until)
            sc_core::wait(m_cfg.poll_interval);
    }
    const sc_core::sc_time took = sc_core::sc_time_stamp() - t0;
    if (!ended) {
        systolic_reset(&dev);
        rec.message = "the job did not end within " + timeout.to_string();
        return;
    }
    const int outcome = systolic_outcome(&dev);
    const std::uint32_t error = systolic_error(&dev);
    systolic_counters cnt{};
    systolic_read_counters(&dev, &cnt);
    if (use_irq) systolic_irq_ack(&dev);
    rec.edges = cnt.edges;
    rec.macs = cnt.macs;
    rec.macs_real = cnt.macs_real;
    rec.cycles = cnt.cycles;
    rec.expected = spec.expected;
    rec.outcome = outcome == 1 ? "ok" : verify::error_name(error);

    // Every byte of RAM, before against after.
    const ram_snapshot after = snapshot(m_ram_after);
    std::uint64_t changed_outside = 0, changed = 0;
    for (std::uint64_t i = 0; i < after.size(); ++i) {
        if (after[i] == before[i]) continue;
        ++changed;
        const std::uint64_t addr = m_cfg.ram_base + i;
        changed_outside += !lay.c.covers(addr) && !(partials && lay.partial.range().contains(addr));
    }

    m_out << "job " << io::printable(rec.name) << ": C = A*B with M=" << s.m << " K=" << s.k << " P=" << s.p
          << " on a " << m_cfg.array_size << "x" << m_cfg.array_size << " array, " << Format::name
          << " operands, " << Format::accumulator_name << " accumulators"
          << (spec.out_dtype == output_dtype::int8 ? ", int8 output" : "") << "\n";
    if (rec.expected != "ok") {
        rec.pass = rec.outcome == rec.expected && changed == 0;
        m_out << "expected " << rec.expected << ", got " << rec.outcome << "; "
              << (changed == 0 ? "memory untouched" : std::to_string(changed) + " bytes of memory changed")
              << "\n";
        if (!rec.pass)
            rec.message = "expected " + rec.expected + " and no memory change, got " + rec.outcome + " and " +
                          std::to_string(changed) + " changed bytes";
        m_out << (rec.pass ? "PASS" : "FAIL") << "\n";
        return;
    }
    if (outcome != 1) {
        rec.message = "the job failed with " + rec.outcome;
        if (error == SYSTOLIC_ERR_DMA) rec.message += " at " + hex(systolic_error_address(&dev));
        m_out << rec.message << "\nFAIL\n";
        return;
    }

    // C against the reference, element by element; the counters against the counting rules.
    verify::reference_options ref;
    ref.k_tile = job.k_tile;
    ref.policy = spec.k_policy;
    ref.overflow = spec.overflow;
    quantization q;
    q.enabled = spec.out_dtype == output_dtype::int8;
    q.scale = job.scale;
    q.zero_point = job.zero_point;
    q.rounding = spec.rounding;
    const std::vector<std::uint8_t> expected =
        verify::encode_c<Format>(verify::reference_gemm<Format>(s, pr.a, pr.b, ref), q);
    rec.c.resize(s.m * s.p * csz);
    for (std::uint64_t r = 0; r < s.m; ++r)
        std::memcpy(&rec.c[r * s.p * csz], after.at(lay.c.address(r, 0), s.p * csz), s.p * csz);
    rec.c_descr = q.enabled ? "|i1" : Format::accumulator_descr;
    const auto show = [&](const std::uint8_t* p) {
        return q.enabled ? element<std::int8_t>(p) : element<acc_t>(p);
    };
    std::uint64_t mismatches = 0;
    std::string first;
    for (std::uint64_t i = 0; i < s.m * s.p; ++i) {
        if (std::memcmp(&rec.c[i * csz], &expected[i * csz], csz) == 0) continue;
        if (mismatches++ == 0)
            first = "C(" + std::to_string(i / s.p) + "," + std::to_string(i % s.p) + ") expected " +
                    show(&expected[i * csz]) + ", got " + show(&rec.c[i * csz]);
    }
    const expected_counts e = count_job(s, m_cfg.array_size, job.k_tile);
    if (s.m * s.p <= 64) {
        m_out << "C=[";
        for (std::uint64_t r = 0; r < s.m; ++r) {
            m_out << (r ? ",[" : "[");
            for (std::uint64_t col = 0; col < s.p; ++col)
                m_out << (col ? "," : "") << show(&rec.c[(r * s.p + col) * csz]);
            m_out << "]";
        }
        m_out << "]\n";
    }
    m_out << "advance edges: " << cnt.edges << ", MACs: " << cnt.macs << " with padding, " << cnt.macs_real
          << " real (utilization "
          << std::round(10000.0 * double(cnt.macs_real) / double(std::max<std::uint64_t>(cnt.macs, 1))) / 100
          << "%)\n";
    m_out << "cycles: " << cnt.cycles << " (" << (use_irq ? "interrupt " : "seen done ")
          << tb::format_time(took) << " after systolic_start())\n";
    m_out << "checked: " << s.m * s.p - mismatches << " of " << s.m * s.p
          << " elements of C match the reference, "
          << (changed_outside == 0 ? "the rest of RAM untouched"
                                   : std::to_string(changed_outside) + " bytes of RAM outside C changed")
          << "\n";
    std::ostringstream why;
    if (mismatches) why << mismatches << " elements of C differ, first " << first << "; ";
    if (changed_outside) why << changed_outside << " bytes of RAM outside C changed; ";
    if (cnt.edges != e.advance_edges)
        why << "EDGES " << cnt.edges << ", expected " << e.advance_edges << "; ";
    if (cnt.macs != e.macs_padded) why << "MACS " << cnt.macs << ", expected " << e.macs_padded << "; ";
    if (cnt.macs_real != e.macs_real)
        why << "MACS_REAL " << cnt.macs_real << ", expected " << e.macs_real << "; ";
    rec.message = why.str();
    rec.pass = rec.message.empty();
    m_out << (rec.pass ? "PASS" : "FAIL") << "\n";
}

}  // namespace systolic::vp
