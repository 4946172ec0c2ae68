#include "systolic/verify/scoreboard.h"

#include <algorithm>
#include <cstring>
#include <sstream>

namespace systolic::verify {

namespace {

std::string hex(std::uint64_t v) {
    std::ostringstream os;
    os << "0x" << std::hex << v;
    return os.str();
}

std::string where(std::uint64_t r, std::uint64_t c) {
    return "C(" + std::to_string(r) + "," + std::to_string(c) + ")";
}

}  // namespace

void scoreboard::expect(const matrix_layout& c, std::vector<std::uint8_t> expected, value_printer print,
                        std::optional<matrix_layout> partial) {
    std::promise<std::vector<std::uint8_t>> ready;
    ready.set_value(std::move(expected));
    expect(c, ready.get_future().share(), std::move(print), partial);
}

void scoreboard::expect(const matrix_layout& c, std::shared_future<std::vector<std::uint8_t>> expected,
                        value_printer print, std::optional<matrix_layout> partial) {
    m_c = c;
    m_expected = std::move(expected);
    m_first.assign(c.rows * c.cols * c.elem_size, 0);
    m_later.clear();
    m_print = std::move(print);
    m_partial = partial;
    m_write_count.assign(c.rows * c.cols, 0);
    m_summary = scoreboard_summary{};
    m_active = true;
}

void scoreboard::error(const std::string& line) {
    if (m_summary.errors.size() < max_errors) m_summary.errors.push_back(line);
}

void scoreboard::protocol_violation(const std::string& line) {
    ++m_summary.protocol_violations;
    error("protocol: " + line);
}

void scoreboard::observe_write(const tlm::tlm_generic_payload& trans) {
    if (!m_active) return;  // traffic outside a checked job (expect() ... finish())
    const std::uint64_t addr = trans.get_address();
    const std::uint64_t len = trans.get_data_length();
    const unsigned char* data = trans.get_data_ptr();

    // A write wholly on elements of the partial-sum buffer is the job's own scratch traffic.
    auto on_partial_elements = [&] {
        if (!m_partial || len == 0 || len % m_partial->elem_size != 0) return false;
        for (std::uint64_t off = 0; off < len; off += m_partial->elem_size)
            if (!m_partial->element_at(addr + off)) return false;
        return true;
    };
    if (on_partial_elements()) {
        m_summary.partial_writes += len / m_partial->elem_size;
        return;
    }
    const std::uint64_t esz = m_c.elem_size;
    // The usual write, a run of whole elements inside one row of C that the memory accepted: its
    // elements follow one another, so only the first is looked up, and when none was written
    // before, the run's values are kept in one copy.
    if (const auto first = m_c.element_at(addr);
        first && trans.is_response_ok() && len % esz == 0 && first->col + len / esz <= m_c.cols) {
        const std::uint64_t idx = first->row * m_c.cols + first->col, n = len / esz;
        m_summary.writes += n;
        const auto counts = m_write_count.begin() + static_cast<std::ptrdiff_t>(idx);
        if (std::all_of(counts, counts + static_cast<std::ptrdiff_t>(n),
                        [](std::uint32_t c) { return c == 0; })) {
            std::fill_n(counts, n, 1u);
            std::memcpy(&m_first[idx * esz], data, len);
            m_summary.checked += n;
        } else {
            for (std::uint64_t i = 0; i < n; ++i)
                record(idx + i, data + i * esz);
        }
        return;
    }
    for (std::uint64_t off = 0; off < len; off += esz) {
        ++m_summary.writes;
        const auto el = m_c.element_at(addr + off);
        if (!el || off + esz > len) {
            ++m_summary.out_of_range_writes;
            error("write outside C at " + hex(addr + off) + " (" + std::to_string(std::min(esz, len - off)) +
                  " bytes of a " + std::to_string(len) + "-byte write at " + hex(addr) + ")");
            continue;
        }
        if (!trans.is_response_ok()) {
            error("write to " + where(el->row, el->col) + " failed: " + trans.get_response_string());
            continue;
        }
        record(el->row * m_c.cols + el->col, data + off);
    }
}

// One accepted write of element idx (the caller has counted it): kept for finish() if it is the
// first, else counted as a duplicate and kept too, so that its value is compared as well.
void scoreboard::record(std::uint64_t idx, const unsigned char* value) {
    const std::uint64_t esz = m_c.elem_size;
    if (++m_write_count[idx] > 1) {
        ++m_summary.duplicates;
        error(where(idx / m_c.cols, idx % m_c.cols) + " written " + std::to_string(m_write_count[idx]) +
              " times");
        later_write w{idx, 0};
        std::memcpy(&w.bytes, value, std::min<std::uint64_t>(esz, sizeof w.bytes));
        m_later.push_back(w);
    } else {
        std::memcpy(&m_first[idx * esz], value, esz);
    }
    ++m_summary.checked;  // compared in finish(), once the reference is there
}

void scoreboard::compare(const std::vector<std::uint8_t>& expected, std::uint64_t idx,
                         const std::uint8_t* got) {
    const std::uint64_t esz = m_c.elem_size;
    const std::uint8_t* want = &expected[idx * esz];
    if (std::memcmp(got, want, esz) != 0) {
        ++m_summary.mismatches;
        error(where(idx / m_c.cols, idx % m_c.cols) + " expected " + m_print(want) + ", got " + m_print(got));
    }
}

const scoreboard_summary& scoreboard::finish(const job_result& result, const expected_counts& counts,
                                             const std::uint8_t* memory, std::uint64_t memory_base,
                                             const std::vector<std::uint8_t>& before,
                                             const tile_edge_rule& tile_edges) {
    return finish(result, counts, {{memory_base, before.size(), before.data(), memory}}, tile_edges);
}

const scoreboard_summary& scoreboard::finish(const job_result& result, const expected_counts& counts,
                                             const std::vector<memory_window>& memory,
                                             const tile_edge_rule& tile_edges) {
    // Every element write against the reference: the first write of each element, then the rest.
    // Runs of written elements are compared as one block, element by element only where one differs.
    const std::vector<std::uint8_t>& expected = m_expected.get();
    const std::uint64_t esz = m_c.elem_size, elements = m_write_count.size();
    for (std::uint64_t idx = 0; idx < elements;) {
        std::uint64_t end = idx;
        while (end < elements && m_write_count[end] > 0)
            ++end;
        if (end > idx && std::memcmp(&m_first[idx * esz], &expected[idx * esz], (end - idx) * esz) != 0)
            for (std::uint64_t i = idx; i < end; ++i)
                compare(expected, i, &m_first[i * esz]);
        idx = end + 1;  // past the run and the unwritten element that ended it
    }
    for (const auto& w : m_later)
        compare(expected, w.idx, reinterpret_cast<const std::uint8_t*>(&w.bytes));
    m_summary.completed = result.completed();
    if (!m_summary.completed) {
        error(std::string("job did not complete (") + to_string(result.status) + ")" +
              (result.error.empty() ? "" : ": " + result.error));
    } else {
        if (result.advance_edges != counts.advance_edges) {
            m_summary.edges_ok = false;
            error("advance edges: expected " + std::to_string(counts.advance_edges) +
                  (tile_edges ? std::string()
                              : " (" + std::to_string(counts.tiles) + " tiles x " +
                                    std::to_string(counts.advance_edges_per_tile) + ")") +
                  ", counted " + std::to_string(result.advance_edges));
        }
        if (result.preload_edges != counts.preload_edges) {
            m_summary.edges_ok = false;
            error("preload edges: expected " + std::to_string(counts.preload_edges) + " (" +
                  std::to_string(counts.tiles) + " tiles x " + std::to_string(counts.preload_edges_per_tile) +
                  "), counted " + std::to_string(result.preload_edges));
        }
        const auto count_macs = [&](const char* what, std::uint64_t expected, std::uint64_t counted) {
            if (counted == expected) return;
            m_summary.macs_ok = false;
            error(std::string(what) + ": expected " + std::to_string(expected) + ", counted " +
                  std::to_string(counted));
        };
        count_macs("MACs with padding", counts.macs_padded, result.macs_padded);
        count_macs("real MACs", counts.macs_real, result.macs_real);
        // The energy account's PE actions: exactly one per PE and edge, the valid MACs split by
        // whether an operand was zero, the random ones as many as the operands' nonzero products.
        if (counts.macs_random) {
            const pe_action_counts& pe = result.actions.pe;
            count_macs("MACs of two nonzero operands (mac_random)", *counts.macs_random, pe.mac_random);
            count_macs("valid MACs (mac_random + mac_gated)", result.macs_padded,
                       pe.mac_random + pe.mac_gated);
            count_macs("PE actions (R x C x depth x edges)",
                       result.actions.rows * result.actions.cols * result.actions.depth *
                           (result.advance_edges + result.preload_edges),
                       pe.total());
        }
        for (const auto& t : result.tiles) {
            const std::uint64_t want = tile_edges ? tile_edges(t.where) : counts.advance_edges_per_tile;
            if (t.advance_edges != want) {
                m_summary.edges_ok = false;
                error("tile " + std::to_string(t.where.index) + ": " + std::to_string(t.advance_edges) +
                      " advance edges, expected " + std::to_string(want));
            }
        }
        for (std::uint64_t idx = 0; idx < m_write_count.size(); ++idx) {
            if (m_write_count[idx] == 0) {
                ++m_summary.missing;
                error(where(idx / m_c.cols, idx % m_c.cols) + " never written");
            }
        }
    }
    if (m_summary.checked == 0) error("nothing was checked");
    for (const auto& w : memory)
        if (!check_untouched(w)) break;  // one changed byte is enough to fail; the first says where
    check_c_in_memory(memory);
    m_active = false;
    return m_summary;
}

bool scoreboard::check_untouched(const memory_window& w) {
    // The bytes that may change are the elements of C and of the partial-sum buffer, row by row:
    // compare everything between them in large pieces and look at single bytes only where a piece
    // differs.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> allowed;  // [start, end) offsets, sorted below
    for (const matrix_layout* l : {&m_c, m_partial ? &*m_partial : nullptr}) {
        if (!l) continue;
        for (std::uint64_t r = 0; r < l->rows; ++r) {
            const std::uint64_t a = l->address(r, 0), end = a + l->row_bytes();
            if (end <= w.base || (a >= w.base && a - w.base >= w.size)) continue;  // not in this window
            allowed.emplace_back(a < w.base ? 0 : a - w.base, end - w.base);
        }
    }
    std::sort(allowed.begin(), allowed.end());
    auto check_range = [&](std::uint64_t from, std::uint64_t to) {
        to = std::min(to, w.size);
        if (from >= to || std::memcmp(w.now + from, w.before + from, to - from) == 0) return true;
        for (std::uint64_t i = from; i < to; ++i) {
            if (w.now[i] == w.before[i]) continue;
            m_summary.untouched_ok = false;
            std::ostringstream os;
            os << "memory outside C changed at " << hex(w.base + i) << ": 0x" << std::hex << +w.before[i]
               << " -> 0x" << +w.now[i];
            error(os.str());
            return false;
        }
        return true;
    };
    std::uint64_t at = 0;
    for (const auto& [from, to] : allowed) {
        if (!check_range(at, from)) return false;
        at = std::max(at, to);
    }
    return check_range(at, w.size);
}

// An element of C written once holds that value at the end, unless something besides the DUT's
// monitored writes changed it (another initiator, or a write that bypassed the monitor).
void scoreboard::check_c_in_memory(const std::vector<memory_window>& memory) {
    const std::uint64_t esz = m_c.elem_size;
    for (std::uint64_t r = 0; r < m_c.rows; ++r) {
        const std::uint64_t a = m_c.address(r, 0);
        const auto in = std::find_if(memory.begin(), memory.end(), [&](const memory_window& w) {
            return a >= w.base && a - w.base <= w.size && m_c.row_bytes() <= w.size - (a - w.base);
        });
        if (in == memory.end()) continue;  // outside every window: nothing to compare with
        const std::uint8_t* row = in->now + (a - in->base);
        for (std::uint64_t col = 0; col < m_c.cols; ++col) {
            const std::uint64_t idx = r * m_c.cols + col;
            if (m_write_count[idx] != 1 || std::memcmp(row + col * esz, &m_first[idx * esz], esz) == 0)
                continue;
            ++m_summary.overwritten;
            error(where(r, col) + " holds " + m_print(row + col * esz) + " in memory, but " +
                  m_print(&m_first[idx * esz]) + " was written");
        }
    }
}

}  // namespace systolic::verify
