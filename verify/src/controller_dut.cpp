// The controller adapter for the four formats, compiled here once (controller_dut.h declares them
// extern).
#include "systolic/verify/controller_dut.h"

#include <algorithm>

namespace systolic::verify {

template <class Format>
controller_dut<Format>::controller_dut(tile_controller<Format>& controller, systolic_array<Format>& array,
                                       sc_core::sc_time access_time)
    : m_controller(controller), m_shape{array.rows(), array.cols()}, m_access_time(access_time) {}

template <class Format>
controller_dut<Format>::controller_dut(tile_controller<Format>& controller, fabric<Format>& fab,
                                       sc_core::sc_time access_time)
    : m_controller(controller), m_fabric(&fab), m_shape{fab.rows(), fab.cols()}, m_access_time(access_time) {}

template <class Format>
void controller_dut<Format>::start(const matmul_job& job) {
    m_job = job;
    if (m_fabric) {
        m_links_before = m_fabric->state().links();
        m_passes_before = m_fabric->state().passes();
    }
    m_controller.start(job);
}

template <class Format>
systolic::expected_counts controller_dut<Format>::expected_counts(const problem_shape& s,
                                                                  std::uint64_t k_tile,
                                                                  dataflow_kind df) const {
    return m_fabric ? count_fabric_job(s, m_fabric->geometry(), k_tile).counts
                    : count_job(s, m_shape, k_tile, df);
}

template <class Format>
std::function<std::uint64_t(const tile&)> controller_dut<Format>::tile_edges(std::uint64_t k,
                                                                             std::uint64_t k_tile) const {
    if (!m_fabric) return {};
    const fabric_geometry g = m_fabric->geometry();
    return [g, k, k_tile](const tile& t) { return g.tile_edges(t.rows, t.cols, k, k_tile); };
}

template <class Format>
bool controller_dut<Format>::inject(fault f) {
    m_faults.set(f);
    m_controller.set_fault_hooks(f == fault::none ? nullptr : &m_faults);
    return true;
}

template <class Format>
sc_core::sc_time controller_dut<Format>::time_limit(const matmul_job& job) const {
    const auto counts = expected_counts(job.shape, job.run.k_tile, job.run.dataflow);
    // A tile reads, per chunk, at most a few accesses per row or column it spans: an os tile spans
    // the array, a stationary fold streams all T rows of A (ws) or columns of B (is).
    const std::uint64_t stream =
        is_stationary(job.run.dataflow)
            ? stationary_of(job.shape, m_shape, job.run.k_tile, job.run.dataflow).stream
            : 0;
    const std::uint64_t span = std::max({m_shape.rows, m_shape.cols, stream});
    const double accesses = double(counts.tiles) * double(counts.k_chunks * 3 * span + job.shape.k) + 1;
    // A DRAM bandwidth adds at most every byte a tile could move over it, and a cycle per access.
    double bandwidth_clocks = 0;
    if (job.run.memory.dram_bandwidth > 0) {
        const double block = double(2 * span * job.shape.k * sizeof(typename Format::operand_type) +
                                    3 * span * std::max(m_shape.rows, m_shape.cols) *
                                        sizeof(typename Format::accumulator_type));
        bandwidth_clocks = double(counts.tiles) * block / job.run.memory.dram_bandwidth + accesses;
    }
    return (double(counts.preload_edges + counts.advance_edges + 2 * counts.tiles * counts.k_chunks) *
                m_controller.cfg().clock_period +
            accesses * m_access_time + bandwidth_clocks * m_controller.cfg().clock_period) *
               10.0 +
           sc_core::sc_time(1, sc_core::SC_US);
}

template <class Format>
std::optional<fabric_outcome> controller_dut<Format>::fabric_result() const {
    if (!m_fabric) return std::nullopt;
    const fabric_engine<Format>& st = m_fabric->state();
    const fabric_geometry& g = st.geometry();
    fabric_outcome f;
    f.rows = g.shape.rows;
    f.cols = g.shape.cols;
    f.depth = g.shape.depth;
    f.n = g.n;
    f.link_latency = g.link_latency;
    f.threads = st.threads();
    f.passes = st.passes() - m_passes_before;
    for (std::size_t i = 0; i < st.links().size(); ++i) {
        const fabric_link& l = st.links()[i];
        f.links.push_back({to_string(l.kind), st.position(l.from), st.position(l.to),
                           l.words - m_links_before[i].words,
                           l.padding_words - m_links_before[i].padding_words});
    }
    f.single_array = single_array_traffic(m_job, g.n, sizeof(typename Format::operand_type),
                                          m_controller.result().traffic);
    return f;
}

#define SYSTOLIC_CONTROLLER_DUT_INSTANTIATE(F) template class controller_dut<F>;
SYSTOLIC_FOR_EACH_FORMAT_DO(SYSTOLIC_CONTROLLER_DUT_INSTANTIATE)
#undef SYSTOLIC_CONTROLLER_DUT_INSTANTIATE

}  // namespace systolic::verify
