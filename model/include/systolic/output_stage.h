// The output stage: what happens to a tile's sums on the way out of the array.
//  - The output mask: only the PEs of real outputs (the tile's rows x cols) are drained, one
//    write per real row.
//  - K-splitting with partial sums: each chunk but the last stores (first chunk) or adds (by
//    read-modify-write) its wide partials in the partial-sum buffer; the last adds the buffer to
//    its own partials and writes C.
//  - Requantization to int8, or per-partial rounding (--quantize-partials). With per-column
//    vectors (quantization::columns) the tile's slice of the scales (and zero points) is read over
//    the DMA port before its first row of C, so it is bus traffic like A and B.
//  - The NaN rule: every NaN that leaves the array is the canonical quiet NaN (docs/formats.md).
// Plain C++ over the dma_port; errors come back as values.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#include "systolic/dma_port.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tile_plan.h"

namespace systolic {

// What a drain did, added into the job's counters.
struct drain_counts {
    std::uint64_t real_outputs = 0;       // elements written to C
    std::uint64_t partial_overflows = 0;  // combinations of partial sums that overflowed
    std::uint64_t saturated_outputs = 0;  // int8 codes clipped to [-128, 127]
};

// The canonical quiet NaN of binary32 (sign clear, quiet bit set, payload zero).
inline constexpr std::uint32_t canonical_nan_bits = 0x7fc00000u;

template <class T>
T canonical_nan_of(T v) {
    if constexpr (std::is_floating_point_v<T>) {
        if (v != v) {
            T nan;
            static_assert(sizeof(T) == sizeof(canonical_nan_bits), "binary32 accumulators only");
            std::memcpy(&nan, &canonical_nan_bits, sizeof nan);
            return nan;
        }
    }
    return v;
}

template <class Format>
class output_stage {
public:
    using accumulator_type = typename Format::accumulator_type;

    // For an array of `array_cols` PE columns (rows of up to that many outputs).
    explicit output_stage(std::size_t array_cols)
        : m_stride(array_cols),
          m_acc(array_cols),
          m_wide(array_cols),
          m_out(array_cols * sizeof(accumulator_type)) {}

    // Drains the top-left rows x cols block (the output mask, unless a fault hook widened it) of
    // the R x C accumulators `acc` (row-major, row stride C) for the drain step `s`.
    dma_status drain(const matmul_job& job, const plan_step& s, const accumulator_type* acc, std::size_t rows,
                     std::size_t cols, dma_port& dma, drain_counts& counts) {
        return drain(job, s, acc, m_stride, rows, cols, dma, counts);
    }
    // The same from accumulators `stride` apart per row: a stationary dataflow's tile, whose rows
    // are as long as its stream (is) or as the array (ws).
    dma_status drain(const matmul_job& job, const plan_step& s, const accumulator_type* acc,
                     std::size_t stride, std::size_t rows, std::size_t cols, dma_port& dma,
                     drain_counts& counts) {
        const tile& t = *s.where;
        const std::uint64_t acc_size = sizeof(accumulator_type);
        if (cols > m_acc.size()) {
            m_acc.resize(cols);
            m_wide.resize(cols);
            m_out.resize(cols * acc_size);
        }
        if (s.target == drain_target::c && job.run.quant.enabled && job.run.quant.columns) {
            auto st = read_columns(job, t.c0, cols, dma);
            if (!st.ok()) return st;
        }
        for (std::size_t i = 0; i < rows; ++i) {
            for (std::size_t j = 0; j < cols; ++j) {
                m_acc[j] = acc[i * stride + j];
                if (job.run.quant.per_partial) m_acc[j] = rounded_partial(m_acc[j], job.run.quant);
            }
            if (s.combine) {  // add the partial sums of the earlier chunks
                auto st = dma.read(job.partial.address(t.r0 + i, t.c0), m_wide.data(), cols * acc_size,
                                   dma_stream::partial_sums);
                if (!st.ok()) return st;
                for (std::size_t j = 0; j < cols; ++j) {
                    bool overflowed = false;
                    m_acc[j] = add<Format>(job.run.overflow, m_wide[j], m_acc[j], overflowed);
                    counts.partial_overflows += overflowed;
                }
            }
            for (std::size_t j = 0; j < cols; ++j)
                m_acc[j] = canonical_nan_of(m_acc[j]);
            dma_status st;
            if (s.target == drain_target::partial) {
                st = dma.write(job.partial.address(t.r0 + i, t.c0), m_acc.data(), cols * acc_size,
                               dma_stream::partial_sums);
            } else {
                const std::uint64_t bytes = encode(job.run.quant, cols, counts);
                st = dma.write(job.c.address(t.r0 + i, t.c0), m_out.data(), bytes, dma_stream::c);
                if (st.ok()) counts.real_outputs += cols;
            }
            if (!st.ok()) return st;
        }
        return {};
    }

private:
    // The final values of one drained row as C's bytes: accumulators, or int8 codes.
    std::uint64_t encode(const quantization& q, std::size_t cols, drain_counts& counts) {
        if (!q.enabled) {
            std::memcpy(m_out.data(), m_acc.data(), cols * sizeof(accumulator_type));
            return cols * sizeof(accumulator_type);
        }
        for (std::size_t j = 0; j < cols; ++j) {
            bool saturated = false;
            const double scale = q.columns ? m_scale[j] : q.scale;
            const std::int32_t zero_point =
                q.columns && q.columns->zero_points ? m_zero_point[j] : q.zero_point;
            const std::int8_t code =
                q.per_partial ? saturate_int8(double(m_acc[j]), zero_point, &saturated)
                              : requantize(double(m_acc[j]), scale, zero_point, q.rounding, &saturated);
            m_out[j] = static_cast<std::uint8_t>(code);
            counts.saturated_outputs += saturated;
        }
        return cols;
    }

    // The scales (and zero points) of columns [c0, c0 + cols) of C, from the job's memory: the
    // layout of column_vectors, little-endian like the rest of the memory.
    dma_status read_columns(const matmul_job& job, std::uint64_t c0, std::size_t cols, dma_port& dma) {
        const column_vectors& v = *job.run.quant.columns;
        m_scale.resize(cols);
        auto st = dma.read(v.scale_address(c0), m_scale.data(), cols * column_vectors::scale_bytes,
                           dma_stream::scale_vector);
        if (!st.ok() || !v.zero_points) return st;
        m_zero_point.resize(cols);
        return dma.read(v.zero_point_address(job.shape.p, c0), m_zero_point.data(),
                        cols * column_vectors::zero_point_bytes, dma_stream::zero_point_vector);
    }

    std::size_t m_stride;                    // the array's columns: accumulators per row
    std::vector<accumulator_type> m_acc;     // one drained row
    std::vector<accumulator_type> m_wide;    // the same row of the partial-sum buffer
    std::vector<std::uint8_t> m_out;         // the row as C's bytes
    std::vector<double> m_scale;             // per-column: the tile's columns' scales
    std::vector<std::int32_t> m_zero_point;  // ... and zero points, when the job has them
};

SYSTOLIC_EXTERN_TEMPLATE(output_stage)

}  // namespace systolic
