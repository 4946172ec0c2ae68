#include "systolic/accelerator_job.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "systolic/counting.h"

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

std::uint64_t operand_size(dtype_code d) {
    switch (d) {
        case dtype_code::int8:
            return 1;
        case dtype_code::bf16:
            return 2;
        default:
            return 4;
    }
}

std::uint64_t accumulator_size(dtype_code d) {
    return d == dtype_code::int32 ? 8 : 4;
}

job_request read_request(const register_block& regs) {
    using regmap::offset_of;
    job_request r;
    r.m = regs.get(offset_of("M"));
    r.k = regs.get(offset_of("K"));
    r.p = regs.get(offset_of("P"));
    r.a = regs.get64(offset_of("A_ADDR_LO"));
    r.b = regs.get64(offset_of("B_ADDR_LO"));
    r.c = regs.get64(offset_of("C_ADDR_LO"));
    r.partial = regs.get64(offset_of("PARTIAL_ADDR_LO"));
    r.a_stride = regs.get(offset_of("A_STRIDE"));
    r.b_stride = regs.get(offset_of("B_STRIDE"));
    r.c_stride = regs.get(offset_of("C_STRIDE"));
    r.partial_stride = regs.get(offset_of("PARTIAL_STRIDE"));
    r.dtype = regs.get(offset_of("DTYPE"));
    r.out_dtype = regs.get(offset_of("OUT_DTYPE"));
    r.order = regs.get(offset_of("ORDER"));
    r.k_tile = regs.get(offset_of("K_TILE"));
    r.k_policy = regs.get(offset_of("K_POLICY"));
    r.overflow = regs.get(offset_of("OVERFLOW"));
    r.rounding = regs.get(offset_of("ROUNDING"));
    r.scale_bits = regs.get(offset_of("SCALE"));
    r.zero_point = regs.get(offset_of("ZERO_POINT"));
    return r;
}

decoded_job decode_job(const job_request& req, const job_limits& limits) {
    if (auto err = check_dimensions({req.m, req.k, req.p}); !err.empty())
        return refuse(error_code::zero_dim, std::move(err));
    if (req.dtype > 3) return refuse(error_code::dtype, "unknown DTYPE " + std::to_string(req.dtype));
    if (req.out_dtype > 1)
        return refuse(error_code::dtype, "unknown OUT_DTYPE " + std::to_string(req.out_dtype));
    if (req.order > 2) return refuse(error_code::option, "unknown ORDER " + std::to_string(req.order));
    if (req.k_policy > 1)
        return refuse(error_code::option, "unknown K_POLICY " + std::to_string(req.k_policy));
    if (req.overflow > 1)
        return refuse(error_code::option, "unknown OVERFLOW " + std::to_string(req.overflow));
    if (req.rounding > 2)
        return refuse(error_code::option, "unknown ROUNDING " + std::to_string(req.rounding));
    float scale;
    std::memcpy(&scale, &req.scale_bits, sizeof scale);
    if (req.out_dtype == 1 && !(scale > 0 && std::isfinite(scale)))
        return refuse(error_code::option,
                      "SCALE must be a positive finite float, got bits " + hex(req.scale_bits));

    decoded_job d;
    d.dtype = static_cast<dtype_code>(req.dtype);
    const std::uint64_t osz = operand_size(d.dtype), asz = accumulator_size(d.dtype);
    const std::uint64_t csz = req.out_dtype == 1 ? 1 : asz;
    matmul_job& job = d.job;
    job = make_job({req.m, req.k, req.p}, osz, csz, req.a, req.b, req.c, req.a_stride, req.b_stride,
                   req.c_stride);
    static constexpr tile_order orders[] = {tile_order::row_major, tile_order::col_major,
                                            tile_order::serpentine};
    job.order = orders[req.order];
    job.k_tile = req.k_tile;
    job.policy = req.k_policy == 1 ? k_policy::partials : k_policy::preserve;
    job.overflow = req.overflow == 1 ? overflow_mode::saturate : overflow_mode::wrap;
    job.quant.enabled = req.out_dtype == 1;
    job.quant.scale = scale;
    job.quant.zero_point = static_cast<std::int32_t>(req.zero_point);
    static constexpr rounding_mode roundings[] = {rounding_mode::nearest_even, rounding_mode::nearest_away,
                                                  rounding_mode::toward_zero};
    job.quant.rounding = roundings[req.rounding];
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
    if (auto err = check_overlaps(job); !err.empty()) return refuse(error_code::overlap, std::move(err));
    // The controller's own rules, as a safety net: a configuration they refuse never starts.
    const std::string err = validate_job(job, osz, asz);
    if (!err.empty()) return refuse(error_code::option, err);
    return d;
}

}  // namespace systolic
