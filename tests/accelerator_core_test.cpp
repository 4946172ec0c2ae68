// The accelerator's plain C++ parts, without SystemC: the register block built from the map, the
// C header generated from it, and the decoding of a job from the configuration registers.
#include <gtest/gtest.h>

#include <systolic/accelerator_regs.h>

#include <cstring>
#include <iterator>
#include <set>
#include <utility>

#include "systolic/accelerator_job.h"
#include "systolic/accelerator_map.h"
#include "systolic/memory_system.h"
#include "systolic/register_block.h"

namespace {

using namespace systolic;

TEST(RegisterMap, OffsetsAreUniqueAlignedAndInsideTheBlock) {
    std::set<std::uint32_t> offsets;
    for (const auto& r : regmap::registers) {
        EXPECT_EQ(r.offset % 4, 0u) << r.name;
        EXPECT_LT(r.offset, regmap::block_size) << r.name;
        EXPECT_TRUE(offsets.insert(r.offset).second) << r.name << " shares its offset";
        std::uint32_t used = 0;
        for (const auto& f : r.fields) {
            const std::uint32_t mask = ((1u << f.width) - 1u) << f.shift;
            EXPECT_EQ(used & mask, 0u) << r.name << "." << f.name << " overlaps another field";
            used |= mask;
        }
    }
}

// The committed C header is what the map generates (CTest also diffs the whole text); spot-check
// that its names carry the map's numbers.
TEST(RegisterMap, TheCHeaderAgreesWithTheMap) {
    EXPECT_EQ(SYSTOLIC_REG_ID, regmap::find("ID").offset);
    EXPECT_EQ(SYSTOLIC_REG_CTRL, regmap::find("CTRL").offset);
    EXPECT_EQ(SYSTOLIC_REG_IRQ_STATUS, regmap::find("IRQ_STATUS").offset);
    EXPECT_EQ(SYSTOLIC_REG_SCALE, regmap::find("SCALE").offset);
    EXPECT_EQ(SYSTOLIC_REG_CYCLES_HI, regmap::find("CYCLES_HI").offset);
    EXPECT_EQ(SYSTOLIC_REG_STALL_CYCLES_LO, regmap::find("STALL_CYCLES_LO").offset);
    EXPECT_EQ(SYSTOLIC_REG_DATAFLOW, regmap::find("DATAFLOW").offset);
    EXPECT_EQ(SYSTOLIC_REG_PRELOAD_EDGES_LO, regmap::find("PRELOAD_EDGES_LO").offset);
    EXPECT_EQ(SYSTOLIC_CTRL_IRQ_EN, regmap::bit_of(regmap::find("CTRL"), "IRQ_EN"));
    EXPECT_EQ(SYSTOLIC_STATUS_ERROR, regmap::bit_of(regmap::find("STATUS"), "ERROR"));
    EXPECT_EQ(SYSTOLIC_IRQ_ERROR, regmap::bit_of(regmap::find("IRQ_STATUS"), "ERROR"));
    EXPECT_EQ(SYSTOLIC_ERR_DMA, std::uint32_t(regmap::error_code::dma));
    EXPECT_EQ(regmap::from_code(regmap::dtype_values, dtype_names, SYSTOLIC_DTYPE_BF16), dtype::bf16);
    EXPECT_EQ(regmap::from_code(regmap::dataflow_values, dataflow_kind_names, SYSTOLIC_DATAFLOW_IS),
              dataflow_kind::is);
    EXPECT_EQ(SYSTOLIC_ID_MAGIC, regmap::id_magic);
}

TEST(RegisterBlock, AccessRules) {
    register_block regs([](const regmap::reg&) { return 16u; });
    std::uint32_t v = 0;
    EXPECT_EQ(regs.read(SYSTOLIC_REG_ARRAY_SIZE, v), register_block::result::ok);
    EXPECT_EQ(v, 16u);
    EXPECT_EQ(regs.write(SYSTOLIC_REG_ID, 1), register_block::result::command_error);
    EXPECT_EQ(regs.read(0x1c, v), register_block::result::address_error);
    EXPECT_EQ(regs.read(SYSTOLIC_REGS_SIZE, v), register_block::result::address_error);
    regs.set(SYSTOLIC_REG_IRQ_STATUS, 3);
    EXPECT_EQ(regs.write(SYSTOLIC_REG_IRQ_STATUS, 1), register_block::result::ok);  // write 1 to clear
    EXPECT_EQ(regs.get(SYSTOLIC_REG_IRQ_STATUS), 2u);
    std::uint32_t seen = 0;
    regs.on_write(SYSTOLIC_REG_M, [&](std::uint32_t w) { seen = w; });
    EXPECT_EQ(regs.write(SYSTOLIC_REG_M, 9), register_block::result::ok);
    EXPECT_EQ(seen, 9u);
    regs.set64(SYSTOLIC_REG_EDGES_LO, 0x100000002ull);
    EXPECT_EQ(regs.get(SYSTOLIC_REG_EDGES_HI), 1u);
    regs.reset();
    EXPECT_EQ(regs.get(SYSTOLIC_REG_M), 0u);
    EXPECT_EQ(regs.get(SYSTOLIC_REG_SCALE), 0x3f800000u);
}

job_request good() {
    job_request r;
    r.m = 5;
    r.k = 6;
    r.p = 7;
    r.dtype = SYSTOLIC_DTYPE_INT32;
    r.a = 0x1000;
    r.b = 0x2000;
    r.c = 0x3000;
    return r;
}

TEST(DecodeJob, AGoodRequestBecomesTheJob) {
    auto r = good();
    r.c_stride = 64;
    r.order = SYSTOLIC_ORDER_SNAKE;
    r.k_tile = 2;
    r.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
    r.partial = 0x4000;
    r.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
    r.zero_point = static_cast<std::uint32_t>(-5);
    const float half = 0.5f;
    std::memcpy(&r.scale_bits, &half, 4);
    const auto d = decode_job(r, job_limits{4});
    ASSERT_TRUE(d.ok()) << d.message;
    EXPECT_EQ(d.job.a.row_stride, 24u);  // packed
    EXPECT_EQ(d.job.c.row_stride, 64u);
    EXPECT_EQ(d.job.c.elem_size, 1u);
    EXPECT_EQ(d.job.run.order, tile_order::serpentine);
    EXPECT_TRUE(d.job.uses_partial_buffer());
    EXPECT_EQ(d.job.partial.base, 0x4000u);
    EXPECT_EQ(d.job.partial.elem_size, 8u);
    EXPECT_EQ(d.job.run.quant.zero_point, -5);
    EXPECT_EQ(d.job.run.quant.scale, 0.5);
}

TEST(DecodeJob, TheFirstProblemFoundIsReported) {
    auto r = good();
    r.m = 0;
    r.dtype = 9;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::zero_dim);
    r.m = 5;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::dtype);
    r = good();
    r.b = 0x2002;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::align);
    r = good();
    r.k = 0x80000000u;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::range);
    r = good();
    r.c = 0x2000 + 6 * 7 * 4 - 8;  // the tail of B
    const auto d = decode_job(r, {});
    EXPECT_EQ(d.error, regmap::error_code::overlap);
    EXPECT_EQ(d.message, "C overlaps B");
}

// The accelerator's scratchpads and DRAM bandwidth go into every job it decodes; a job they cannot
// serve is refused before any memory is touched: double buffering with partial sums (OPTION: the
// accumulators stay in the array between chunks), a C scratchpad too small for one tile (SIZE).
TEST(DecodeJob, TheMemorySystemGoesIntoTheJobOrRefusesIt) {
    job_limits limits{4};
    limits.memory.buffers = buffer_mode::double_buffered;
    limits.memory.c_sram = 4096;
    limits.memory.dram_bandwidth = 8;
    auto r = good();
    auto d = decode_job(r, limits);
    ASSERT_TRUE(d.ok()) << d.message;
    EXPECT_EQ(d.job.run.memory.buffers, buffer_mode::double_buffered);
    EXPECT_EQ(d.job.run.memory.c_sram, 4096u);
    EXPECT_EQ(d.job.run.memory.a_sram, 0u);
    EXPECT_EQ(d.job.run.memory.dram_bandwidth, 8.0);
    EXPECT_EQ(validate_job(d.job, 4, 8), "");
    EXPECT_EQ(decode_job(r, job_limits{4}).job.run.memory.buffers, buffer_mode::none);

    r.k_tile = 2;
    r.k_policy = SYSTOLIC_K_POLICY_PARTIALS;
    r.partial = 0x4000;
    d = decode_job(r, limits);
    EXPECT_EQ(d.error, regmap::error_code::option) << d.message;
    EXPECT_FALSE(d.message.empty());

    r = good();
    limits.memory.c_sram = 8;  // one int64 output: far less than a 4x4 tile's
    d = decode_job(r, limits);
    EXPECT_EQ(d.error, regmap::error_code::size) << d.message;
    EXPECT_FALSE(d.message.empty());
    EXPECT_EQ(d.message.find('\n'), std::string::npos);  // one line
}

// DATAFLOW picks the job's dataflow (reset: os); an unknown code is an OPTION error, and so are
// ws and is with partial sums, found at OPTION's place in the order: before a missing partial-sum
// buffer (PARTIAL) and a misaligned matrix (ALIGN). Double buffering takes either dataflow.
TEST(DecodeJob, TheDataflowRegisterChoosesTheDataflow) {
    auto r = good();
    EXPECT_EQ(decode_job(r, job_limits{4}).job.run.dataflow, dataflow_kind::os);
    for (const auto& [code, df] : {std::pair{SYSTOLIC_DATAFLOW_OS, dataflow_kind::os},
                                   std::pair{SYSTOLIC_DATAFLOW_WS, dataflow_kind::ws},
                                   std::pair{SYSTOLIC_DATAFLOW_IS, dataflow_kind::is}}) {
        r.dataflow = code;
        const auto d = decode_job(r, job_limits{4});
        ASSERT_TRUE(d.ok()) << d.message;
        EXPECT_EQ(d.job.run.dataflow, df);
        EXPECT_EQ(validate_job(d.job, 4, 8), "");
    }
    r.dataflow = 3;
    auto d = decode_job(r, job_limits{4});
    EXPECT_EQ(d.error, regmap::error_code::option);
    EXPECT_EQ(d.message, "unknown DATAFLOW 3");

    for (const std::uint32_t code : {SYSTOLIC_DATAFLOW_WS, SYSTOLIC_DATAFLOW_IS}) {
        r = good();
        r.dataflow = code;
        r.k_tile = 2;
        r.k_policy = SYSTOLIC_K_POLICY_PARTIALS;  // and no partial-sum buffer
        r.b = 0x2002;                             // and B misaligned
        d = decode_job(r, job_limits{4});
        EXPECT_EQ(d.error, regmap::error_code::option) << d.message;
        EXPECT_NE(d.message.find("K-splitting with partial sums is for os only"), std::string::npos)
            << d.message;
        r.k_policy = SYSTOLIC_K_POLICY_PRESERVE;
        EXPECT_EQ(decode_job(r, job_limits{4}).error, regmap::error_code::align);
        r.b = 0x2000;
        job_limits buffered{4};
        buffered.memory.buffers = buffer_mode::double_buffered;
        d = decode_job(r, buffered);
        ASSERT_TRUE(d.ok()) << d.message;
        EXPECT_EQ(d.job.run.memory.buffers, buffer_mode::double_buffered);
        EXPECT_EQ(validate_job(d.job, 4, 8), "");
    }
}

// The last byte of the address space belongs to it: a matrix may end exactly at 2^64, and one that
// runs a byte past it is out of range; overlaps there are overlaps.
// SCALE_VEC_ADDR and ZERO_POINT_VEC: 0 is per-tensor; an address gives the job its per-column
// vectors; each wrong use has its code.
TEST(DecodeJob, TheScaleVectorRegisters) {
    auto r = good();
    r.out_dtype = SYSTOLIC_OUT_DTYPE_INT8;
    auto d = decode_job(r, job_limits{4});
    ASSERT_TRUE(d.ok()) << d.message;
    EXPECT_FALSE(d.job.run.quant.columns);
    r.scale_vec = 0x5000;
    d = decode_job(r, job_limits{4});
    ASSERT_TRUE(d.ok()) << d.message;
    ASSERT_TRUE(d.job.run.quant.columns);
    EXPECT_EQ(d.job.run.quant.columns->base, 0x5000u);
    EXPECT_FALSE(d.job.run.quant.columns->zero_points);
    r.zero_point_vec = 1;
    d = decode_job(r, job_limits{4});
    ASSERT_TRUE(d.ok()) << d.message;
    EXPECT_TRUE(d.job.run.quant.columns->zero_points);
    r.zero_point_vec = 2;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::option);
    r.zero_point_vec = 1;
    r.scale_vec = 0x5004;
    d = decode_job(r, {});
    EXPECT_EQ(d.error, regmap::error_code::align);
    EXPECT_EQ(d.message, "SCALE_VEC_ADDR 0x5004 is not a multiple of 8 bytes");
    r.scale_vec = ~std::uint64_t{0} - 7;  // P x 12 bytes cannot fit below 2^64
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::range);
    r.scale_vec = 0x3000 - 8;  // its tail under C
    d = decode_job(r, {});
    EXPECT_EQ(d.error, regmap::error_code::overlap);
    EXPECT_EQ(d.message, "C overlaps the per-column scale vector");
    r.scale_vec = 0x5000;
    r.out_dtype = SYSTOLIC_OUT_DTYPE_ACC;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::option);
}

TEST(DecodeJob, TheTopOfTheAddressSpace) {
    auto r = good();  // C is 5 x 7 int64
    r.c = std::uint64_t{0} - 5 * 7 * 8;
    auto d = decode_job(r, {});
    EXPECT_TRUE(d.ok()) << d.message;
    EXPECT_EQ(validate_job(d.job, 4, 8), "");
    r.c += 8;
    EXPECT_EQ(decode_job(r, {}).error, regmap::error_code::range);
    r = good();  // A is 5 rows of 6 int32, 256 bytes apart: 4 * 256 + 24 bytes
    r.a_stride = 256;
    r.a = std::uint64_t{0} - (4 * 256 + 24);
    r.c = r.a + 8;
    d = decode_job(r, {});
    EXPECT_EQ(d.error, regmap::error_code::overlap) << d.message;
    EXPECT_EQ(d.message, "C overlaps A");
}

TEST(AddressRange, EndsWithoutWrapping) {
    const matrix_layout top = make_layout(std::uint64_t{0} - 64, 2, 4, 8);
    EXPECT_TRUE(top.range().in_address_space());
    EXPECT_TRUE(top.covers(~std::uint64_t{0}));
    EXPECT_TRUE(top.element_at(~std::uint64_t{0} - 7));
    const matrix_layout past = make_layout(std::uint64_t{0} - 56, 2, 4, 8);
    EXPECT_FALSE(past.range().in_address_space());
    const matrix_layout inside = make_layout(std::uint64_t{0} - 32, 1, 2, 8);
    EXPECT_TRUE(top.range().overlaps(inside.range()));
    EXPECT_TRUE(inside.range().overlaps(top.range()));
    EXPECT_FALSE(top.range().overlaps(make_layout(0, 1, 8, 8).range()));
    EXPECT_FALSE(top.range().overlaps(make_layout(std::uint64_t{0} - 64, 0, 0, 8).range()));  // empty
}

}  // namespace
