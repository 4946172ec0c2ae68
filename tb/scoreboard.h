// The scoreboard: checks one job against an independent reference, keyed by the global
// coordinates (row, col) of C, so the tile order cannot change what is expected. It checks that
//  - every observed write lies on elements of C (never stride padding, guard bytes or beyond),
//  - every element of C is written exactly once, with the reference value,
//  - nothing outside C changed (the whole memory against a shadow image),
//  - the advance edges equal tiles x (K + 2(N-1)),
//  - and the job really completed, with more than zero items checked.
#pragma once

#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <tlm>
#include <vector>

#include "systolic/counting.h"
#include "systolic/job.h"
#include "systolic/matrix_layout.h"

namespace systolic::tb {

struct scoreboard_summary {
    std::uint64_t checked = 0;              // element writes compared against the reference
    std::uint64_t mismatches = 0;           // ... whose value was wrong
    std::uint64_t writes = 0;               // element writes observed (inside C or not)
    std::uint64_t out_of_range_writes = 0;  // writes that touched anything but elements of C
    std::uint64_t missing = 0;              // elements of C never written
    std::uint64_t duplicates = 0;           // elements of C written more than once
    bool untouched_ok = true;               // memory outside C is byte-for-byte unchanged
    bool edges_ok = true;                   // advance edges match the counting rule
    bool completed = false;                 // the job finished (not just ran out of events)
    std::vector<std::string> errors;        // the first few problems, one line each

    bool pass() const {
        return completed && checked > 0 && mismatches == 0 && out_of_range_writes == 0 && missing == 0 &&
               duplicates == 0 && untouched_ok && edges_ok;
    }
};

template <class Format>
class scoreboard {
public:
    using accumulator_type = typename Format::accumulator_type;
    static constexpr std::size_t max_errors = 16;

    // Starts a job: C's layout and the reference result (M x P, row-major).
    void expect(const matrix_layout& c, std::vector<accumulator_type> expected) {
        m_c = c;
        m_expected = std::move(expected);
        m_write_count.assign(m_expected.size(), 0);
        m_summary = scoreboard_summary{};
    }

    // A write seen by the monitor: every byte must belong to an element of C, and every element
    // written must carry the reference value. Elements are checked whole; a write covering part
    // of one is out of range.
    void observe_write(const tlm::tlm_generic_payload& trans) {
        const std::uint64_t addr = trans.get_address();
        const std::uint64_t len = trans.get_data_length();
        const unsigned char* data = trans.get_data_ptr();
        const std::uint64_t esz = sizeof(accumulator_type);
        for (std::uint64_t off = 0; off < len; off += esz) {
            ++m_summary.writes;
            const auto el = m_c.element_at(addr + off);
            if (!el || off + esz > len) {
                ++m_summary.out_of_range_writes;
                error() << "write outside C at 0x" << std::hex << addr + off << std::dec << " ("
                        << std::min<std::uint64_t>(esz, len - off) << " bytes of a " << len
                        << "-byte write at 0x" << std::hex << addr << ")";
                continue;
            }
            if (!trans.is_response_ok()) {
                error() << "write to C(" << el->row << "," << el->col
                        << ") failed: " << trans.get_response_string();
                continue;
            }
            const std::uint64_t idx = el->row * m_c.cols + el->col;
            if (++m_write_count[idx] > 1) {
                ++m_summary.duplicates;
                error() << "C(" << el->row << "," << el->col << ") written " << m_write_count[idx]
                        << " times";
            }
            accumulator_type got;
            std::memcpy(&got, data + off, esz);
            ++m_summary.checked;
            if (std::memcmp(&got, &m_expected[idx], esz) != 0) {
                ++m_summary.mismatches;
                error() << "C(" << el->row << "," << el->col << ") expected " << +m_expected[idx] << ", got "
                        << +got;
            }
        }
    }

    // End of job: completion, edge count, missing elements, and the memory outside C, which must
    // equal `before` byte for byte (`before` is the image as it was when the job started).
    const scoreboard_summary& finish(const job_result& result, const expected_counts& counts,
                                     const std::uint8_t* memory, std::uint64_t memory_base,
                                     const std::vector<std::uint8_t>& before) {
        m_summary.completed = result.completed();
        if (!m_summary.completed) {
            error() << "job did not complete (" << to_string(result.status) << ")"
                    << (result.error.empty() ? "" : ": " + result.error);
        }
        if (m_summary.completed) {
            if (result.advance_edges != counts.advance_edges) {
                m_summary.edges_ok = false;
                error() << "advance edges: expected " << counts.advance_edges << " (" << counts.tiles
                        << " tiles x " << counts.advance_edges_per_tile << "), counted "
                        << result.advance_edges;
            }
            for (const auto& t : result.tiles) {
                if (t.advance_edges != counts.advance_edges_per_tile) {
                    m_summary.edges_ok = false;
                    error() << "tile " << t.where.index << ": " << t.advance_edges
                            << " advance edges, expected " << counts.advance_edges_per_tile;
                }
            }
            for (std::uint64_t idx = 0; idx < m_write_count.size(); ++idx) {
                if (m_write_count[idx] == 0) {
                    ++m_summary.missing;
                    error() << "C(" << idx / m_c.cols << "," << idx % m_c.cols << ") never written";
                }
            }
        }
        if (m_summary.checked == 0) error() << "nothing was checked";
        check_untouched(memory, memory_base, before);
        return m_summary;
    }

    const scoreboard_summary& summary() const { return m_summary; }

private:
    void check_untouched(const std::uint8_t* memory, std::uint64_t base,
                         const std::vector<std::uint8_t>& before) {
        for (std::uint64_t i = 0; i < before.size(); ++i) {
            if (memory[i] == before[i]) continue;
            const std::uint64_t addr = base + i;
            if (m_c.covers(addr)) continue;  // inside C: the value checks cover it
            m_summary.untouched_ok = false;
            error() << "memory outside C changed at 0x" << std::hex << addr << ": 0x" << +before[i]
                    << " -> 0x" << +memory[i];
            return;  // one is enough to fail; the first address says where
        }
    }

    // Appends one error line (the first max_errors are kept).
    struct line {
        std::ostringstream os;
        std::vector<std::string>* out;
        ~line() {
            if (out->size() < max_errors) out->push_back(os.str());
        }
        template <class T>
        line& operator<<(const T& v) {
            os << v;
            return *this;
        }
        line& operator<<(std::ios_base& (*manip)(std::ios_base&)) {
            os << manip;
            return *this;
        }
    };
    line error() { return line{{}, &m_summary.errors}; }

    matrix_layout m_c;
    std::vector<accumulator_type> m_expected;
    std::vector<std::uint32_t> m_write_count;
    scoreboard_summary m_summary;
};

}  // namespace systolic::tb
