#include "cpu.h"

#include <systolic/accelerator_driver.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

#include "problem.h"
#include "reference_gemm.h"
#include "systolic/accelerator_job.h"
#include "systolic/counting.h"
#include "systolic/number_format.h"
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

std::string error_name(std::uint32_t code) {
    return value_name(SYSTOLIC_REG_ERROR, code);
}

std::uint64_t key_number(const command& c, const char* key, std::uint64_t fallback) {
    const auto it = c.keys.find(key);
    if (it == c.keys.end()) return fallback;
    const auto v = parse_number(it->second);
    if (!v)
        throw script_error("line " + std::to_string(c.line) + ": bad number for " + key + ": " + it->second);
    return *v;
}

std::string key_text(const command& c, const char* key, const std::string& fallback) {
    const auto it = c.keys.find(key);
    return it == c.keys.end() ? fallback : it->second;
}

}  // namespace

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

bool cpu::wait_irq(const sc_core::sc_time& timeout) {
    if (!irq.read()) sc_core::wait(timeout, irq.posedge_event());
    return irq.read();
}

void cpu::fail(const command& c, const std::string& message) {
    ++m_failures;
    m_out << "FAIL line " << c.line << " (" << c.text << "): " << message << "\n";
}

void cpu::run() {
    for (const command& c : m_script) {
        try {
            exec(c);
        } catch (const step_failure& f) {
            fail(c, f.message);
        } catch (const std::exception& e) {  // a value the parser could not judge, e.g. scale=abc
            fail(c, e.what());
        }
    }
    m_finished = true;  // nothing else is scheduled now: the simulation ends by starvation
}

void cpu::exec(const command& c) {
    const auto& a = c.args;
    if (c.verb == "write") {
        const std::uint32_t off = *register_offset(a[0]);
        reg_write(off, *register_value(off, a[1]));
    } else if (c.verb == "read" || c.verb == "print") {
        const std::uint32_t off = *register_offset(a[0]);
        const std::uint32_t v = reg_read(off);
        if (c.verb == "print") m_out << a[0] << " = " << hex(v) << " (" << value_name(off, v) << ")\n";
        if (a.size() == 3) {
            ++m_checks;
            const std::uint32_t want = *register_value(off, a[2]);
            if (v != want)
                fail(c, a[0] + " is " + hex(v) + " (" + value_name(off, v) + "), expected " + hex(want));
        }
    } else if (c.verb == "poll") {
        const std::uint32_t off = *register_offset(a[0]);
        const std::uint32_t mask = *register_value(off, a[1]), want = *register_value(off, a[2]);
        const sc_core::sc_time timeout = a.size() == 4 ? *parse_time(a[3]) : m_cfg.timeout;
        const sc_core::sc_time until = sc_core::sc_time_stamp() + timeout;
        ++m_checks;
        for (;;) {
            const std::uint32_t v = reg_read(off);
            if ((v & mask) == want) break;
            if (sc_core::sc_time_stamp() >= until) {
                fail(c, "timed out: " + a[0] + " is " + hex(v));
                break;
            }
            sc_core::wait(m_cfg.poll_interval);
        }
    } else if (c.verb == "wait-irq") {
        ++m_checks;
        if (!wait_irq(a.empty() ? m_cfg.timeout : *parse_time(a[0]))) fail(c, "no interrupt");
    } else if (c.verb == "delay") {
        sc_core::wait(*parse_time(a[0]));
    } else if (c.verb == "mem" || c.verb == "expect-mem") {
        const std::uint64_t addr = *parse_number(a[0]);
        const std::string& type = a[1];
        const std::uint64_t size = type == "int8"                      ? 1
                                   : type == "int32" || type == "fp32" ? 4
                                   : type == "int64"                   ? 8
                                                                       : 0;
        if (size == 0) throw step_failure{"unknown element type '" + type + "' (int8, int32, int64, fp32)"};
        std::vector<std::uint8_t> bytes;
        std::istringstream values(a[2]);
        for (std::string v; std::getline(values, v, ',');) {
            std::uint8_t b[8] = {};
            if (type == "fp32") {
                const float f = std::stof(v);
                std::memcpy(b, &f, 4);
            } else {
                const auto n = parse_number(v);
                if (!n) throw step_failure{"bad value '" + v + "'"};
                std::memcpy(b, &*n, size);  // little-endian host: the low bytes
            }
            bytes.insert(bytes.end(), b, b + size);
        }
        if (c.verb == "mem") {
            debug_write(addr, bytes.data(), bytes.size());
        } else {
            ++m_checks;
            std::vector<std::uint8_t> have(bytes.size());
            debug_read(addr, have.data(), have.size());
            if (have != bytes) fail(c, "memory at " + hex(addr) + " differs");
        }
    } else if (c.verb == "job") {
        job_record rec;
        rec.name = a[0];
        rec.dtype = key_text(c, "dtype", "int32");
        if (rec.dtype == "int8")
            run_job<int8_format>(c, rec);
        else if (rec.dtype == "int32")
            run_job<int32_format>(c, rec);
        else if (rec.dtype == "fp32")
            run_job<fp32_format>(c, rec);
        else if (rec.dtype == "bf16")
            run_job<bf16_format>(c, rec);
        else
            throw step_failure{"unknown dtype '" + rec.dtype + "'"};
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

    // The problem: the seeds' example, or seeded random data as systolic-tb makes it.
    const bool seed_data = key_text(c, "data", "random") == "seed";
    tb::problem<Format> pr = seed_data
                                 ? tb::seed_example<Format>()
                                 : tb::random_problem<Format>(
                                       {key_number(c, "m", 0), key_number(c, "k", 0), key_number(c, "p", 0)},
                                       key_number(c, "seed", 1));
    const problem_shape s = pr.shape;
    rec.m = s.m;
    rec.k = s.k;
    rec.p = s.p;

    systolic_job job;
    systolic_job_init(&job);
    static const char* dtypes[] = {"int8", "int32", "fp32", "bf16"};
    job.dtype =
        std::uint32_t(std::find(std::begin(dtypes), std::end(dtypes), rec.dtype) - std::begin(dtypes));
    job.m = std::uint32_t(s.m);
    job.k = std::uint32_t(s.k);
    job.p = std::uint32_t(s.p);
    const auto option = [&](const char* key, std::uint32_t reg, const char* fallback) {
        const std::string text = key_text(c, key, fallback);
        std::string upper;
        for (char ch : text)
            upper += ch == '-' ? '_' : char(std::toupper(static_cast<unsigned char>(ch)));
        const auto v = register_value(reg, upper);
        if (!v) throw step_failure{std::string("bad ") + key + " '" + text + "'"};
        return *v;
    };
    job.order = option("order", SYSTOLIC_REG_ORDER, "row");
    job.k_policy = option("policy", SYSTOLIC_REG_K_POLICY, "preserve");
    job.overflow = option("overflow", SYSTOLIC_REG_OVERFLOW, "wrap");
    job.out_dtype = option("out", SYSTOLIC_REG_OUT_DTYPE, "acc");
    job.rounding = option("rounding", SYSTOLIC_REG_ROUNDING, "nearest-even");
    job.k_tile = std::uint32_t(key_number(c, "k_tile", 0));
    job.scale = std::stof(key_text(c, "scale", "1"));
    job.zero_point = std::int32_t(key_number(c, "zero_point", 0));

    // Memory: A, B, C (and the partial-sum buffer) one after another from the RAM's start, each
    // 64-byte aligned, rows packed unless a stride is given.
    const std::uint64_t osz = sizeof(op_t), asz = sizeof(acc_t), csz = job.out_dtype ? 1 : asz;
    job.a_stride = std::uint32_t(key_number(c, "a_stride", 0));
    job.b_stride = std::uint32_t(key_number(c, "b_stride", 0));
    job.c_stride = std::uint32_t(key_number(c, "c_stride", 0));
    const std::uint64_t a_row = job.a_stride ? job.a_stride : s.k * osz;
    const std::uint64_t b_row = job.b_stride ? job.b_stride : s.p * osz;
    const std::uint64_t c_row = job.c_stride ? job.c_stride : s.p * csz;
    std::uint64_t next = m_cfg.ram_base + 0x1000;
    const auto alloc = [&](std::uint64_t bytes) {
        const std::uint64_t at = next;
        next = (next + bytes + 64 + 63) / 64 * 64;
        return at;
    };
    job.a_addr = alloc(s.m * a_row);
    job.b_addr = alloc(s.k * b_row);
    job.c_addr = alloc(s.m * c_row);
    const bool partials = job.k_policy == SYSTOLIC_K_POLICY_PARTIALS && k_chunks(s.k, job.k_tile) > 1;
    if (partials) job.partial_addr = alloc(s.m * s.p * asz);
    const std::uint64_t used = next - m_cfg.ram_base;
    // Addresses the script moves on purpose: a number, or a, b, c (optionally +N) for another matrix.
    const auto place = [&](const char* key, std::uint64_t& addr) {
        const std::string text = key_text(c, key, "");
        if (text.empty()) return;
        const std::uint64_t bases[] = {job.a_addr, job.b_addr, job.c_addr};
        if (text[0] >= 'a' && text[0] <= 'c') {
            const auto off = text.size() > 2 && text[1] == '+' ? parse_number(text.substr(2))
                                                               : std::optional<std::uint64_t>(0);
            if (!off || (text.size() > 1 && text[1] != '+')) throw step_failure{std::string("bad ") + key};
            addr = bases[text[0] - 'a'] + *off;
        } else if (const auto v = parse_number(text)) {
            addr = *v;
        } else {
            throw step_failure{std::string("bad ") + key};
        }
    };
    place("a_addr", job.a_addr);
    place("b_addr", job.b_addr);
    place("c_addr", job.c_addr);
    if (used > m_cfg.ram_size) throw step_failure{"the job does not fit in RAM"};

    // Load the operands (as a debugger's loader would) and mark C, so that an unwritten element shows.
    std::vector<std::uint8_t> ram(used, 0xcd);
    debug_write(m_cfg.ram_base, ram.data(), ram.size());
    for (std::uint64_t r = 0; r < s.m && job.a_addr + s.m * a_row <= m_cfg.ram_base + used; ++r)
        debug_write(job.a_addr + r * a_row, &pr.a[r * s.k], s.k * osz);
    for (std::uint64_t r = 0; r < s.k && job.b_addr + s.k * b_row <= m_cfg.ram_base + used; ++r)
        debug_write(job.b_addr + r * b_row, &pr.b[r * s.p], s.p * osz);
    debug_read(m_cfg.ram_base, ram.data(), ram.size());

    // The driver's part: program, start, wait (interrupt or polling), read the outcome.
    const bool use_irq = key_text(c, "wait", "irq") == "irq";
    const sc_core::sc_time timeout =
        c.keys.count("timeout") ? parse_time(c.keys.at("timeout")).value_or(m_cfg.timeout) : m_cfg.timeout;
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
    rec.expected = key_text(c, "expect", "ok");
    rec.outcome = outcome == 1 ? "ok" : error_name(error);
    if (rec.expected != "ok" && rec.expected.rfind("ERR_", 0) != 0) rec.expected = "ERR_" + rec.expected;

    std::vector<std::uint8_t> after(used);
    debug_read(m_cfg.ram_base, after.data(), after.size());
    const auto in_c = [&](std::uint64_t addr) {
        return addr >= job.c_addr && addr < job.c_addr + s.m * c_row &&
               (addr - job.c_addr) % c_row < s.p * csz;
    };
    const auto in_partial = [&](std::uint64_t addr) {
        return partials && addr >= job.partial_addr && addr < job.partial_addr + s.m * s.p * asz;
    };
    std::uint64_t changed_outside = 0, changed = 0;
    for (std::uint64_t i = 0; i < used; ++i) {
        if (after[i] == ram[i]) continue;
        ++changed;
        const std::uint64_t addr = m_cfg.ram_base + i;
        changed_outside += !in_c(addr) && !in_partial(addr);
    }

    m_out << "job " << rec.name << ": C = A*B with M=" << s.m << " K=" << s.k << " P=" << s.p << " on a "
          << m_cfg.array_size << "x" << m_cfg.array_size << " array, " << Format::name << " operands, "
          << Format::accumulator_name << " accumulators" << (job.out_dtype ? ", int8 output" : "") << "\n";
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
    tb::reference_options ref;
    ref.k_tile = job.k_tile;
    ref.policy = job.k_policy ? k_policy::partials : k_policy::preserve;
    ref.overflow = job.overflow ? overflow_mode::saturate : overflow_mode::wrap;
    quantization q;
    q.enabled = job.out_dtype != 0;
    q.scale = job.scale;
    q.zero_point = job.zero_point;
    static const rounding_mode roundings[] = {rounding_mode::nearest_even, rounding_mode::nearest_away,
                                              rounding_mode::toward_zero};
    q.rounding = roundings[job.rounding];
    const std::vector<std::uint8_t> expected =
        tb::encode_c<Format>(tb::reference_gemm<Format>(s, pr.a, pr.b, ref), q);
    rec.c.resize(s.m * s.p * csz);
    for (std::uint64_t r = 0; r < s.m; ++r)
        std::memcpy(&rec.c[r * s.p * csz], &after[job.c_addr + r * c_row - m_cfg.ram_base], s.p * csz);
    rec.c_descr = job.out_dtype ? "|i1" : Format::accumulator_descr;
    const auto show = [&](const std::uint8_t* p) {
        return job.out_dtype ? element<std::int8_t>(p) : element<acc_t>(p);
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
          << (changed_outside == 0 ? "memory outside C untouched"
                                   : std::to_string(changed_outside) + " bytes outside C changed")
          << "\n";
    std::ostringstream why;
    if (mismatches) why << mismatches << " elements of C differ, first " << first << "; ";
    if (changed_outside) why << changed_outside << " bytes outside C changed; ";
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
