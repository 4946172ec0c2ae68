// What a job did, counted where it happened, for the energy and area account (docs/energy.md):
// each PE-edge's action, the bit toggles of the PE registers, and every memory's accesses. Both
// engines fill it identically: the cycle engine as it steps, the functional engine from the same
// per-tile rules without stepping. Pricing it (pJ, mm²) is the energy library's job, not the model's.
#pragma once

#include <cstdint>

#include "systolic/names.h"

namespace systolic {

// What one PE does on one edge: exactly one of these.
enum class pe_action { mac_random, mac_gated, idle, preload };
inline constexpr enum_name<pe_action> pe_action_names[] = {
    {pe_action::mac_random, "mac_random", "a valid MAC, both operands nonzero"},
    {pe_action::mac_gated, "mac_gated", "a valid MAC with a zero operand (a real zero or a padding token)"},
    {pe_action::idle, "idle", "no valid token: the skew's fill and drain"},
    {pe_action::preload, "preload", "ws, is: an edge that moves the stationary operand in"},
};
static_assert(names_in_order(pe_action_names));
constexpr const char* to_string(pe_action a) {
    return name_of(pe_action_names, a);
}

// Per action, summed over the array: mac_random + mac_gated + idle + preload = R x C x edges.
struct pe_action_counts {
    std::uint64_t mac_random = 0;
    std::uint64_t mac_gated = 0;
    std::uint64_t idle = 0;
    std::uint64_t preload = 0;

    std::uint64_t total() const { return mac_random + mac_gated + idle + preload; }
    bool operator==(const pe_action_counts& o) const {
        return mac_random == o.mac_random && mac_gated == o.mac_gated && idle == o.idle &&
               preload == o.preload;
    }
};

// Bit toggles: the Hamming distance between successive values of a register at the format's width
// (8 bits for int8, 16 for bf16, 32 for int32 and fp32 operands; the accumulator's own width),
// summed over the array's PEs, as a gate-level power model and the VCD see the registers.
struct toggle_counts {
    std::uint64_t a_toggles = 0;  // the registers A passes through (os: east; is: stationary; ws: streamed)
    std::uint64_t b_toggles = 0;  // the registers B passes through (os: south; ws: stationary; is: streamed)
    std::uint64_t acc_toggles = 0;  // the accumulators (os), or the partial sums moving through (ws, is)

    bool operator==(const toggle_counts& o) const {
        return a_toggles == o.a_toggles && b_toggles == o.b_toggles && acc_toggles == o.acc_toggles;
    }
};

// One scratchpad's accesses (buffers double; all zero without scratchpads).
struct buffer_counts {
    std::uint64_t read_words = 0, write_words = 0;
    std::uint64_t read_bytes = 0, write_bytes = 0;

    bool operator==(const buffer_counts& o) const {
        return read_words == o.read_words && write_words == o.write_words && read_bytes == o.read_bytes &&
               write_bytes == o.write_bytes;
    }
};

struct action_counts {
    pe_action_counts pe;
    toggle_counts toggles;
    buffer_counts a_sram, b_sram, c_sram;
    // DRAM (the TLM target behind the DMA port), per stream, as the DMA port counted its transfers.
    std::uint64_t dram_a_read_bytes = 0, dram_b_read_bytes = 0;
    std::uint64_t dram_c_read_bytes = 0;  // partial sums read back (k_policy partials)
    std::uint64_t dram_c_write_bytes = 0;
    std::uint64_t link_words = 0;  // a fabric's words crossing from one array to the next; 0 for one array
    // What the counts are of, for pricing: the array and the widths of its words, and the job's
    // real MACs (M x K x P, padding excluded), which an energy per MAC is per.
    std::uint64_t rows = 0, cols = 0;
    std::uint64_t depth = 1;  // a fabric's arrays along K: rows x cols x depth PEs in all
    unsigned operand_bits = 0, accumulator_bits = 0;
    std::uint64_t macs_real = 0;

    bool operator==(const action_counts& o) const {
        return pe == o.pe && toggles == o.toggles && a_sram == o.a_sram && b_sram == o.b_sram &&
               c_sram == o.c_sram && dram_a_read_bytes == o.dram_a_read_bytes &&
               dram_b_read_bytes == o.dram_b_read_bytes && dram_c_read_bytes == o.dram_c_read_bytes &&
               dram_c_write_bytes == o.dram_c_write_bytes && link_words == o.link_words && rows == o.rows &&
               cols == o.cols && depth == o.depth && operand_bits == o.operand_bits &&
               accumulator_bits == o.accumulator_bits && macs_real == o.macs_real;
    }
};

}  // namespace systolic
