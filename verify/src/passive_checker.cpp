#include "systolic/verify/passive_checker.h"

#include <systolic/accelerator_regs.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "systolic/accelerator_job.h"
#include "systolic/counting.h"
#include "systolic/log.h"
#include "systolic/verify/register_dut.h"

namespace systolic::verify {

namespace {

constexpr std::size_t max_stray_lines = 16;  // stray writes beyond these are only counted

std::string hex(std::uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

std::string describe(dtype d, const matmul_job& job) {
    const auto& s = job.shape;
    std::string text = std::string(to_string(d)) + " M=" + std::to_string(s.m) + " K=" + std::to_string(s.k) +
                       " P=" + std::to_string(s.p);
    if (job.run.k_tile != 0 && job.run.k_tile < s.k)
        text += " K_TILE=" + std::to_string(job.run.k_tile) +
                (job.run.policy == k_policy::partials ? " partials" : "");
    if (job.run.quant.enabled) text += " int8 output";
    return text + ", C at " + hex(job.c.base);
}

// The bytes the job's matrices span (first element to last, stride padding included), merged where
// they overlap or touch, in address order.
std::vector<address_range> spans(const matmul_job& job) {
    std::vector<address_range> all = {job.a.range(), job.b.range(), job.c.range()};
    if (job.uses_partial_buffer()) all.push_back(job.partial.range());
    if (job.run.quant.columns) all.push_back(column_range(job));
    std::sort(all.begin(), all.end(),
              [](const address_range& x, const address_range& y) { return x.base < y.base; });
    std::vector<address_range> merged;
    for (const auto& r : all) {
        if (!merged.empty() && r.base <= merged.back().end)
            merged.back().end = std::max(merged.back().end, r.end);
        else
            merged.push_back(r);
    }
    return merged;
}

// The bytes of `r` by debug transport; nullopt when the memory does not answer every one of them.
// In one read when the memory shows the span in place; else a piece at a time, so that a span with
// a hole in it costs no more than the bytes before it (its room reserved, not filled, first).
std::optional<memory_snapshot> take(memory_access& mem, const address_range& r) {
    constexpr std::uint64_t piece = std::uint64_t{1} << 20;
    memory_snapshot s;
    s.base = r.base;
    const auto size = static_cast<std::uint64_t>(r.end - r.base);
    if (const std::uint8_t* p = mem.view(r.base, size)) {
        s.bytes.assign(p, p + size);
        return s;
    }
    std::uint8_t probe = 0;
    try {
        // A span that ends outside fails at once; one that has both ends inside gets its room.
        mem.read(static_cast<std::uint64_t>(r.end - 1), &probe, 1);
        mem.read(static_cast<std::uint64_t>(r.base), &probe, 1);
        s.bytes.reserve(size);
        for (address_range::wide at = r.base; at < r.end; at += piece) {
            const auto n = static_cast<std::uint64_t>(std::min<address_range::wide>(piece, r.end - at));
            const std::size_t done = s.bytes.size();
            s.bytes.resize(done + n);
            mem.read(static_cast<std::uint64_t>(at), s.bytes.data() + done, n);
        }
    } catch (const std::runtime_error&) {
        return std::nullopt;
    }
    return s;
}

// A and B of the job, from the snapshots that hold them.
template <class Format>
problem<Format> operands_from(const matmul_job& job, const std::vector<memory_snapshot>& windows) {
    using T = typename Format::operand_type;
    const auto rows = [&](const matrix_layout& l, std::vector<T>& out) {
        out.resize(l.rows * l.cols);
        for (std::uint64_t r = 0; r < l.rows; ++r) {
            const std::uint64_t a = l.address(r, 0);
            const auto w = std::find_if(windows.begin(), windows.end(), [&](const memory_snapshot& s) {
                return a >= s.base && a - s.base + l.row_bytes() <= s.bytes.size();
            });
            std::memcpy(&out[r * l.cols], w->bytes.data() + (a - w->base),
                        l.row_bytes());  // spans hold every row
        }
    };
    problem<Format> pr;
    pr.shape = job.shape;
    rows(job.a, pr.a);
    rows(job.b, pr.b);
    // The per-column vectors as the job found them, for the reference (column_vectors' layout).
    if (job.run.quant.columns) {
        const column_vectors& v = *job.run.quant.columns;
        const std::uint64_t p = job.shape.p;
        const auto bytes_at = [&](std::uint64_t a) {
            const auto w = std::find_if(windows.begin(), windows.end(), [&](const memory_snapshot& s) {
                return a >= s.base && a - s.base + v.bytes(p) - (a - v.base) <= s.bytes.size();
            });
            return w->bytes.data() + (a - w->base);  // a span holds the whole vector
        };
        pr.column_scales.resize(p);
        std::memcpy(pr.column_scales.data(), bytes_at(v.scale_address(0)), p * column_vectors::scale_bytes);
        if (v.zero_points) {
            pr.column_zero_points.resize(p);
            std::memcpy(pr.column_zero_points.data(), bytes_at(v.zero_point_address(p, 0)),
                        p * column_vectors::zero_point_bytes);
        }
    }
    return pr;
}

}  // namespace

std::string passive_checker::job_report::line() const {
    std::string text = "job " + std::to_string(index) + " (" + job + "): ";
    if (errors.empty()) return text + verify::to_string(what) + ", pass";
    text += errors.front();
    if (errors.size() > 1) text += " (and " + std::to_string(errors.size() - 1) + " more)";
    return text;
}

passive_checker::passive_checker(const sc_core::sc_module_name& name, accelerator& accel,
                                 std::uint64_t ram_base, std::uint64_t ram_size)
    : sc_core::sc_module(name),
      target_socket("target_socket"),
      initiator_socket("initiator_socket"),
      dma_monitor("dma_monitor"),
      environments("environments", ram_base, ram_size),
      m_accel(accel),
      m_log(get_logger(this->name())),
      m_shadow([n = accel.cfg().array_size](const regmap::reg&) { return static_cast<std::uint32_t>(n); }),
      m_debug_dev{this, &debug_read32, &no_write32} {
    target_socket.register_b_transport(this, &passive_checker::b_transport);
    target_socket.register_transport_dbg(this, &passive_checker::transport_dbg);
    target_socket.register_get_direct_mem_ptr(this, &passive_checker::get_direct_mem_ptr);
    initiator_socket.register_invalidate_direct_mem_ptr(this, &passive_checker::invalidate_direct_mem_ptr);
    dma_monitor.initiator_socket.bind(environments.target_socket());
    dma_monitor.on_write = [this](const tlm::tlm_generic_payload& t) {
        if (m_state == state::idle) stray_write(t);
        dma_answered(t);
    };
    dma_monitor.on_read = [this](const tlm::tlm_generic_payload& t) { dma_answered(t); };
    m_accel.on_job_end([this] { job_ended(); });
}

passive_checker::~passive_checker() {
    m_accel.on_job_end({});
}

// ---- the register path ------------------------------------------------------------------------------

void passive_checker::b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
    initiator_socket->b_transport(t, delay);
    const std::uint64_t base = m_accel.cfg().base, addr = t.get_address();
    if (!t.is_write() || !t.is_response_ok() || t.get_data_length() != 4 || addr < base ||
        addr - base >= regmap::block_size)
        return;
    const auto offset = static_cast<std::uint32_t>(addr - base);
    std::uint32_t value;
    std::memcpy(&value, t.get_data_ptr(), sizeof value);
    m_shadow.write(offset, value);
    if (offset != SYSTOLIC_REG_CTRL) return;
    if (value & SYSTOLIC_CTRL_RESET)  // as the accelerator does, a reset takes precedence over START
        soft_reset();
    else if (value & SYSTOLIC_CTRL_START)
        started(sc_core::sc_time_stamp() + delay);
}

unsigned int passive_checker::transport_dbg(tlm::tlm_generic_payload& t) {
    return initiator_socket->transport_dbg(t);
}

bool passive_checker::get_direct_mem_ptr(tlm::tlm_generic_payload& t, tlm::tlm_dmi& dmi) {
    return initiator_socket->get_direct_mem_ptr(t, dmi);
}

void passive_checker::invalidate_direct_mem_ptr(sc_dt::uint64 start, sc_dt::uint64 end) {
    target_socket->invalidate_direct_mem_ptr(start, end);
}

std::uint32_t passive_checker::reg(std::uint32_t offset) {
    std::uint32_t v = 0;
    tlm::tlm_generic_payload t;
    t.set_command(tlm::TLM_READ_COMMAND);
    t.set_address(m_accel.cfg().base + offset);
    t.set_data_ptr(reinterpret_cast<unsigned char*>(&v));
    t.set_data_length(4);
    t.set_streaming_width(4);
    if (initiator_socket->transport_dbg(t) != 4)
        throw std::runtime_error(std::string(name()) + ": cannot read the accelerator's register at offset " +
                                 hex(offset) + " by debug transport");
    return v;
}

std::uint32_t passive_checker::debug_read32(void* self, std::uint32_t offset) {
    return static_cast<passive_checker*>(self)->reg(offset);
}

void passive_checker::no_write32(void*, std::uint32_t, std::uint32_t) {
    throw std::logic_error("passive_checker: a passive check writes no register");
}

// The job that has just ended, as its registers read: it completed when STATUS.DONE is set (ERROR
// may still hold ERR_BUSY from a start refused while it ran), else it failed with ERROR's code.
job_result passive_checker::registers_result() {
    const std::uint32_t status = reg(SYSTOLIC_REG_STATUS);
    const int outcome = (status & SYSTOLIC_STATUS_DONE) ? 1 : (status & SYSTOLIC_STATUS_BUSY) ? 0 : -1;
    job_result r = result_from_registers(m_debug_dev, outcome, reg(SYSTOLIC_REG_ERROR));
    r.start = m_current.start;
    r.end = sc_core::sc_time_stamp();
    return r;
}

// ---- the checks ---------------------------------------------------------------------------------------

void passive_checker::started(const sc_core::sc_time& at) {
    const std::uint32_t status = reg(SYSTOLIC_REG_STATUS), error = reg(SYSTOLIC_REG_ERROR),
                        causes = reg(SYSTOLIC_REG_IRQ_STATUS);
    job_report report;
    report.index = ++m_starts;
    report.start = report.end = at;
    const auto expect_refusal = [&](std::uint32_t code, const std::string& why) {
        report.what = outcome::refused;
        report.error = error_name(error);
        if (error != code)
            report.errors.push_back("ERROR is " + error_name(error) + ", expected " + error_name(code) +
                                    " (" + why + ")");
        if (!(status & SYSTOLIC_STATUS_ERROR))
            report.errors.push_back("STATUS.ERROR is clear after a refused START");
        if (!(causes & SYSTOLIC_IRQ_ERROR))
            report.errors.push_back("IRQ_STATUS.ERROR is clear after a refused START");
        record(std::move(report));
    };

    if (m_state != state::idle) {  // the running job goes on
        report.job = "START while job " + std::to_string(m_current.index) + " runs";
        if (!(status & SYSTOLIC_STATUS_BUSY))
            report.errors.push_back("STATUS.BUSY is clear: the running job stopped at a refused START");
        expect_refusal(SYSTOLIC_ERR_BUSY, "a job was running");
        return;
    }
    const job_limits limits{reg(SYSTOLIC_REG_ARRAY_SIZE), m_accel.cfg().max_job_bytes, m_accel.cfg().memory};
    const decoded_job d = decode_job(read_request(m_shadow), limits);
    report.job = d.ok() ? describe(d.dtype, d.job) : "refused: " + d.message;
    const bool accepted = status & SYSTOLIC_STATUS_BUSY;
    if (!d.ok() && accepted) {
        report.errors.push_back("the accelerator accepted a job that its register decoder refuses with " +
                                error_name(static_cast<std::uint32_t>(d.error)));
        record(std::move(report));
        m_state = state::stopping;  // it runs unchecked; its writes are not stray
        return;
    }
    if (!d.ok()) {
        expect_refusal(static_cast<std::uint32_t>(d.error), d.message);
        return;
    }
    if (!accepted) {
        report.errors.push_back("the accelerator refused, with " + error_name(error) +
                                ", a job that its register decoder accepts");
        record(std::move(report));
        return;
    }
    with_format(d.dtype,
                [&](auto format) { watch<decltype(format)>(std::move(report), d.job, limits.array_size); });
}

template <class Format>
void passive_checker::watch(job_report report, const matmul_job& job, std::size_t array_size) {
    environment<Format>& env = environments.of<Format>();
    m_current = std::move(report);
    if (env.busy()) {  // its own check() started this job and checks it
        m_current.what = outcome::delegated;
        m_state = state::delegated;
        return;
    }
    // Every environment's protocol checker sees every transfer: from now on each counts this job's.
    const auto& seen = environments.first().checker.violations();
    m_protocol.insert(m_protocol.end(), seen.begin(), seen.end());
    environments.each([](auto& e) { e.clear_violations(); });
    std::vector<memory_snapshot> windows;
    for (const auto& r : spans(job)) {
        auto s = take(env.memory(), r);
        if (!s) {
            m_current.what = outcome::bus_error;
            m_current.job += ", not all in memory from " + hex(r.base);
            m_state = state::bus_error;
            m_failed_transfer.reset();
            return;
        }
        windows.push_back(std::move(*s));
    }
    auto pr = std::make_shared<const problem<Format>>(operands_from<Format>(job, windows));
    env.begin_watch(
        job, std::move(pr),
        count_job(job.shape, array_shape{array_size, array_size}, job.run.k_tile, job.run.dataflow),
        std::move(windows));
    m_end_watch = [this, &env, shape = job.shape](job_report& rep, const job_result& result) {
        const job_check<Format> out = env.end_watch(result);
        rep.format = dtype_of<Format>;
        rep.shape = shape;
        rep.advance_edges = result.advance_edges;
        rep.macs_padded = result.macs_padded;
        rep.macs_real = result.macs_real;
        rep.energy_pj = systolic_read_energy(&m_debug_dev);
        rep.scoreboard = out.scoreboard;
        rep.elements = out.scoreboard.checked;
        rep.errors.insert(rep.errors.end(), out.scoreboard.errors.begin(), out.scoreboard.errors.end());
        if (!out.pass() && rep.errors.empty()) rep.errors.push_back("the scoreboard failed the job");
    };
    m_abandon_watch = [&env] { env.abandon_watch(); };
    m_state = state::watching;
}

void passive_checker::job_ended() {
    const state was = m_state;
    m_state = state::idle;
    m_current.end = sc_core::sc_time_stamp();
    switch (was) {
        case state::idle:  // a job whose START passed no checker: nothing to hold it against
        case state::stopping:
            return;
        case state::delegated:
            record(std::move(m_current));
            return;
        case state::watching:
            m_end_watch(m_current, registers_result());
            break;
        case state::bus_error: {
            const job_result r = registers_result();
            if (r.status != job_status::bus_error) {
                m_current.errors.push_back("expected ERR_DMA, as its matrices are not all in memory; got " +
                                           std::string(to_string(r.status)) +
                                           (r.error.empty() ? "" : " " + r.error));
            } else {
                // ERROR_ADDR is the failing transaction's first byte, which may be in memory when the
                // transaction runs past its end: some byte of the transaction must not be.
                m_current.error = r.error;
                const std::uint64_t at = systolic_error_address(&m_debug_dev);
                const auto& failed = m_failed_transfer;
                if (!failed) {
                    m_current.errors.push_back("ERR_DMA at " + hex(at) + ", but no DMA transaction failed");
                } else if (failed->address != at) {
                    m_current.errors.push_back("ERR_DMA at " + hex(at) +
                                               ", but the first DMA transaction that "
                                               "failed starts at " +
                                               hex(failed->address));
                } else {
                    std::vector<std::uint8_t> bytes(failed->length);
                    try {
                        environments.first().memory().read(at, bytes.data(), bytes.size());
                        m_current.errors.push_back("ERR_DMA at " + hex(at) + ", a " +
                                                   std::to_string(failed->length) +
                                                   "-byte transaction the memory answers");
                    } catch (const std::runtime_error&) {  // as it must be
                    }
                }
            }
            for (const auto& v : environments.first().checker.violations())
                m_current.errors.push_back("protocol: " + v);
            break;
        }
    }
    m_end_watch = nullptr;
    m_abandon_watch = nullptr;
    record(std::move(m_current));
}

void passive_checker::soft_reset() {
    m_shadow.reset();
    if (m_state == state::idle) return;
    if (m_state == state::watching) m_abandon_watch();
    if (m_state == state::watching || m_state == state::bus_error) m_current.what = outcome::abandoned;
    m_end_watch = nullptr;
    m_abandon_watch = nullptr;
    if (m_state != state::stopping) {
        m_current.end = sc_core::sc_time_stamp();
        record(std::move(m_current));
    }
    // A job accepted but not yet begun stops at once; a running one at its next step, until when its
    // writes are no stray ones.
    m_state = (reg(SYSTOLIC_REG_STATUS) & SYSTOLIC_STATUS_BUSY) ? state::stopping : state::idle;
}

void passive_checker::stray_write(const tlm::tlm_generic_payload& t) {
    if (++m_stray_writes > max_stray_lines) return;
    const std::string line = "DMA write of " + std::to_string(t.get_data_length()) + " bytes at " +
                             hex(t.get_address()) + " while no job ran";
    m_log->warn("{}", line);
    m_failures.push_back(line);
    if (on_failure) on_failure(line);
}

// A DMA transaction as the memory answered it: the first that failed while a job that must fail
// with ERR_DMA runs is the one whose first byte ERROR_ADDR must hold.
void passive_checker::dma_answered(const tlm::tlm_generic_payload& t) {
    if (m_state == state::bus_error && !m_failed_transfer && !t.is_response_ok())
        m_failed_transfer = failed_transfer{t.get_address(), t.get_data_length()};
}

void passive_checker::record(job_report report) {
    report.pass = report.errors.empty();
    m_log->info("{}", report.line());
    if (!report.pass) {
        m_failures.push_back(report.line());
        if (on_failure) on_failure(m_failures.back());
    }
    m_jobs.push_back(std::move(report));
}

void passive_checker::finish() {
    if (m_state == state::watching) m_abandon_watch();
    if (m_state == state::watching || m_state == state::bus_error) {
        m_current.errors.push_back("still running when the simulation stopped: not checked");
        record(std::move(m_current));
    }
    m_end_watch = nullptr;
    m_abandon_watch = nullptr;
    m_state = state::idle;
}

std::vector<std::string> passive_checker::protocol_violations() const {
    std::vector<std::string> all = m_protocol;
    const auto& since = environments.first().checker.violations();
    all.insert(all.end(), since.begin(), since.end());
    return all;
}

passive_checker::summary passive_checker::counts() const {
    summary s;
    for (const auto& j : m_jobs) {
        switch (j.what) {
            case outcome::abandoned:
                ++s.abandoned;
                continue;
            case outcome::delegated:
                ++s.delegated;
                continue;
            case outcome::refused:
                ++s.refused;
                break;
            case outcome::completed:
            case outcome::bus_error:
                break;
        }
        ++s.checked;
        s.failed += !j.pass;
    }
    s.stray_writes = m_stray_writes;
    return s;
}

}  // namespace systolic::verify
