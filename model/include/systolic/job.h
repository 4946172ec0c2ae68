// What the tile controller is asked to do (a matmul_job: shapes and where A, B and C live) and
// what it reports back (a job_result: status, per-tile record, counters). Plain C++ apart from
// the simulated times, which the SystemC shell fills in.
#pragma once

#include <cstdint>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/action_counts.h"
#include "systolic/counting.h"
#include "systolic/job_names.h"
#include "systolic/matrix_layout.h"
#include "systolic/memory_system.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tiling.h"

namespace systolic {

// How a job is run, apart from where its matrices lie: the one struct every front end fills
// (systolic-tb's command line, a vp job script, systolic-run, the Python module through systolic-tb's
// options) and the verification environment carries, so an option added here reaches them all.
struct run_options {
    tile_order order = tile_order::row_major;
    std::uint64_t order_seed = 0;  // only used by tile_order::random
    std::uint64_t k_tile = 0;      // reduction chunk length; 0 = the whole K
    k_policy policy = k_policy::preserve;
    overflow_mode overflow = overflow_mode::wrap;
    // Int8 output; with quant.columns, the per-column vectors' base is the job's layout (plan_memory
    // or the platform's script places it).
    quantization quant;
    engine_kind engine = engine_kind::cycle;
    dataflow_kind dataflow = dataflow_kind::os;
    memory_config memory;  // scratchpads and DRAM bandwidth (memory_system.h); the default: none
    // Count the PEs' actions and register toggles for the energy account (job_result::actions.pe,
    // .toggles); off, the engines do no counting work. The memories' counts are filled either way.
    bool count_actions = false;
};

struct matmul_job {
    problem_shape shape;
    matrix_layout a;  // M x K operands
    matrix_layout b;  // K x P operands
    matrix_layout c;  // M x P results: accumulators, or int8 codes when run.quant.enabled
    // M x P accumulators for k_policy::partials with more than one chunk; unused otherwise.
    matrix_layout partial;
    run_options run;

    std::uint64_t chunks() const { return k_chunks(shape.k, run.k_tile); }
    bool uses_partial_buffer() const {
        return run.dataflow == dataflow_kind::os && run.policy == k_policy::partials && chunks() > 1;
    }
};

// Row-major layouts with the given bases; a stride of 0 means rows are packed. c_elem_size is the
// size of C's elements: the accumulator's, or 1 for int8 output.
matmul_job make_job(const problem_shape& shape, std::uint64_t operand_size, std::uint64_t c_elem_size,
                    std::uint64_t a_base, std::uint64_t b_base, std::uint64_t c_base,
                    std::uint64_t a_stride = 0, std::uint64_t b_stride = 0, std::uint64_t c_stride = 0);

// Element size of C: the accumulator's, or one byte for int8 output.
inline std::uint64_t output_size(const quantization& quant, std::uint64_t accumulator_size) {
    return quant.enabled ? 1 : accumulator_size;
}

// Empty when the job is well-formed for these element sizes, else one line saying what is wrong:
// non-positive dimensions, layouts that disagree with the shape, strides shorter than a row, a
// missing partial buffer, or a C (or partial buffer) that overlaps A, B or each other (the drain
// would overwrite operands that later tiles still read).
std::string validate_job(const matmul_job& job, std::uint64_t operand_size, std::uint64_t accumulator_size);

// Parts of validate_job that the accelerator's register decoding (decode_job) also runs, each at
// its place in the order of the register checks, so that it can give each its error code; empty
// when the rule holds. Dimensions: all positive; K: within the PE term counters; overlaps: C and
// the partial-sum buffer overlap neither A, B nor each other; dataflow: ws and is take no
// k_policy::partials.
std::string check_dimensions(const problem_shape& s);
std::string check_k_limit(const problem_shape& s);
std::string check_overlaps(const matmul_job& job);
std::string check_dataflow(const matmul_job& job);
// Per-column requantization (quantization::columns): int8 output quantized once, the vector
// 8-byte aligned, inside the address space and apart from C and the partial-sum buffer.
std::string check_columns(const matmul_job& job);

// The bytes the job's per-column vectors take (empty without them).
inline address_range column_range(const matmul_job& job) {
    if (!job.run.quant.columns) return {};
    const std::uint64_t base = job.run.quant.columns->base;
    return {base, address_range::wide{base} + job.run.quant.columns->bytes(job.shape.p)};
}

struct tile_report {
    tile where;                       // index in visiting order, origin, real rows/cols
    std::uint64_t advance_edges = 0;  // edges the array saw for this tile
    std::vector<std::uint64_t> advance_edges_per_chunk;
    std::uint64_t preload_edges = 0;   // ws, is: edges that loaded the stationary blocks
    std::uint64_t real_outputs = 0;    // results written to C (rows x cols of the tile)
    std::uint64_t masked_outputs = 0;  // PE results suppressed by the output mask (slots - written)
    std::uint64_t macs_padded = 0;     // terms consumed by all R x C PEs
    std::uint64_t macs_real = 0;       // terms consumed by PEs with an in-range output
};

// Bytes a job's DMA port moved, by what they carried (successful transfers only).
struct memory_traffic {
    std::uint64_t a_read = 0;
    std::uint64_t b_read = 0;
    std::uint64_t c_written = 0;
    std::uint64_t partials_read = 0;
    std::uint64_t partials_written = 0;

    std::uint64_t partials() const { return partials_read + partials_written; }
    memory_traffic operator-(const memory_traffic& o) const {
        return {a_read - o.a_read, b_read - o.b_read, c_written - o.c_written,
                partials_read - o.partials_read, partials_written - o.partials_written};
    }
};

struct phase_times {
    sc_core::sc_time clear = sc_core::SC_ZERO_TIME;
    sc_core::sc_time load = sc_core::SC_ZERO_TIME;
    sc_core::sc_time preload = sc_core::SC_ZERO_TIME;  // ws, is: the stationary blocks into the PEs
    sc_core::sc_time advance = sc_core::SC_ZERO_TIME;
    sc_core::sc_time drain = sc_core::SC_ZERO_TIME;
    sc_core::sc_time stall = sc_core::SC_ZERO_TIME;  // the array waiting for operands or C room
};

struct job_result {
    job_status status = job_status::idle;
    engine_kind engine = engine_kind::cycle;  // cycle: counters stepped; functional: modelled
    dataflow_kind dataflow = dataflow_kind::os;
    std::string error;  // one line, empty unless the status is an error
    std::vector<tile_report> tiles;
    std::uint64_t advance_edges = 0;
    std::uint64_t preload_edges = 0;
    std::uint64_t macs_padded = 0;
    std::uint64_t macs_real = 0;
    std::uint64_t real_outputs = 0;
    std::uint64_t masked_outputs = 0;
    std::uint64_t k_chunks = 0;
    std::uint64_t overflows = 0;          // accumulations that wrapped or saturated (by the job's mode)
    std::uint64_t partial_overflows = 0;  // ... and combinations of partial sums that did
    std::uint64_t saturated_outputs = 0;  // int8 outputs clipped to [-128, 127]
    phase_times phases;
    memory_traffic traffic;
    memory_report memory;  // the memory system's account: stalls, bytes per stream, bandwidths
    // The energy account's counts: the memories' always (from traffic and memory), the PEs' actions
    // and toggles when run_options::count_actions.
    action_counts actions;
    sc_core::sc_time start = sc_core::SC_ZERO_TIME;
    sc_core::sc_time end = sc_core::SC_ZERO_TIME;

    bool completed() const { return status == job_status::completed; }
};

// The advance edges each tile took, as counted, when every tile took the same number; nullopt
// when the tiles differ (or none ran).
std::optional<std::uint64_t> uniform_edges_per_tile(const job_result& r);

// "stepped" when the counters are what the PEs did (cycle engine), "modelled" when they come from
// the counting rules (functional engine).
const char* counts_kind(engine_kind kind);

}  // namespace systolic
