// The scoreboard: checks one job against an independent reference, keyed by the global
// coordinates (row, col) of C, so the tile order cannot change what is expected. It checks that
//  - every observed write lies on elements of C, or of the job's partial-sum buffer (never stride
//    padding, guard bytes or beyond),
//  - every element of C is written exactly once, with the reference value (bit for bit), and
//    still holds what was written when the job ends (nothing else overwrote it),
//  - nothing outside C and the partial-sum buffer changed (the whole memory against a shadow image),
//  - the advance edges equal tiles x (K + chunks x (R + C - 2)) on an R x C array, and the MACs,
//    with padding and real, equal the counting rule's,
//  - the job's traffic broke no TLM-2.0 base-protocol rule (the testbench's protocol checker reports
//    here),
//  - and the job really completed, with more than zero items checked.
// It works on C's bytes, so it serves every number format; a printer shows values in messages.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <optional>
#include <string>
#include <tlm>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/matrix_layout.h"

namespace systolic::verify {

struct scoreboard_summary {
    std::uint64_t checked = 0;              // element writes compared against the reference
    std::uint64_t mismatches = 0;           // ... whose value was wrong
    std::uint64_t writes = 0;               // element writes to C observed (inside C or not)
    std::uint64_t out_of_range_writes = 0;  // writes that touched anything but elements of C (or partials)
    std::uint64_t partial_writes = 0;       // element writes to the partial-sum buffer
    std::uint64_t missing = 0;              // elements of C never written
    std::uint64_t duplicates = 0;           // elements of C written more than once
    std::uint64_t overwritten = 0;          // elements of C that no longer hold what was written
    std::uint64_t protocol_violations = 0;  // TLM-2.0 base-protocol rules broken on the bus
    bool untouched_ok = true;               // memory outside C is byte-for-byte unchanged
    bool edges_ok = true;                   // advance edges match the counting rule
    bool macs_ok = true;                    // MACs with padding and real match the counting rule
    bool completed = false;                 // the job finished (not just ran out of events)
    std::vector<std::string> errors;        // the first few problems, one line each

    bool pass() const {
        return completed && checked > 0 && mismatches == 0 && out_of_range_writes == 0 && missing == 0 &&
               duplicates == 0 && overwritten == 0 && protocol_violations == 0 && untouched_ok && edges_ok &&
               macs_ok;
    }
};

class scoreboard {
public:
    // Shows one element of C (elem_size bytes) as text, e.g. "7" or "-0.5".
    using value_printer = std::function<std::string(const std::uint8_t*)>;
    static constexpr std::size_t max_errors = 16;

    // Starts a job: C's layout, the expected bytes of C (M x P elements, row-major), how to print
    // an element, and the partial-sum buffer, if the job has one (its writes are allowed).
    void expect(const matrix_layout& c, std::vector<std::uint8_t> expected, value_printer print,
                std::optional<matrix_layout> partial = std::nullopt);
    // The same with the expected bytes still being computed (the reference runs beside the model):
    // writes are recorded as they come and compared when finish() has the expected bytes.
    void expect(const matrix_layout& c, std::shared_future<std::vector<std::uint8_t>> expected,
                value_printer print, std::optional<matrix_layout> partial = std::nullopt);

    // A write seen by the monitor, after the target answered; ignored outside expect() ... finish().
    void observe_write(const tlm::tlm_generic_payload& trans);

    // A broken TLM-2.0 base-protocol rule, as one line (from the protocol checker); fails the job.
    void protocol_violation(const std::string& line);

    // The advance edges a tile must show, where they depend on the tile (a fabric steps fewer arrays
    // on the tiles at C's edges); null: counts.advance_edges_per_tile for every tile.
    using tile_edge_rule = std::function<std::uint64_t(const tile&)>;

    // Bytes of memory from `base`, as they were when the job started and as they are now.
    struct memory_window {
        std::uint64_t base = 0;
        std::uint64_t size = 0;
        const std::uint8_t* before = nullptr;
        const std::uint8_t* now = nullptr;
    };

    // End of job: completion, edge and MAC counts, missing elements, the memory outside C, which
    // must be as it was byte for byte over every window, and the elements of C that lie in a
    // window, which must hold what was written to them.
    const scoreboard_summary& finish(const job_result& result, const expected_counts& counts,
                                     const std::vector<memory_window>& memory,
                                     const tile_edge_rule& tile_edges = {});
    // The same over one window from memory_base (`before` is the image as it was when the job started).
    const scoreboard_summary& finish(const job_result& result, const expected_counts& counts,
                                     const std::uint8_t* memory, std::uint64_t memory_base,
                                     const std::vector<std::uint8_t>& before,
                                     const tile_edge_rule& tile_edges = {});

    // Stops listening without a verdict: the job will not be checked (a soft reset stopped it).
    void abandon() {
        m_active = false;
        m_expected = {};  // waits for a reference still being computed
    }

    const scoreboard_summary& summary() const { return m_summary; }

private:
    void error(const std::string& line);
    void record(std::uint64_t idx, const unsigned char* value);
    bool check_untouched(const memory_window& w);
    void check_c_in_memory(const std::vector<memory_window>& memory);

    matrix_layout m_c;
    std::optional<matrix_layout> m_partial;
    void compare(const std::vector<std::uint8_t>& expected, std::uint64_t idx, const std::uint8_t* got);

    std::shared_future<std::vector<std::uint8_t>> m_expected;
    value_printer m_print;
    std::vector<std::uint32_t> m_write_count;
    std::vector<std::uint8_t> m_first;  // the first value written to each element of C
    struct later_write {
        std::uint64_t idx;
        std::uint64_t bytes;  // up to 8 bytes of the value
    };
    std::vector<later_write> m_later;  // values of duplicate writes, compared too
    scoreboard_summary m_summary;
    bool m_active = false;
};

}  // namespace systolic::verify
