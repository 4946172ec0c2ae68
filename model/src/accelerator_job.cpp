#include "systolic/accelerator_job.h"

#include <systolic/accelerator_regs.h>

#include <cmath>
#include <cstring>
#include <sstream>

#include "systolic/counting.h"
#include "systolic/memory_system.h"

namespace systolic {

namespace {

using regmap::error_code;

decoded_job refuse(error_code e, std::string message) {
    decoded_job d;
    d.error = e;
    d.message = std::move(message);
    return d;
}

std::string hex(std::uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

}  // namespace

std::uint64_t operand_size(dtype d) {
    return with_format(d, [](auto format) { return sizeof(typename decltype(format)::operand_type); });
}

std::uint64_t accumulator_size(dtype d) {
    return with_format(d, [](auto format) { return sizeof(typename decltype(format)::accumulator_type); });
}

job_request read_request(const register_block& regs) {
    job_request r;
    r.m = regs.get(SYSTOLIC_REG_M);
    r.k = regs.get(SYSTOLIC_REG_K);
    r.p = regs.get(SYSTOLIC_REG_P);
    r.a = regs.get64(SYSTOLIC_REG_A_ADDR_LO);
    r.b = regs.get64(SYSTOLIC_REG_B_ADDR_LO);
    r.c = regs.get64(SYSTOLIC_REG_C_ADDR_LO);
    r.partial = regs.get64(SYSTOLIC_REG_PARTIAL_ADDR_LO);
    r.a_stride = regs.get(SYSTOLIC_REG_A_STRIDE);
    r.b_stride = regs.get(SYSTOLIC_REG_B_STRIDE);
    r.c_stride = regs.get(SYSTOLIC_REG_C_STRIDE);
    r.partial_stride = regs.get(SYSTOLIC_REG_PARTIAL_STRIDE);
    r.dtype = regs.get(SYSTOLIC_REG_DTYPE);
    r.out_dtype = regs.get(SYSTOLIC_REG_OUT_DTYPE);
    r.order = regs.get(SYSTOLIC_REG_ORDER);
    r.k_tile = regs.get(SYSTOLIC_REG_K_TILE);
    r.k_policy = regs.get(SYSTOLIC_REG_K_POLICY);
    r.overflow = regs.get(SYSTOLIC_REG_OVERFLOW);
    r.rounding = regs.get(SYSTOLIC_REG_ROUNDING);
    r.dataflow = regs.get(SYSTOLIC_REG_DATAFLOW);
    r.scale_bits = regs.get(SYSTOLIC_REG_SCALE);
    r.zero_point = regs.get(SYSTOLIC_REG_ZERO_POINT);
    r.scale_vec = regs.get64(SYSTOLIC_REG_SCALE_VEC_ADDR_LO);
    r.zero_point_vec = regs.get(SYSTOLIC_REG_ZERO_POINT_VEC);
    return r;
}

decoded_job decode_job(const job_request& req, const job_limits& limits) {
    if (auto err = check_dimensions({req.m, req.k, req.p}); !err.empty())
        return refuse(error_code::zero_dim, std::move(err));
    const auto format = regmap::from_code(regmap::dtype_values, dtype_names, req.dtype);
    if (!format) return refuse(error_code::dtype, "unknown DTYPE " + std::to_string(req.dtype));
    const auto out = regmap::from_code(regmap::out_dtype_values, output_dtype_names, req.out_dtype);
    if (!out) return refuse(error_code::dtype, "unknown OUT_DTYPE " + std::to_string(req.out_dtype));
    const auto order = regmap::from_code(regmap::order_values, tile_order_names, req.order);
    if (!order) return refuse(error_code::option, "unknown ORDER " + std::to_string(req.order));
    const auto policy = regmap::from_code(regmap::k_policy_values, k_policy_names, req.k_policy);
    if (!policy) return refuse(error_code::option, "unknown K_POLICY " + std::to_string(req.k_policy));
    const auto overflow = regmap::from_code(regmap::overflow_values, overflow_mode_names, req.overflow);
    if (!overflow) return refuse(error_code::option, "unknown OVERFLOW " + std::to_string(req.overflow));
    const auto rounding = regmap::from_code(regmap::rounding_values, rounding_mode_names, req.rounding);
    if (!rounding) return refuse(error_code::option, "unknown ROUNDING " + std::to_string(req.rounding));
    const auto dataflow = regmap::from_code(regmap::dataflow_values, dataflow_kind_names, req.dataflow);
    if (!dataflow) return refuse(error_code::option, "unknown DATAFLOW " + std::to_string(req.dataflow));
    const bool int8_out = *out == output_dtype::int8;
    float scale;
    std::memcpy(&scale, &req.scale_bits, sizeof scale);
    if (int8_out && !(scale > 0 && std::isfinite(scale)))
        return refuse(error_code::option,
                      "SCALE must be a positive finite float, got bits " + hex(req.scale_bits));

    if (req.zero_point_vec > 1)
        return refuse(error_code::option,
                      "ZERO_POINT_VEC must be 0 or 1, got " + std::to_string(req.zero_point_vec));
    // The vectors are int8 output's, read once per tile: a SCALE_VEC_ADDR for accumulators is a mistake.
    if (req.scale_vec != 0 && !int8_out)
        return refuse(error_code::option, "SCALE_VEC_ADDR is for OUT_DTYPE_INT8 only");

    decoded_job d;
    d.dtype = *format;
    const std::uint64_t osz = operand_size(d.dtype), asz = accumulator_size(d.dtype);
    const std::uint64_t csz = int8_out ? 1 : asz;
    matmul_job& job = d.job;
    job = make_job({req.m, req.k, req.p}, osz, csz, req.a, req.b, req.c, req.a_stride, req.b_stride,
                   req.c_stride);
    job.run.order = *order;
    job.run.k_tile = req.k_tile;
    job.run.policy = *policy;
    job.run.overflow = *overflow;
    job.run.quant.enabled = int8_out;
    job.run.quant.scale = scale;
    job.run.quant.zero_point = static_cast<std::int32_t>(req.zero_point);
    job.run.quant.rounding = *rounding;
    if (req.scale_vec != 0) job.run.quant.columns = column_vectors{req.scale_vec, req.zero_point_vec != 0};
    job.run.dataflow = *dataflow;
    // ws and is combine their folds in the accumulators, so they run no K_POLICY_PARTIALS.
    if (auto err = check_dataflow(job); !err.empty()) return refuse(error_code::option, std::move(err));
    job.run.memory = limits.memory;
    // The accelerator's memory system refuses some options (double buffering keeps the accumulators
    // between K chunks, so it runs no K_POLICY_PARTIALS).
    if (auto err = check_memory_config(job.run.memory, job); !err.empty())
        return refuse(error_code::option, std::move(err));
    const bool partial = job.uses_partial_buffer();
    if (partial) {
        if (req.partial == 0)
            return refuse(error_code::partial, "K_POLICY_PARTIALS with " + std::to_string(job.chunks()) +
                                                   " chunks needs a partial-sum buffer (PARTIAL_ADDR is 0)");
        job.partial = make_layout(req.partial, req.m, req.p, asz, req.partial_stride);
    }

    struct named {
        const char* name;
        const matrix_layout& l;
        std::uint32_t stride;
    };
    const named layouts[] = {{"A", job.a, req.a_stride},
                             {"B", job.b, req.b_stride},
                             {"C", job.c, req.c_stride},
                             {"the partial-sum buffer", job.partial, req.partial_stride}};
    const std::size_t used = partial ? 4 : 3;
    for (std::size_t i = 0; i < used; ++i) {
        const auto& [name, l, stride] = layouts[i];
        if (l.base % l.elem_size != 0)
            return refuse(error_code::align, std::string(name) + " address " + hex(l.base) +
                                                 " is not a multiple of " + std::to_string(l.elem_size) +
                                                 " bytes");
        if (stride % l.elem_size != 0)
            return refuse(error_code::align, std::string(name) + " stride " + std::to_string(stride) +
                                                 " is not a multiple of " + std::to_string(l.elem_size) +
                                                 " bytes");
    }
    if (job.run.quant.columns && job.run.quant.columns->base % column_vectors::scale_bytes != 0)
        return refuse(error_code::align,
                      "SCALE_VEC_ADDR " + hex(job.run.quant.columns->base) + " is not a multiple of 8 bytes");
    for (std::size_t i = 0; i < used; ++i) {
        const auto& [name, l, stride] = layouts[i];
        if (stride != 0 && stride < l.row_bytes())
            return refuse(error_code::stride, std::string(name) + " stride " + std::to_string(stride) +
                                                  " is smaller than a row (" + std::to_string(l.row_bytes()) +
                                                  " bytes)");
    }
    if (auto err = check_k_limit(job.shape); !err.empty()) return refuse(error_code::range, std::move(err));
    for (std::size_t i = 0; i < used; ++i) {
        const auto& [name, l, stride] = layouts[i];
        (void)stride;
        if (!l.range().in_address_space())
            return refuse(error_code::range, std::string(name) + " runs past the end of the address space");
    }
    if (!column_range(job).in_address_space())
        return refuse(error_code::range,
                      "the per-column scale vector runs past the end of the address space");
    // What the model allocates: the tile plan, and the feeder's A and B buffers (N x kc each).
    const std::uint64_t n = limits.array_size;
    const unsigned __int128 tiles = static_cast<unsigned __int128>(ceil_div(req.m, n)) * ceil_div(req.p, n);
    const std::uint64_t kc = req.k_tile == 0 || req.k_tile > req.k ? req.k : req.k_tile;
    const unsigned __int128 bytes = tiles * sizeof(tile) + static_cast<unsigned __int128>(2) * n * kc * osz;
    if (bytes > limits.max_job_bytes)
        return refuse(error_code::size, "the job needs about " +
                                            std::to_string(static_cast<std::uint64_t>(bytes >> 20)) +
                                            " MiB inside the model, more than the " +
                                            std::to_string(limits.max_job_bytes >> 20) + " MiB allowed");
    if (auto err = check_memory(job.run.memory, job, n, n, osz, asz); !err.empty())
        return refuse(error_code::size, std::move(err));
    if (auto err = check_overlaps(job); !err.empty()) return refuse(error_code::overlap, std::move(err));
    if (column_range(job).overlaps(job.c.range()) ||
        (job.uses_partial_buffer() && column_range(job).overlaps(job.partial.range())))
        return refuse(error_code::overlap, check_columns(job));
    // The controller's own rules, as a safety net: a configuration they refuse never starts.
    const std::string err = validate_job(job, osz, asz);
    if (!err.empty()) return refuse(error_code::option, err);
    return d;
}

}  // namespace systolic
