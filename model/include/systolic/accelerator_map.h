// The accelerator's register map, declared once: every register's name, offset, access rule, reset
// value and fields, and the named values some registers take (number formats, error codes, ...).
// Everything else comes from this table:
//  - the model's register block (register_block.h) is built from it at construction;
//  - `systolic-regs` (tools/regs) prints the C99/C++ header <systolic/accelerator_regs.h> and
//    docs/registers.md from it; a CTest test fails when the committed copies differ.
// Plain C++17, constexpr, no SystemC. Offsets are bytes from the block's base; every register is
// 32 bits wide and 32-bit aligned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "systolic/job_names.h"
#include "systolic/names.h"
#include "systolic/number_format.h"
#include "systolic/quantize.h"
#include "systolic/tiling.h"

namespace systolic::regmap {

enum class access {
    ro,   // read-only: a write gets TLM_COMMAND_ERROR_RESPONSE
    rw,   // read-write
    w1c,  // read, write 1 to clear a bit
};

struct field {
    const char* name;  // C name: <register's field prefix>_<name>, e.g. SYSTOLIC_CTRL_START
    unsigned shift;
    unsigned width;
    const char* doc;
};

// A named value of a register (or of one of its fields): SYSTOLIC_<set>_<name>, e.g. SYSTOLIC_DTYPE_INT8.
struct value {
    const char* name;
    std::uint32_t code;
    const char* doc;
};

template <class T>
struct list {
    const T* items = nullptr;
    std::size_t size = 0;
    constexpr list() = default;
    template <std::size_t N>
    constexpr list(const T (&a)[N]) : items(a), size(N) {}
    constexpr const T* begin() const { return items; }
    constexpr const T* end() const { return items + size; }
};

struct reg {
    const char* name;  // C name: SYSTOLIC_REG_<name>
    std::uint32_t offset;
    access rule;
    std::uint32_t reset;
    const char* reset_doc;     // non-null when the reset value depends on the configuration
    const char* field_prefix;  // C names of fields: SYSTOLIC_<field_prefix>_<field> (null: no fields)
    list<field> fields;
    const char* doc;
};

struct value_set {
    const char* prefix;   // C names: SYSTOLIC_<prefix>_<value>
    const char* used_by;  // register names, for the docs
    list<value> values;
    const char* doc;
};

inline constexpr std::uint32_t id_magic = 0x53594143u;  // "SYAC"
inline constexpr std::uint32_t version = 0x00010004u;   // major 1, minor 4 (16 bits each): ENERGY
inline constexpr std::uint32_t block_size = 0x100u;     // bytes the register block decodes
// The accelerator as a PCI function (docs/qemu.md), its register block in BAR0. 0x1234 is no
// registered vendor's: the ID QEMU's own example devices use (edu is 1234:11e8), for a model that is
// no silicon; class 0x1200 is a processing accelerator.
inline constexpr std::uint32_t pci_vendor = 0x1234u;
inline constexpr std::uint32_t pci_device = 0x5157u;
inline constexpr std::uint32_t pci_class = 0x120000u;  // base class, subclass, programming interface

// The tables read best one entry to a line.
// clang-format off

// Named fields (single bits unless the width says otherwise).
inline constexpr field ctrl_fields[] = {
    {"START", 0, 1,
     "Write 1: start a job with the current configuration registers. Refused with ERR_BUSY while a job "
     "runs. Reads as 0."},
    {"RESET", 1, 1,
     "Write 1: soft reset. Stops a running job at its next step (at most one K chunk later) and returns "
     "every register to its reset value; BUSY stays set until the job has stopped. Reads as 0."},
    {"IRQ_EN", 2, 1, "Drive `irq` while any IRQ_STATUS bit is set. Stays as written."},
};
inline constexpr field status_fields[] = {
    {"BUSY", 0, 1, "A job is running (or stopping after a soft reset)."},
    {"DONE", 1, 1, "The last job completed; cleared by an accepted START and by soft reset."},
    {"ERROR", 2, 1, "ERROR holds a code other than ERR_NONE."},
};
inline constexpr field irq_fields[] = {
    {"DONE", 0, 1, "A job completed. Write 1 to clear."},
    {"ERROR", 1, 1, "A start was refused or a job failed (see ERROR). Write 1 to clear."},
};

inline constexpr reg registers[] = {
    {"ID", 0x00, access::ro, id_magic, nullptr, nullptr, {}, "Magic value a driver probes: 0x53594143 (\"SYAC\")."},
    {"VERSION", 0x04, access::ro, version, nullptr, nullptr, {},
     "Register interface version: major in bits 31:16, minor in bits 15:0."},
    {"ARRAY_SIZE", 0x08, access::ro, 0, "N", nullptr, {}, "N, the side of the N x N array."},
    {"CTRL", 0x0c, access::rw, 0, nullptr, "CTRL", ctrl_fields, "Control."},
    {"STATUS", 0x10, access::ro, 0, nullptr, "STATUS", status_fields, "Status."},
    {"ERROR", 0x14, access::ro, 0, nullptr, nullptr, {},
     "Error code of the last refused start or failed job (SYSTOLIC_ERR_*); cleared by an accepted START "
     "and by soft reset."},
    {"IRQ_STATUS", 0x18, access::w1c, 0, nullptr, "IRQ", irq_fields, "Interrupt causes."},
    {"M", 0x20, access::rw, 0, nullptr, nullptr, {}, "Rows of A and C."},
    {"K", 0x24, access::rw, 0, nullptr, nullptr, {}, "Columns of A, rows of B (the reduction length)."},
    {"P", 0x28, access::rw, 0, nullptr, nullptr, {}, "Columns of B and C."},
    {"A_ADDR_LO", 0x30, access::rw, 0, nullptr, nullptr, {}, "Address of A(0,0), bits 31:0."},
    {"A_ADDR_HI", 0x34, access::rw, 0, nullptr, nullptr, {}, "Address of A(0,0), bits 63:32."},
    {"B_ADDR_LO", 0x38, access::rw, 0, nullptr, nullptr, {}, "Address of B(0,0), bits 31:0."},
    {"B_ADDR_HI", 0x3c, access::rw, 0, nullptr, nullptr, {}, "Address of B(0,0), bits 63:32."},
    {"C_ADDR_LO", 0x40, access::rw, 0, nullptr, nullptr, {}, "Address of C(0,0), bits 31:0."},
    {"C_ADDR_HI", 0x44, access::rw, 0, nullptr, nullptr, {}, "Address of C(0,0), bits 63:32."},
    {"A_STRIDE", 0x48, access::rw, 0, nullptr, nullptr, {},
     "Bytes from one row of A to the next; 0: packed (K elements)."},
    {"B_STRIDE", 0x4c, access::rw, 0, nullptr, nullptr, {},
     "Bytes from one row of B to the next; 0: packed (P elements)."},
    {"C_STRIDE", 0x50, access::rw, 0, nullptr, nullptr, {},
     "Bytes from one row of C to the next; 0: packed (P elements)."},
    {"DTYPE", 0x54, access::rw, 0, nullptr, nullptr, {}, "Number format (SYSTOLIC_DTYPE_*)."},
    {"ORDER", 0x58, access::rw, 0, nullptr, nullptr, {}, "Tile visiting order (SYSTOLIC_ORDER_*)."},
    {"K_TILE", 0x5c, access::rw, 0, nullptr, nullptr, {}, "Reduction chunk length; 0: the whole K."},
    {"K_POLICY", 0x60, access::rw, 0, nullptr, nullptr, {}, "How chunks combine (SYSTOLIC_K_POLICY_*)."},
    {"OUT_DTYPE", 0x64, access::rw, 0, nullptr, nullptr, {},
     "C's elements: the accumulators or int8 codes (SYSTOLIC_OUT_DTYPE_*)."},
    {"SCALE", 0x68, access::rw, 0x3f800000u, nullptr, nullptr, {},
     "int8 output: scale, IEEE-754 binary32 bits (reset: 1.0); positive and finite."},
    {"ZERO_POINT", 0x6c, access::rw, 0, nullptr, nullptr, {}, "int8 output: zero point, two's complement."},
    {"OVERFLOW", 0x70, access::rw, 0, nullptr, nullptr, {},
     "Integer accumulator overflow (SYSTOLIC_OVERFLOW_*)."},
    {"ROUNDING", 0x74, access::rw, 0, nullptr, nullptr, {}, "int8 output rounding (SYSTOLIC_ROUNDING_*)."},
    {"DATAFLOW", 0x78, access::rw, 0, nullptr, nullptr, {},
     "What stays in the PEs (SYSTOLIC_DATAFLOW_*; docs/dataflows.md). WS and IS take no K_POLICY_PARTIALS."},
    {"PARTIAL_ADDR_LO", 0x80, access::rw, 0, nullptr, nullptr, {},
     "K_POLICY_PARTIALS with two or more chunks: address of the M x P accumulator buffer, bits 31:0."},
    {"PARTIAL_ADDR_HI", 0x84, access::rw, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"PARTIAL_STRIDE", 0x88, access::rw, 0, nullptr, nullptr, {},
     "Bytes from one row of the partial-sum buffer to the next; 0: packed."},
    {"ERROR_ADDR_LO", 0x90, access::ro, 0, nullptr, nullptr, {},
     "ERR_DMA: the address of the failing bus transaction, bits 31:0."},
    {"ERROR_ADDR_HI", 0x94, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"EDGES_LO", 0xa0, access::ro, 0, nullptr, nullptr, {}, "Advance edges of the last job, bits 31:0."},
    {"EDGES_HI", 0xa4, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"MACS_LO", 0xa8, access::ro, 0, nullptr, nullptr, {},
     "MACs of the last job, padding included (every PE, every term), bits 31:0."},
    {"MACS_HI", 0xac, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"MACS_REAL_LO", 0xb0, access::ro, 0, nullptr, nullptr, {},
     "MACs of the last job that belong to the product (M x K x P when complete), bits 31:0."},
    {"MACS_REAL_HI", 0xb4, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"CYCLES_LO", 0xb8, access::ro, 0, nullptr, nullptr, {},
     "Clock periods from START to the end of the last job (the simulated time it took), bits 31:0."},
    {"CYCLES_HI", 0xbc, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"STALL_CYCLES_LO", 0xc0, access::ro, 0, nullptr, nullptr, {},
     "Clock cycles of the last job in which the array waited for operands or for room in the C "
     "scratchpad (0 without double buffering; docs/memory.md), bits 31:0."},
    {"STALL_CYCLES_HI", 0xc4, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"PRELOAD_EDGES_LO", 0xc8, access::ro, 0, nullptr, nullptr, {},
     "Edges of the last job that loaded the stationary blocks into the PEs, beside EDGES (0 for "
     "DATAFLOW_OS), bits 31:0."},
    {"PRELOAD_EDGES_HI", 0xcc, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"SCALE_VEC_ADDR_LO", 0xd0, access::rw, 0, nullptr, nullptr, {},
     "OUT_DTYPE_INT8 per column: address of P little-endian float64 scales, one per column of C, "
     "used instead of SCALE (then P int32 zero points if ZERO_POINT_VEC); 8-byte aligned; 0: "
     "per-tensor SCALE and ZERO_POINT (docs/formats.md), bits 31:0."},
    {"SCALE_VEC_ADDR_HI", 0xd4, access::rw, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
    {"ZERO_POINT_VEC", 0xd8, access::rw, 0, nullptr, nullptr, {},
     "With SCALE_VEC_ADDR: 1 when P int32 zero points follow the scales, used instead of ZERO_POINT; "
     "0: ZERO_POINT for every column; other values: ERR_OPTION."},
    {"ENERGY_LO", 0xe0, access::ro, 0, nullptr, nullptr, {},
     "Energy of the last job in pJ, rounded to an integer, as the pricing function of the "
     "accelerator's configuration gives it from the job's counted actions (docs/energy.md); 0 when "
     "none is configured, bits 31:0."},
    {"ENERGY_HI", 0xe4, access::ro, 0, nullptr, nullptr, {}, "The same, bits 63:32."},
};

inline constexpr value dtype_values[] = {
    {"INT8", 0, "int8 operands, int32 accumulators"},
    {"INT32", 1, "int32 operands, int64 accumulators"},
    {"FP32", 2, "fp32 operands and accumulators"},
    {"BF16", 3, "bf16 operands (16-bit), fp32 accumulators"},
};
inline constexpr value order_values[] = {
    {"ROW", 0, "row-major tile order"},
    {"COL", 1, "column-major tile order"},
    {"SNAKE", 2, "serpentine tile order"},
};
inline constexpr value k_policy_values[] = {
    {"PRESERVE", 0, "keep the accumulators between chunks, drain once"},
    {"PARTIALS", 1, "drain each chunk's partial sums to the partial-sum buffer and combine them there"},
};
inline constexpr value out_dtype_values[] = {
    {"ACC", 0, "C holds the accumulators"},
    {"INT8", 1, "C holds int8 codes: saturate(round(acc x SCALE) + ZERO_POINT)"},
};
inline constexpr value overflow_values[] = {
    {"WRAP", 0, "integer accumulators wrap modulo 2^bits"},
    {"SATURATE", 1, "integer accumulators saturate"},
};
inline constexpr value rounding_values[] = {
    {"NEAREST_EVEN", 0, "round half to even"},
    {"NEAREST_AWAY", 1, "round half away from zero"},
    {"TOWARD_ZERO", 2, "truncate"},
};
inline constexpr value dataflow_values[] = {
    {"OS", 0, "output stationary: each PE keeps one C element over the whole K"},
    {"WS", 1, "weight stationary: a block of B stays in the PEs, A's rows stream through"},
    {"IS", 2, "input stationary: a block of A's transpose stays in the PEs, B's columns stream through"},
};
// Error codes. A configuration is checked in the order ZERO_DIM, DTYPE, OPTION, PARTIAL, ALIGN, STRIDE,
// RANGE, SIZE, OVERLAP; the first that applies is reported and no memory is touched.
inline constexpr value error_values[] = {
    {"NONE", 0, "no error"},
    {"BUSY", 1, "START while a job was running; the running job continues"},
    {"ZERO_DIM", 2, "M, K or P is zero"},
    {"DTYPE", 3, "DTYPE or OUT_DTYPE names no format"},
    {"OPTION", 4, "ORDER, K_POLICY, OVERFLOW, ROUNDING or DATAFLOW holds an unknown value, SCALE is not positive and finite, K_POLICY_PARTIALS meets double buffering or a DATAFLOW other than OS, ZERO_POINT_VEC is not 0 or 1, or SCALE_VEC_ADDR is set without OUT_DTYPE_INT8"},
    {"ALIGN", 5, "an address or stride is not a multiple of its element size (SCALE_VEC_ADDR: of 8 bytes)"},
    {"STRIDE", 6, "a stride (non-zero) is smaller than a row"},
    {"RANGE", 7, "a matrix or the scale vector runs past the end of the 64-bit address space, or K >= 2^31"},
    {"SIZE", 8, "the job needs more memory inside the model (tile plan, operand buffers) than it is configured to allow, or one of its tiles does not fit the configured scratchpads"},
    {"OVERLAP", 9, "C (or the partial-sum buffer) overlaps A, B, each other or the scale vector"},
    {"PARTIAL", 10, "K_POLICY_PARTIALS with two or more chunks but no partial-sum buffer (PARTIAL_ADDR = 0)"},
    {"DMA", 11, "a bus transaction failed; ERROR_ADDR holds its address, and the job stopped"},
    {"INTERNAL", 12, "the array did not complete a chunk (the watchdog); a model defect"},
};

inline constexpr value_set value_sets[] = {
    {"DTYPE", "DTYPE", dtype_values, "Number formats."},
    {"OUT_DTYPE", "OUT_DTYPE", out_dtype_values, "Output formats."},
    {"ORDER", "ORDER", order_values, "Tile orders."},
    {"K_POLICY", "K_POLICY", k_policy_values, "Chunk policies."},
    {"OVERFLOW", "OVERFLOW", overflow_values, "Overflow modes."},
    {"ROUNDING", "ROUNDING", rounding_values, "Rounding modes."},
    {"DATAFLOW", "DATAFLOW", dataflow_values, "Dataflows."},
    {"ERR", "ERROR", error_values, "Error codes."},
};

// clang-format on

// Look-ups by name, for constant expressions and the tests that hold the generated header to the
// map. Code that reads or writes a register uses the generated SYSTOLIC_REG_* constants of
// <systolic/accelerator_regs.h>, so a misspelt name does not compile.
constexpr bool same(const char* a, const char* b) {
    return systolic::detail::same_name(a, b);
}
constexpr const reg& find(const char* name) {
    for (const reg& r : registers)
        if (same(r.name, name)) return r;
    throw "no such register";  // a compile-time error in constant evaluation
}
template <std::size_t N>
constexpr std::uint32_t code_of(const value (&set)[N], const char* name) {
    for (const value& v : set)
        if (same(v.name, name)) return v.code;
    throw "no such value";
}
constexpr std::uint32_t bit_of(const reg& r, const char* name) {
    for (const field& f : r.fields)
        if (same(f.name, name)) return ((1u << f.width) - 1u) << f.shift;
    throw "no such field";
}

// The error codes as a C++ enum, checked against error_values above.
enum class error_code : std::uint32_t {
    none = 0,
    busy,
    zero_dim,
    dtype,
    option,
    align,
    stride,
    range,
    size,
    overlap,
    partial,
    dma,
    internal
};
constexpr bool error_codes_in_order() {
    std::uint32_t i = 0;
    for (const value& v : error_values)
        if (v.code != i++) return false;
    return i == std::uint32_t(error_code::internal) + 1;
}
static_assert(error_codes_in_order(), "error_code must list error_values in order");
static_assert(code_of(error_values, "DMA") == std::uint32_t(error_code::dma));

// A register's value set names the values of one of the model's enums: each value's name is the
// enum's name in upper case with '_' for '-' (ORDER's SNAKE is tile_order "snake", ROUNDING's
// NEAREST_EVEN is rounding_mode "nearest-even"). So a code maps to the enum through the two tables,
// and the static_asserts below hold every code of a set to a name of its enum.
namespace detail {
constexpr bool register_spelling(const char* reg, const char* name) {
    for (; *reg != '\0' && *name != '\0'; ++reg, ++name) {
        const char n = *name == '-' ? '_' : (*name >= 'a' && *name <= 'z') ? char(*name - 'a' + 'A') : *name;
        if (*reg != n) return false;
    }
    return *reg == *name;
}
}  // namespace detail

template <class Enum, std::size_t N, std::size_t M>
constexpr std::optional<Enum> from_code(const value (&set)[M], const name_table<Enum, N>& table,
                                        std::uint32_t code) {
    for (const auto& v : set)
        if (v.code == code)
            for (const auto& e : table)
                if (detail::register_spelling(v.name, e.name)) return e.value;
    return std::nullopt;
}

// The code of an enum value in a register's value set; none when the register has no such value
// (ORDER has no random order).
template <class Enum, std::size_t N, std::size_t M>
constexpr std::optional<std::uint32_t> code_for(const value (&set)[M], const name_table<Enum, N>& table,
                                                Enum v) {
    for (const auto& s : set)
        if (detail::register_spelling(s.name, name_of(table, v))) return s.code;
    return std::nullopt;
}

template <class Enum, std::size_t N, std::size_t M>
constexpr bool every_code_named(const value (&set)[M], const name_table<Enum, N>& table) {
    for (const auto& v : set)
        if (!from_code(set, table, v.code)) return false;
    return true;
}
static_assert(every_code_named(dtype_values, dtype_names));
static_assert(every_code_named(out_dtype_values, output_dtype_names));
static_assert(every_code_named(order_values, tile_order_names));
static_assert(every_code_named(k_policy_values, k_policy_names));
static_assert(every_code_named(overflow_values, overflow_mode_names));
static_assert(every_code_named(rounding_values, rounding_mode_names));
static_assert(every_code_named(dataflow_values, dataflow_kind_names));

}  // namespace systolic::regmap
