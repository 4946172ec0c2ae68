// Runs one topology layer in one dataflow on a testbench and records what happened (run_report.h): the
// scoreboard's verdict, the counted edges and MACs per fold, the simulated phase times, and the bytes that
// crossed the bus to A, B, C and the partial-sum buffer, counted by the testbench's bus monitor.
// The monitor is told to refuse DMI for reads as well, so that it sees every read; the timing does
// not change, since a DMI read costs the same latency as a b_transport one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "expect_files.h"
#include "io/npy.h"
#include "run_report.h"
#include "systolic/energy/price.h"
#include "systolic/job.h"
#include "systolic/verify/fault.h"
#include "systolic/verify/problem.h"
#include "systolic/verify/testbench.h"
#include "topology.h"

namespace systolic::run {

// What every layer of a run shares.
struct run_settings {
    std::string topology;  // its name
    std::uint64_t layers_in_topology = 0;
    std::vector<std::string> sweep;        // "RxC" in the order given
    std::vector<dataflow_kind> dataflows;  // in the order given
    systolic::dtype dtype = systolic::dtype::int8;
    // How every layer runs (the engine, the memory from --config); each job sets its dataflow.
    run_options run;
    std::uint64_t seed = 1;
    std::string data_dir;    // empty: seeded random operands
    std::string expect_dir;  // --expect: <layer>.c.npy per layer; empty: none
    verify::fault inject = verify::fault::none;
    memory_settings memory_record;  // run.memory as the records show it
    // --energy's table, read and tried once before any layer runs, and --tech-node (0: the table's).
    std::optional<energy::energy_table> energy_table;
    double tech_node = 0;
};

// The record's energy: a completed job's counts priced, or the table alone for one that stopped.
template <class Format>
energy_record energy_of(const job_result& res, const run_settings& s, const run_options& run,
                        const problem_shape& shape) {
    energy_record e;
    e.table = s.energy_table->name;
    const auto& c = res.actions;
    e.mac_random = c.pe.mac_random;
    e.mac_gated = c.pe.mac_gated;
    e.idle = c.pe.idle;
    e.preload = c.pe.preload;
    e.a_toggles = c.toggles.a_toggles;
    e.b_toggles = c.toggles.b_toggles;
    e.acc_toggles = c.toggles.acc_toggles;
    if (!res.completed()) {
        e.node_nm = s.tech_node ? s.tech_node : s.energy_table->node_nm.value.value_or(0.0);
        return e;
    }
    const energy::energy_report r =
        energy::price(c, *s.energy_table, s.tech_node,
                      energy::scratchpads_of(run.memory, shape, sizeof(typename Format::operand_type),
                                             sizeof(typename Format::accumulator_type)));
    e.node_nm = r.node_nm;
    e.priced = true;
    e.total_pj = r.total_pj;
    e.pj_per_mac = r.pj_per_mac;
    for (const auto& ce : r.energy)
        e.component_pj[std::size_t(ce.which)] = ce.pj;
    e.total_mm2 = r.total_mm2;
    e.unpriced = r.unpriced;
    return e;
}

// The seed of a layer's random operands: its LayerID mixed into the run's seed (SplitMix64), so
// that every array size and dataflow of a sweep multiplies the same matrices.
constexpr std::uint64_t layer_seed(std::uint64_t seed, std::uint64_t layer_id) {
    std::uint64_t z = seed + 0x9e3779b97f4a7c15ull * (layer_id + 1);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// The operand files of a layer under --data: <dir>/<layer>.a.npy (M x K) and <dir>/<layer>.b.npy (K x P).
inline std::string data_file(const std::string& dir, const std::string& layer_name, char which) {
    return dir + "/" + layer_name + "." + which + ".npy";
}

// The dtype a format's operand files hold: the operand type, float32 for bf16 (rounded on reading).
template <class Format>
std::string file_dtype() {
    return Format::is_integer ? Format::name : "float32";
}

// Checks a layer's operand files (dtype, 2-D, the layer's shape) without reading their data.
template <class Format>
void check_data_files(const layer& l, const std::string& dir) {
    const auto a =
        io::read_matrix_header(data_file(dir, l.name, 'a'), Format::operand_descr, file_dtype<Format>());
    const auto b =
        io::read_matrix_header(data_file(dir, l.name, 'b'), Format::operand_descr, file_dtype<Format>());
    auto expect = [&](const std::string& path, const io::npy_array& arr, std::uint64_t rows,
                      std::uint64_t cols, const char* what) {
        if (arr.shape[0] != rows || arr.shape[1] != cols)
            throw io::npy_error(path + " is " + std::to_string(arr.shape[0]) + "x" +
                                std::to_string(arr.shape[1]) + " but layer " + l.name + " needs " + what +
                                " of " + std::to_string(rows) + "x" + std::to_string(cols));
    };
    expect(data_file(dir, l.name, 'a'), a, l.gemm.m, l.gemm.k, "A (M x K)");
    expect(data_file(dir, l.name, 'b'), b, l.gemm.k, l.gemm.p, "B (K x P)");
}

template <class Format>
std::vector<typename Format::operand_type> read_operand_file(const std::string& path) {
    using T = typename Format::operand_type;
    const io::npy_array arr = io::read_matrix(path, Format::operand_descr, file_dtype<Format>());
    if constexpr (std::is_same_v<T, bf16>) {
        std::vector<T> out;
        for (float f : io::as_vector<float>(arr))
            out.push_back(bf16::from_float(f));
        return out;
    } else {
        return io::as_vector<T>(arr);
    }
}

// The unit roundoff of the operands the model multiplies: 2^-24 for fp32, 2^-8 for bf16 (rounded
// to nearest from the float32 file), 0 for integers.
template <class Format>
constexpr double operand_roundoff() {
    if constexpr (Format::is_integer)
        return 0;
    else if constexpr (std::is_same_v<typename Format::operand_type, bf16>)
        return 0x1p-8;
    else
        return 0x1p-24;
}

// Compares the C a job read back with the expected C. Integers: equal. Floats: |c - e| <= tol_ij with
//   tol_ij = (2 gamma_K + d) (1 + d/2)^2 sum_k |a_ik b_kj|,  gamma_K = K u / (1 - K u),  u = 2^-24,
// d = 2 u_op + u_op^2 for operands rounded from the file (bf16: u_op = 2^-8; fp32: d = 0). Each of the
// model and the expected file's maker sums K products in float32 in some order, each within gamma_K
// sum |a b| of the exact sum (Higham, Accuracy and Stability, eq. 3.5), so they are within 2 gamma_K of
// each other; bf16 rounding moves each product by at most d |a b|. sum |a b| is taken from the
// operands the model multiplied, in double, and K u >= 1 puts no bound on floats. Non-finite values
// must match exactly (NaN with NaN, each infinity with itself).
template <class Format>
expect_record compare_expected(const verify::problem<Format>& pr,
                               const std::vector<typename Format::accumulator_type>& c,
                               const std::vector<typename Format::accumulator_type>& e) {
    using acc = typename Format::accumulator_type;
    const std::uint64_t m = pr.shape.m, k = pr.shape.k, p = pr.shape.p;
    expect_record r;
    r.checked = m * p;
    std::vector<double> bound;
    double factor = 0;
    if constexpr (!Format::is_integer) {
        const double u = 0x1p-24, uop = operand_roundoff<Format>();
        const double ku = double(k) * u, d = uop == u ? 0 : 2 * uop + uop * uop;
        factor = ku >= 1 ? HUGE_VAL : (2 * ku / (1 - ku) + d) * (1 + d / 2) * (1 + d / 2);
        std::vector<double> abs_b(k * p);
        for (std::uint64_t i = 0; i < k * p; ++i)
            abs_b[i] = std::fabs(double(Format::widen(pr.b[i])));
        bound.assign(m * p, 0.0);
        for (std::uint64_t i = 0; i < m; ++i) {
            double* __restrict row = bound.data() + i * p;
            for (std::uint64_t kk = 0; kk < k; ++kk) {
                const double a = std::fabs(double(Format::widen(pr.a[i * k + kk])));
                const double* __restrict b = abs_b.data() + kk * p;
                for (std::uint64_t j = 0; j < p; ++j)
                    row[j] += a * b[j];
            }
        }
    }
    auto fail = [&](std::uint64_t i, acc got, acc want, const double* tol) {
        ++r.failures;
        if (r.errors.size() >= 8) return;
        std::ostringstream os;
        os.precision(9);
        os << "C[" << i / p << "][" << i % p << "] = " << +got << ", expected " << +want;
        if (tol) os << " (tolerance " << *tol << ")";
        r.errors.push_back(os.str());
    };
    for (std::uint64_t i = 0; i < m * p; ++i) {
        const acc got = c[i], want = e[i];
        if constexpr (Format::is_integer) {
            if (got != want) fail(i, got, want, nullptr);
            const double diff = std::fabs(double(got) - double(want));
            r.max_abs_error = std::max(r.max_abs_error, diff);
            if (want != 0) r.max_rel_error = std::max(r.max_rel_error, diff / std::fabs(double(want)));
        } else {
            if (!std::isfinite(got) || !std::isfinite(want)) {
                if (std::isnan(got) ? !std::isnan(want) : got != want) fail(i, got, want, nullptr);
                continue;
            }
            const double diff = std::fabs(double(got) - double(want)), tol = factor * bound[i];
            r.max_abs_error = std::max(r.max_abs_error, diff);
            if (want != 0) r.max_rel_error = std::max(r.max_rel_error, diff / std::fabs(double(want)));
            if (!(diff <= tol)) fail(i, got, want, &tol);
        }
    }
    r.result = r.failures ? expect_result::fail : expect_result::pass;
    return r;
}

template <class Format>
verify::problem<Format> layer_problem(const layer& l, const run_settings& s) {
    if (s.data_dir.empty()) return verify::random_problem<Format>(l.gemm, layer_seed(s.seed, l.id));
    check_data_files<Format>(l, s.data_dir);
    verify::problem<Format> pr;
    pr.shape = l.gemm;
    pr.a = read_operand_file<Format>(data_file(s.data_dir, l.name, 'a'));
    pr.b = read_operand_file<Format>(data_file(s.data_dir, l.name, 'b'));
    return pr;
}

// Sorts each transaction by the matrix it touches.
class traffic_counter {
public:
    void start(const matmul_job& job) {
        m_job = job;
        m_counts = {};
        m_c_row_writes = 0;
    }
    void observe(const tlm::tlm_generic_payload& t) {
        const std::uint64_t addr = t.get_address(), len = t.get_data_length();
        const bool write = t.is_write();
        (write ? m_counts.writes : m_counts.reads) += 1;
        auto in = [&](const matrix_layout& l) { return l.range().contains(addr); };
        if (in(m_job.a) && !write) {
            m_counts.a_read_bytes += len;
        } else if (in(m_job.b) && !write) {
            m_counts.b_read_bytes += len;
        } else if (in(m_job.c)) {
            (write ? m_counts.c_write_bytes : m_counts.c_read_bytes) += len;
            if (write) ++m_c_row_writes;
        } else if (m_job.uses_partial_buffer() && in(m_job.partial)) {
            (write ? m_counts.partial_write_bytes : m_counts.partial_read_bytes) += len;
        } else {
            m_counts.other_bytes += len;
        }
    }
    const traffic_counts& counts() const { return m_counts; }
    // Writes to C so far: one per real row of every drained tile.
    std::uint64_t c_row_writes() const { return m_c_row_writes; }

private:
    matmul_job m_job;
    traffic_counts m_counts;
    std::uint64_t m_c_row_writes = 0;
};

inline std::uint64_t to_ps(const sc_core::sc_time& t) {
    return static_cast<std::uint64_t>(std::llround(t.to_seconds() * 1e12));
}

template <class Format>
class layer_runner {
public:
    // Called after every write to C with the writes so far and the writes the layer will make.
    std::function<void(std::uint64_t done, std::uint64_t total)> on_c_write;

    explicit layer_runner(verify::testbench<Format>& bench) : m_bench(bench) {
        bench.monitor.dmi_reads = false;
        auto scoreboard = bench.monitor.on_write;
        bench.monitor.on_write = [this, scoreboard](const tlm::tlm_generic_payload& t) {
            if (scoreboard) scoreboard(t);
            m_traffic.observe(t);
            if (on_c_write && t.is_write() && m_traffic.c_row_writes() != m_seen) {
                m_seen = m_traffic.c_row_writes();
                on_c_write(m_seen, m_expected_c_writes);
            }
        };
        bench.monitor.on_read = [this](const tlm::tlm_generic_payload& t) { m_traffic.observe(t); };
    }

    verify::testbench<Format>& bench() { return m_bench; }

    layer_record run(const layer& l, const run_settings& s, dataflow_kind df,
                     const verify::problem<Format>& pr) {
        verify::job_options opt;
        opt.run = s.run;
        opt.run.dataflow = df;
        opt.inject = s.inject;
        m_traffic.start(m_bench.plan_memory(pr.shape, opt));
        m_seen = 0;
        // One write per real row of C in every tile: os and ws tiles hold all of a row's C columns
        // of the tile, is tiles hold whole rows of C.
        m_expected_c_writes =
            df == dataflow_kind::is ? pr.shape.m : pr.shape.m * ceil_div(pr.shape.p, m_bench.cols());
        const verify::job_check<Format> out = m_bench.run(pr, opt);

        layer_record r;
        r.topology = s.topology;
        r.layers_in_topology = s.layers_in_topology;
        r.sweep = s.sweep;
        r.dataflows = s.dataflows;
        r.dataflow = df;
        r.layer_id = l.id;
        r.layer = l.name;
        r.kind = l.kind;
        if (l.kind == layer_kind::conv) {
            const conv_params& c = l.conv;
            r.conv = {c.ifmap_h,  c.ifmap_w, c.filter_h, c.filter_w,
                      c.channels, c.filters, c.stride_h, c.stride_w};
        }
        r.array_rows = m_bench.rows();
        r.array_cols = m_bench.cols();
        r.m = pr.shape.m;
        r.k = pr.shape.k;
        r.p = pr.shape.p;
        r.dtype = s.dtype;
        r.engine = s.run.engine;
        r.seed = s.seed;
        r.data = s.data_dir.empty() ? data_source::random : data_source::npy;
        r.inject = s.inject;
        r.memory = s.memory_record;
        r.operand_bytes = sizeof(typename Format::operand_type);
        r.output_bytes = sizeof(typename Format::accumulator_type);
        const job_result& res = out.result;
        r.status = res.status;
        r.error = res.error;
        r.pass = out.pass();
        if (!s.expect_dir.empty()) {
            using acc = typename Format::accumulator_type;
            r.expect = compare_expected<Format>(pr, out.template c_as<acc>(),
                                                read_expected_file<Format>(l, s.expect_dir));
            r.pass = r.pass && r.expect.result == expect_result::pass;
        }
        r.scoreboard.checked = out.scoreboard.checked;
        r.scoreboard.mismatches = out.scoreboard.mismatches;
        for (std::size_t i = 0; i < out.scoreboard.errors.size() && i < 8; ++i)
            r.scoreboard.errors.push_back(out.scoreboard.errors[i]);
        r.tiles = res.tiles.size();
        r.advance_edges = res.advance_edges;
        r.preload_edges = res.preload_edges;
        r.overflows = res.overflows + res.partial_overflows;
        r.macs_padded = res.macs_padded;
        r.macs_real = res.macs_real;
        r.real_outputs = res.real_outputs;
        r.masked_outputs = res.masked_outputs;
        std::map<std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>, std::uint64_t> groups;
        if (is_stationary(df)) {
            add_stationary_folds(groups, res, pr.shape, df);
        } else {
            for (const auto& t : res.tiles)
                ++groups[{t.advance_edges, t.real_outputs, t.macs_real}];
        }
        for (const auto& [key, count] : groups)
            r.folds.push_back({count, std::get<0>(key), std::get<1>(key), std::get<2>(key)});
        std::sort(r.folds.begin(), r.folds.end());
        r.clock_ps = to_ps(m_bench.controller.cfg().clock_period);
        r.sim_time_ps = to_ps(res.end - res.start);
        r.clear_ps = to_ps(res.phases.clear);
        r.load_ps = to_ps(res.phases.load);
        r.preload_ps = to_ps(res.phases.preload);
        r.advance_ps = to_ps(res.phases.advance);
        r.drain_ps = to_ps(res.phases.drain);
        r.traffic = m_traffic.counts();
        r.memory_use = res.memory;
        if (s.energy_table) r.energy = energy_of<Format>(res, s, opt.run, pr.shape);
        return r;
    }

private:
    using fold_key = std::tuple<std::uint64_t, std::uint64_t, std::uint64_t>;  // edges, used PEs, real MACs

    // SCALE-Sim's ws and is folds: each fold of each tile, its counted preload and advance edges,
    // the L x n PEs that hold a real stationary value (L terms of the fold, n real columns of the
    // tile), and the tile's counted real MACs in proportion to L (each fold's share, exact when
    // every PE consumed its T terms). A tile's preload edges are shared alike: R a fold.
    void add_stationary_folds(std::map<fold_key, std::uint64_t>& groups, const job_result& res,
                              const problem_shape& shape, dataflow_kind df) const {
        const array_shape a{m_bench.rows(), m_bench.cols()};
        const std::uint64_t terms = stationary_of(shape, a, 0, df).fold_terms;
        for (const auto& t : res.tiles) {
            const std::uint64_t n = df == dataflow_kind::is ? t.where.rows : t.where.cols;
            const std::uint64_t folds = t.advance_edges_per_chunk.size();
            std::uint64_t preload_left = t.preload_edges, macs_left = t.macs_real;
            for (std::uint64_t f = 0; f < folds; ++f) {
                const std::uint64_t l = chunk_length(shape.k, terms, f);
                const bool last = f + 1 == folds;
                const std::uint64_t preload = last ? preload_left : t.preload_edges / folds;
                const std::uint64_t macs = last ? macs_left : t.macs_real / shape.k * l;
                preload_left -= preload;
                macs_left -= macs;
                ++groups[{preload + t.advance_edges_per_chunk[f], l * n, macs}];
            }
        }
    }

    verify::testbench<Format>& m_bench;
    traffic_counter m_traffic;
    std::uint64_t m_seen = 0;
    std::uint64_t m_expected_c_writes = 0;
};

}  // namespace systolic::run
