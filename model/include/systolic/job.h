// What the tile controller is asked to do (a matmul_job: shapes and where A, B and C live) and
// what it reports back (a job_result: status, per-tile record, counters). Plain C++ apart from
// the simulated times, which the SystemC shell fills in.
#pragma once

#include <cstdint>
#include <string>
#include <systemc>
#include <vector>

#include "systolic/counting.h"
#include "systolic/matrix_layout.h"
#include "systolic/tiling.h"

namespace systolic {

struct matmul_job {
    problem_shape shape;
    matrix_layout a;  // M x K operands
    matrix_layout b;  // K x P operands
    matrix_layout c;  // M x P results, accumulator-sized elements
    tile_order order = tile_order::row_major;
    std::uint64_t seed = 0;  // only used by tile_order::random
};

// Row-major layouts with the given bases; a stride of 0 means rows are packed.
matmul_job make_job(const problem_shape& shape, std::uint64_t operand_size, std::uint64_t accumulator_size,
                    std::uint64_t a_base, std::uint64_t b_base, std::uint64_t c_base,
                    std::uint64_t a_stride = 0, std::uint64_t b_stride = 0, std::uint64_t c_stride = 0);

// Empty when the job is well-formed for these element sizes, else one line saying what is wrong:
// non-positive dimensions, layouts that disagree with the shape, strides shorter than a row, or a
// C that overlaps A or B (the drain would overwrite operands that later tiles still read).
std::string validate_job(const matmul_job& job, std::uint64_t operand_size, std::uint64_t accumulator_size);

enum class job_status { idle, running, completed, watchdog, bus_error, rejected };
const char* to_string(job_status status);

struct tile_report {
    tile where;                        // index in visiting order, origin, real rows/cols
    std::uint64_t advance_edges = 0;   // edges the array saw for this tile
    std::uint64_t real_outputs = 0;    // results written to C
    std::uint64_t masked_outputs = 0;  // PE results suppressed by the output mask
    std::uint64_t macs_padded = 0;     // terms consumed by all N^2 PEs
    std::uint64_t macs_real = 0;       // terms consumed by PEs with an in-range output
};

struct phase_times {
    sc_core::sc_time clear = sc_core::SC_ZERO_TIME;
    sc_core::sc_time load = sc_core::SC_ZERO_TIME;
    sc_core::sc_time advance = sc_core::SC_ZERO_TIME;
    sc_core::sc_time drain = sc_core::SC_ZERO_TIME;
};

struct job_result {
    job_status status = job_status::idle;
    std::string error;  // one line, empty unless the status is an error
    std::vector<tile_report> tiles;
    std::uint64_t advance_edges = 0;
    std::uint64_t macs_padded = 0;
    std::uint64_t macs_real = 0;
    std::uint64_t real_outputs = 0;
    std::uint64_t masked_outputs = 0;
    phase_times phases;
    sc_core::sc_time start = sc_core::SC_ZERO_TIME;
    sc_core::sc_time end = sc_core::SC_ZERO_TIME;

    bool completed() const { return status == job_status::completed; }
};

}  // namespace systolic
