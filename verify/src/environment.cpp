// The environment for the four formats, compiled here once (environment.h declares them extern).
#include "systolic/verify/environment.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "systolic/action_counter.h"

namespace systolic::verify {

namespace {

// Shows one element of C in scoreboard messages.
template <class Format>
scoreboard::value_printer printer(bool int8_output) {
    using accumulator_type = typename Format::accumulator_type;
    if (int8_output)
        return [](const std::uint8_t* p) { return std::to_string(static_cast<std::int8_t>(*p)); };
    return [](const std::uint8_t* p) {
        accumulator_type v;
        std::memcpy(&v, p, sizeof v);
        std::ostringstream os;
        os.precision(9);  // enough to tell any two floats apart
        os << +v;
        if (v != v) {  // NaNs differ only in their bits: show them
            std::uint32_t u;
            std::memcpy(&u, &v, sizeof u);
            os << " (0x" << std::hex << u << ")";
        }
        return os.str();
    };
}

// The scoreboard's view of the memory after the job: in place when the memory allows, else a copy.
struct memory_image {
    std::vector<std::uint8_t> copy;
    const std::uint8_t* bytes = nullptr;
    memory_image(memory_access& mem, std::uint64_t base, std::uint64_t size) : bytes(mem.view(base, size)) {
        if (!bytes) {
            copy.resize(size);
            mem.read(base, copy.data(), size);
            bytes = copy.data();
        }
    }
};

// Runs `f` when the scope ends, however it ends.
template <class F>
struct on_exit {
    F f;
    explicit on_exit(F fn) : f(std::move(fn)) {}
    ~on_exit() { f(); }
    on_exit(const on_exit&) = delete;
    on_exit& operator=(const on_exit&) = delete;
};

// The order the reference sums in. Weight and input stationary sum each output in folds of
// min(KT, R) terms, each from zero, and add the folds in k order: K-splitting with partial sums in
// folds of that length. R comes from the expected counts (R preload edges per fold).
reference_options reference_of(const run_options& opt, const systolic::expected_counts& counts) {
    reference_options ref;
    ref.k_tile = opt.k_tile;
    ref.policy = opt.policy;
    ref.overflow = opt.overflow;
    ref.quant = opt.quant;
    if (is_stationary(opt.dataflow) && counts.k_chunks) {
        const std::uint64_t rows = counts.preload_edges_per_tile / counts.k_chunks;
        ref.k_tile = std::min(opt.k_tile ? opt.k_tile : ~std::uint64_t{0}, rows);
        ref.policy = k_policy::partials;
    }
    return ref;
}

// C's bytes from the reference's wide result: per column when the job has per-column vectors.
template <class Format>
std::vector<std::uint8_t> expected_bytes(const std::vector<typename Format::accumulator_type>& wide,
                                         const problem<Format>& pr, const run_options& run) {
    if (!run.quant.columns) return encode_c<Format>(wide, run.quant);
    const std::vector<std::int32_t> none;
    return encode_c<Format>(wide, run.quant, pr.column_scales,
                            run.quant.columns->zero_points ? pr.column_zero_points : none);
}

// A job's reference in parts (reference_parts), each taken by whichever thread asks first: the
// reference's own thread from the start, the checking thread once it reaches the check.
template <class Format>
class shared_reference {
public:
    shared_reference(std::shared_ptr<const problem<Format>> pr, const run_options& run,
                     const reference_options& order)
        : m_pr(std::move(pr)), m_run(run), m_order(order) {}

    // The reference's own thread: makes the parts (bf16 widens its operands there), takes them
    // until none is left, waits for those another thread took, and gives C's bytes.
    std::vector<std::uint8_t> compute() {
        m_parts.emplace(m_pr->shape, m_pr->a, m_pr->b, m_order);
        m_ready.store(true);
        help();
        std::unique_lock<std::mutex> lock(m_mutex);
        m_all_done.wait(lock, [this] { return m_done.load() == m_parts->size(); });
        return expected_bytes(m_parts->take().c, *m_pr, m_run);
    }

    // Any thread: runs parts until none is left to take (none yet if the parts are not made).
    void help() {
        if (!m_ready.load()) return;
        for (std::size_t i; (i = m_next.fetch_add(1)) < m_parts->size();) {
            m_parts->run(i);
            if (m_done.fetch_add(1) + 1 == m_parts->size()) {
                const std::lock_guard<std::mutex> lock(m_mutex);
                m_all_done.notify_all();
            }
        }
    }

private:
    std::shared_ptr<const problem<Format>> m_pr;
    run_options m_run;
    reference_options m_order;
    std::optional<reference_parts<Format>> m_parts;
    std::atomic<bool> m_ready{false};
    std::atomic<std::size_t> m_next{0}, m_done{0};
    std::mutex m_mutex;
    std::condition_variable m_all_done;
};

}  // namespace

template <class Format>
std::vector<std::uint8_t> expected_c_bytes(const problem<Format>& pr, const job_options& opt) {
    return expected_bytes(reference_gemm<Format>(pr.shape, pr.a, pr.b, reference_of(opt.run, {})), pr,
                          opt.run);
}

template <class Format>
environment<Format>::environment(const sc_core::sc_module_name& name, systolic::memory& mem)
    : sc_core::sc_module(name),
      checker("checker"),
      monitor("monitor"),
      m_mem(std::make_unique<core_memory_access>(mem)) {
    bind_chain();
}

template <class Format>
environment<Format>::environment(const sc_core::sc_module_name& name, std::uint64_t ram_base,
                                 std::uint64_t ram_size)
    : sc_core::sc_module(name),
      checker("checker"),
      monitor("monitor"),
      m_mem(std::make_unique<debug_memory_access>(initiator_socket, ram_base, ram_size)) {
    bind_chain();
}

template <class Format>
void environment<Format>::reach_memory_through(tlm::tlm_initiator_socket<>& socket) {
    const auto* ram = dynamic_cast<const debug_memory_access*>(m_mem.get());
    if (!ram) throw std::logic_error(std::string(name()) + ": reach_memory_through needs a platform's RAM");
    m_mem = std::make_unique<debug_memory_access>(socket, ram->base(), ram->size());
}

template <class Format>
void environment<Format>::bind_chain() {
    checker.initiator_socket.bind(monitor.target_socket);
    monitor.on_write = [this](const tlm::tlm_generic_payload& t) {
        ++m_writes;
        m_scoreboard.observe_write(t);
    };
    // Kept until the job's end, so that a violation outside expect() ... finish() (the memory's
    // invalidation when it is resized) counts too.
    checker.on_violation([this](const std::string& line) { m_violations.push_back(line); });
}

template <class Format>
sc_core::sc_time environment<Format>::wait_for(dut& d, const matmul_job& job, const job_options& opt) {
    const sc_core::sc_time limit =
        opt.time_limit != sc_core::SC_ZERO_TIME ? opt.time_limit : d.time_limit(job);
    const sc_core::sc_time started = sc_core::sc_time_stamp();
    if (limit == sc_core::SC_ZERO_TIME)
        sc_core::wait(d.done_event());
    else
        sc_core::wait(limit, d.done_event());
    return sc_core::sc_time_stamp() - started;
}

template <class Format>
void environment<Format>::clear_violations() {
    m_violations.clear();
    checker.clear_violations();
}

template <class Format>
typename environment<Format>::reference_future environment<Format>::start_reference(
    std::shared_ptr<const problem<Format>> pr, const matmul_job& job,
    const systolic::expected_counts& counts) {
    const run_options& run = job.run;
    auto shared = std::make_shared<shared_reference<Format>>(std::move(pr), run, reference_of(run, counts));
    return {std::async(std::launch::async, [shared] { return shared->compute(); }).share(),
            [shared] { shared->help(); }};
}

// The MACs of two nonzero operands, from the operands alone: each term k pairs every nonzero of
// A's column k with every nonzero of B's row k (expected_counts::macs_random).
template <class Format>
std::uint64_t nonzero_products(const problem<Format>& pr) {
    const problem_shape& s = pr.shape;
    std::uint64_t total = 0;
    for (std::uint64_t k = 0; k < s.k; ++k) {
        std::uint64_t a = 0, b = 0;
        for (std::uint64_t i = 0; i < s.m; ++i)
            a += !operand_is_zero(pr.a[i * s.k + k]);
        for (std::uint64_t j = 0; j < s.p; ++j)
            b += !operand_is_zero(pr.b[k * s.p + j]);
        total += a * b;
    }
    return total;
}

template <class Format>
void environment<Format>::begin_watch(const matmul_job& job, std::shared_ptr<const problem<Format>> pr,
                                      const systolic::expected_counts& counts,
                                      std::vector<memory_snapshot> windows) {
    reference_future reference = start_reference(pr, job, counts);
    begin_watch(job, std::move(pr), counts, std::move(windows), std::move(reference));
}

template <class Format>
void environment<Format>::begin_watch(const matmul_job& job, std::shared_ptr<const problem<Format>> pr,
                                      const systolic::expected_counts& counts,
                                      std::vector<memory_snapshot> windows, reference_future reference) {
    m_busy = true;
    m_watch.out = job_check<Format>{};
    m_watch.out.job = job;
    m_watch.out.expected = counts;
    if (job.run.count_actions) m_watch.out.expected.macs_random = nonzero_products(*pr);
    m_watch.operands = std::move(pr);
    m_watch.windows = std::move(windows);
    m_watch.reference = std::move(reference);
    m_scoreboard.expect(job.c, m_watch.reference.bytes, printer<Format>(job.run.quant.enabled),
                        job.uses_partial_buffer() ? std::optional<matrix_layout>(job.partial) : std::nullopt);
}

template <class Format>
job_check<Format> environment<Format>::end_watch(const job_result& result,
                                                 const scoreboard::tile_edge_rule& tile_edges) {
    job_check<Format> out = std::move(m_watch.out);
    out.result = result;
    for (const auto& line : m_violations)
        m_scoreboard.protocol_violation(line);
    m_violations.clear();
    {
        // The memory now, window by window: in place where the memory allows, else a copy.
        std::vector<memory_image> now;
        std::vector<scoreboard::memory_window> windows;
        now.reserve(m_watch.windows.size());
        for (const auto& w : m_watch.windows) {
            now.emplace_back(*m_mem, w.base, w.bytes.size());
            windows.push_back({w.base, w.bytes.size(), w.bytes.data(), now.back().bytes});
        }
        if (m_watch.reference.help) m_watch.reference.help();  // the reference's last parts, if any
        out.scoreboard = m_scoreboard.finish(out.result, out.expected, windows, tile_edges);
    }
    out.reference = m_watch.reference.bytes.get();
    const auto& s = out.job.shape;
    const std::uint64_t esz = out.job.c.elem_size;
    out.c.resize(s.m * s.p * esz);
    for (std::uint64_t r = 0; r < s.m; ++r)
        m_mem->read(out.job.c.address(r, 0), &out.c[r * s.p * esz], s.p * esz);
    m_watch = watch{};
    m_busy = false;
    return out;
}

template <class Format>
void environment<Format>::abandon_watch() {
    m_scoreboard.abandon();
    m_violations.clear();
    m_watch = watch{};
    m_busy = false;
}

template <class Format>
job_check<Format> environment<Format>::check(dut& d, const problem<Format>& pr, const job_options& opt,
                                             const std::optional<matmul_job>& placement) {
    // A check that throws after begin_watch leaves no watch behind (nor a reference still reading pr).
    m_busy = true;
    const on_exit cleanup([this] {
        if (m_busy) abandon_watch();
    });
    const auto& s = pr.shape;
    if (pr.a.size() != s.m * s.k || pr.b.size() != s.k * s.p)
        throw std::invalid_argument("verify: operand sizes do not match the shape");
    const matmul_job job = placement ? *placement : plan_memory(s, opt);
    if (auto err = column_values_error(job, pr.column_scales, pr.column_zero_points); !err.empty())
        throw std::invalid_argument(err);
    // The job's own fields decide what C must be: with an explicit placement they come from it.
    job_options run{job.run};
    run.inject = opt.inject;
    run.fill_seed = opt.fill_seed;
    run.time_limit = opt.time_limit;
    if (!fault_applies(run.inject, job.run.dataflow))
        throw std::invalid_argument(std::string("verify: the fault ") + to_string(run.inject) +
                                    " does not exist in dataflow " + to_string(job.run.dataflow));
    if (!d.inject(run.inject))
        throw std::invalid_argument(std::string("verify: this DUT cannot plant the fault ") +
                                    std::string(to_string(run.inject)));

    // The caller's problem outlives the check: the watch holds it without a copy. The reference
    // starts first, so that its thread works while the memory is filled and kept.
    const std::shared_ptr<const problem<Format>> operands(&pr, [](const problem<Format>*) {});
    const systolic::expected_counts counts = d.expected_counts(s, job.run.k_tile, job.run.dataflow);
    reference_future reference = start_reference(operands, job, counts);
    clear_violations();
    const std::uint64_t extent = memory_extent(job, m_mem->base(), opt.packed || placement.has_value());
    fill_memory(*m_mem, extent, job, pr.a.data(), pr.b.data(), sizeof(operand_type), opt.fill_seed);
    write_columns(*m_mem, job, pr.column_scales, pr.column_zero_points);
    const std::uint64_t guarded = std::max(extent, opt.guard);
    if (guarded > extent) m_mem->reserve(guarded);  // a fixed memory: throws if it is smaller
    // The snapshot is moved in (a braced list would copy the whole image once more).
    std::vector<memory_snapshot> windows(1);
    windows[0] = {m_mem->base(), m_mem->snapshot(guarded)};
    begin_watch(job, operands, counts, std::move(windows), std::move(reference));

    d.start(job);
    wait_for(d, job, run);
    d.inject(fault::none);
    job_result result = d.result();
    if (d.busy()) {
        result.status = job_status::running;
        result.error = "the job did not finish within the simulated time limit";
    }
    const auto fabric = d.fabric_result();
    job_check<Format> out = end_watch(result, d.tile_edges(s.k, job.run.k_tile));
    out.fabric = fabric;

    if (run.run.quant.per_partial) {  // what quantizing each partial cost: C against quantize-once
        job_options once = run;
        once.run.quant.per_partial = false;
        const auto once_bytes = expected_c_bytes(pr, once);
        for (std::size_t i = 0; i < once_bytes.size(); ++i)
            out.differs_from_quantize_once += once_bytes[i] != out.c[i];
    }
    return out;
}

template <class Format>
refusal_check environment<Format>::check_refused(dut& d, const matmul_job& job, job_status expected,
                                                 std::uint64_t window) {
    m_busy = true;
    const on_exit done([this] { m_busy = false; });
    refusal_check out;
    if (window == 0) window = memory_extent(job, m_mem->base(), false);
    clear_violations();
    m_mem->reserve(window);
    const std::vector<std::uint8_t> before = m_mem->snapshot(window);
    const std::uint64_t writes_before = m_writes;

    d.start(job);
    wait_for(d, job, job_options{job.run});
    out.result = d.result();
    if (d.busy()) {
        out.result.status = job_status::running;
        out.result.error = "the job did not end within the simulated time limit";
    }
    out.writes = m_writes - writes_before;
    out.protocol_violations = m_violations.size();
    out.status_ok = out.result.status == expected;
    out.untouched_ok = m_mem->snapshot(window) == before;

    if (!out.status_ok)
        out.errors.push_back("expected status " + std::string(to_string(expected)) + ", got " +
                             std::string(to_string(out.result.status)) +
                             (out.result.error.empty() ? "" : ": " + out.result.error));
    if (out.writes != 0)
        out.errors.push_back("the refused job wrote " + std::to_string(out.writes) + " times");
    if (!out.untouched_ok) out.errors.push_back("the refused job changed memory");
    for (const auto& line : m_violations)
        out.errors.push_back("protocol: " + line);
    return out;
}

#define SYSTOLIC_ENVIRONMENT_INSTANTIATE(F)                                                        \
    template std::vector<std::uint8_t> expected_c_bytes<F>(const problem<F>&, const job_options&); \
    template struct job_check<F>;                                                                  \
    template class environment<F>;
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_ENVIRONMENT_INSTANTIATE)
#undef SYSTOLIC_ENVIRONMENT_INSTANTIATE

}  // namespace systolic::verify
