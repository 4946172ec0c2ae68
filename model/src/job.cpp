#include "systolic/job.h"

#include <cmath>
#include <sstream>

namespace systolic {

namespace {

std::string check_layout(const char* name, const matrix_layout& l, std::uint64_t rows, std::uint64_t cols,
                         std::uint64_t elem) {
    std::ostringstream os;
    if (l.rows != rows || l.cols != cols) {
        os << name << " layout is " << l.rows << "x" << l.cols << " but the shape needs " << rows << "x"
           << cols;
    } else if (l.elem_size != elem) {
        os << name << " elements are " << l.elem_size << " bytes but the format needs " << elem;
    } else if (l.row_stride < l.row_bytes()) {
        os << name << " row stride " << l.row_stride << " is shorter than a row (" << l.row_bytes()
           << " bytes)";
    } else if (!l.range().in_address_space()) {
        os << name << " runs past the end of the address space";
    }
    return os.str();
}

}  // namespace

matmul_job make_job(const problem_shape& shape, std::uint64_t operand_size, std::uint64_t c_elem_size,
                    std::uint64_t a_base, std::uint64_t b_base, std::uint64_t c_base, std::uint64_t a_stride,
                    std::uint64_t b_stride, std::uint64_t c_stride) {
    matmul_job job;
    job.shape = shape;
    job.a = make_layout(a_base, shape.m, shape.k, operand_size, a_stride);
    job.b = make_layout(b_base, shape.k, shape.p, operand_size, b_stride);
    job.c = make_layout(c_base, shape.m, shape.p, c_elem_size, c_stride);
    return job;
}

std::string check_dimensions(const problem_shape& s) {
    if (s.m != 0 && s.k != 0 && s.p != 0) return {};
    std::ostringstream os;
    os << "dimensions must be positive, got M=" << s.m << " K=" << s.k << " P=" << s.p;
    return os.str();
}

std::string check_k_limit(const problem_shape& s) {
    return s.k > 0x7fffffffULL ? "K is larger than the PE term counters allow (2^31 - 1)" : "";
}

std::string check_overlaps(const matmul_job& job) {
    if (job.c.range().overlaps(job.a.range())) return "C overlaps A";
    if (job.c.range().overlaps(job.b.range())) return "C overlaps B";
    if (job.uses_partial_buffer()) {
        if (job.partial.range().overlaps(job.a.range())) return "the partial-sum buffer overlaps A";
        if (job.partial.range().overlaps(job.b.range())) return "the partial-sum buffer overlaps B";
        if (job.partial.range().overlaps(job.c.range())) return "the partial-sum buffer overlaps C";
    }
    return {};
}

// The stationary dataflows' folds always combine in the tile's accumulators: there is no
// partial-sum buffer to choose.
std::string check_dataflow(const matmul_job& job) {
    if (is_stationary(job.run.dataflow) && job.run.policy == k_policy::partials)
        return std::string("dataflow ") + to_string(job.run.dataflow) +
               " combines its folds in the accumulators: K-splitting with partial sums is for os only";
    return {};
}

std::string check_columns(const matmul_job& job) {
    if (!job.run.quant.columns) return {};
    const column_vectors& v = *job.run.quant.columns;
    if (!job.run.quant.enabled) return "per-column scales are for int8 output only";
    // A partial is rounded before the columns are known to the drain; one rule, stated once.
    if (job.run.quant.per_partial)
        return "per-column scales quantize the complete sum only, not each partial";
    if (v.base % column_vectors::scale_bytes != 0) return "the per-column scale vector is not 8-byte aligned";
    const address_range r = column_range(job);
    if (!r.in_address_space()) return "the per-column scale vector runs past the end of the address space";
    // The drain writes C while it reads later tiles' scales: C must not overwrite them.
    if (r.overlaps(job.c.range())) return "C overlaps the per-column scale vector";
    if (job.uses_partial_buffer() && r.overlaps(job.partial.range()))
        return "the partial-sum buffer overlaps the per-column scale vector";
    return {};
}

std::string validate_job(const matmul_job& job, std::uint64_t operand_size, std::uint64_t accumulator_size) {
    const auto& s = job.shape;
    for (auto err : {check_dimensions(s), check_k_limit(s)})
        if (!err.empty()) return err;
    for (auto err :
         {check_layout("A", job.a, s.m, s.k, operand_size), check_layout("B", job.b, s.k, s.p, operand_size),
          check_layout("C", job.c, s.m, s.p, output_size(job.run.quant, accumulator_size))}) {
        if (!err.empty()) return err;
    }
    if (job.uses_partial_buffer()) {
        if (job.partial.rows == 0) return "K-splitting with partial sums needs a partial-sum buffer";
        auto err = check_layout("partial-sum buffer", job.partial, s.m, s.p, accumulator_size);
        if (!err.empty()) return err;
    }
    if (auto err = check_overlaps(job); !err.empty()) return err;
    if (job.run.quant.per_partial && !job.uses_partial_buffer())
        return "quantizing partials needs K-splitting with partial sums (k_policy::partials, more than one "
               "chunk)";
    if (job.run.quant.enabled && !(job.run.quant.scale > 0 && std::isfinite(job.run.quant.scale)))
        return "the quantization scale must be a positive finite number";
    if (auto err = check_columns(job); !err.empty()) return err;
    if (auto err = check_dataflow(job); !err.empty()) return err;
    return check_memory_config(job.run.memory, job);
}

std::optional<std::uint64_t> uniform_edges_per_tile(const job_result& r) {
    if (r.tiles.empty()) return std::nullopt;
    for (const auto& t : r.tiles)
        if (t.advance_edges != r.tiles.front().advance_edges) return std::nullopt;
    return r.tiles.front().advance_edges;
}

const char* counts_kind(engine_kind kind) {
    return kind == engine_kind::cycle ? "stepped" : "modelled";
}

}  // namespace systolic
