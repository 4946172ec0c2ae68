// The fabric engine: R x C x D arrays (array_core, N x N each) that forward halos to their nearest
// neighbours and step together, one advance edge at a time (docs/fabric.md). To the controller it
// is one engine of (R*N) x (C*N) PEs: the feeder holds the fabric tile's A rows and B columns and
// feed tables, and the drain reads one block of accumulators. Inside:
//  - the arrays on the west face (c = 0) take A from the feeder, the others from the A link of their
//    west neighbour: the tokens that left its east column L edges earlier; likewise B from the north;
//  - K is cut into blocks of N terms; block b runs on the arrays at depth (start + b) mod D. When a PE
//    has summed its block, its accumulator crosses the C link to the same PE at the next depth,
//    which goes on from it (a pipelined reduction, never a collective); the depth is a ring, so the
//    sums of a chunk longer than D*N stay in the arrays;
//  - every link counts the valid tokens (or partial sums) it carries: real ones, and the padding
//    zeros of rows and columns outside C.
// Stepping: a link of L edges gives every array L edges of lookahead, so the arrays step groups of
// at most L edges each on its own thread (worker_pool) and meet after every group: the tokens a
// group consumes from a link were all produced in earlier groups, and a PE's partial sum, ready at
// edge X, is needed at edge X + L, which also lies in a later group. Results and counts do not
// depend on the number of threads.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "systolic/array_core.h"
#include "systolic/engine.h"
#include "systolic/fabric_geometry.h"
#include "systolic/worker_pool.h"

namespace systolic {

enum class link_kind { a, b, c };
inline const char* to_string(link_kind k) {
    return k == link_kind::a ? "a" : k == link_kind::b ? "b" : "c";
}

// One link between two arrays (indices into the fabric's arrays) and what it carried.
struct fabric_link {
    link_kind kind = link_kind::a;
    std::size_t from = 0, to = 0;
    std::uint64_t words = 0;  // real values: A and B tokens of real rows and columns, real partial sums
    std::uint64_t padding_words = 0;  // the valid zero tokens (and partial sums) of padding rows and columns
    std::uint64_t last_edge = ~std::uint64_t{0};  // the last edge (within its chunk) that carried a word
};

template <class Format>
class fabric_engine final : public engine<Format> {
public:
    using typename engine<Format>::accumulator_type;
    using operand_type = typename Format::operand_type;
    using core_type = array_core<Format>;

    fabric_engine(const fabric_geometry& g, unsigned threads = 1)
        : engine<Format>(g.tile_rows(), g.tile_cols()), m_geo(g), m_pool(std::max(1u, threads)) {
        const std::size_t n = g.n, R = g.shape.rows, C = g.shape.cols, D = g.shape.depth;
        if (R == 0 || C == 0 || D == 0)
            throw std::invalid_argument("fabric: every extent needs at least one array");
        if (g.link_latency == 0) throw std::invalid_argument("fabric: the link latency is at least one edge");
        m_span = 2 * g.link_latency;
        m_nodes.reserve(g.shape.arrays());
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t c = 0; c < C; ++c)
                for (std::size_t d = 0; d < D; ++d)
                    m_nodes.push_back(std::make_unique<node>(n, r, c, d));
        for (auto& p : m_nodes) {  // links in the order the report lists them: A, then B, then C
            node& x = *p;
            if (x.c + 1 < C)
                x.east = add_link(link_kind::a, index(x.r, x.c, x.d), index(x.r, x.c + 1, x.d), n);
        }
        for (auto& p : m_nodes) {
            node& x = *p;
            if (x.r + 1 < R)
                x.south = add_link(link_kind::b, index(x.r, x.c, x.d), index(x.r + 1, x.c, x.d), n);
        }
        if (D > 1) {
            for (auto& p : m_nodes) {
                node& x = *p;
                x.next_depth =
                    add_link(link_kind::c, index(x.r, x.c, x.d), index(x.r, x.c, (x.d + 1) % D), 0);
            }
        }
        for (auto& p : m_nodes) {
            node& x = *p;
            if (x.c > 0) x.west_in = m_nodes[index(x.r, x.c - 1, x.d)]->east;
            if (x.r > 0) x.north_in = m_nodes[index(x.r - 1, x.c, x.d)]->south;
        }
        m_out.assign(g.tile_rows() * g.tile_cols(), accumulator_type{});
        m_share.assign(D, 0);
        m_depth_active.assign(D, 0);
        clear();
    }

    const fabric_geometry& geometry() const { return m_geo; }
    unsigned threads() const { return m_pool.size(); }
    std::size_t arrays() const { return m_nodes.size(); }
    std::size_t index(std::size_t r, std::size_t c, std::size_t d) const {
        return (r * m_geo.shape.cols + c) * m_geo.shape.depth + d;
    }
    const core_type& core(std::size_t a) const { return m_nodes[a]->core; }
    // Array a's place (r, c, d).
    std::array<std::size_t, 3> position(std::size_t a) const {
        return {m_nodes[a]->r, m_nodes[a]->c, m_nodes[a]->d};
    }
    std::string array_name(std::size_t a) const {
        const node& x = *m_nodes[a];
        return "array_" + std::to_string(x.r) + "_" + std::to_string(x.c) + "_" + std::to_string(x.d);
    }
    // Every link and its counts since the engine was made.
    const std::vector<fabric_link>& links() const { return m_links; }
    // Passes since the engine was made: output tiles x K chunks x rounds of the depth ring.
    std::uint64_t passes() const { return m_passes; }

    engine_kind kind() const override { return engine_kind::cycle; }
    void set_overflow(overflow_mode mode) override {
        for (auto& x : m_nodes)
            x->core.set_overflow(mode);
    }
    void clear() override {
        for (auto& x : m_nodes) {
            x->core.clear();
            x->used = false;
        }
        std::fill(m_share.begin(), m_share.end(), 0);
        m_holder.reset();
        m_edges = 0;
    }
    void clear_accumulators() override {
        for (auto& x : m_nodes)
            x->core.clear_accumulators();
    }

    void advance(const feeder<Format>& in, const tile& t, std::uint64_t first, std::uint64_t count,
                 edge_callback* after) override {
        if (first == 0) begin_chunk(in, t);
        const std::uint64_t L = m_geo.link_latency, end = first + count;
        const std::function<void(unsigned)> task = [this](unsigned thread) {
            for (std::size_t i = thread; i < m_active.size(); i += m_pool.size())
                step(*m_active[i], m_group_first, m_group_count);
        };
        for (std::uint64_t e = first; e < end;) {
            m_group_first = e;
            m_group_count = after ? 1 : std::min(L, end - e);
            m_pool.run(task);
            hand_off_blocks(e, m_group_count);
            m_edges += m_group_count;
            if (after) after->after_edge(e);
            e += m_group_count;
        }
    }

    // The tile's sums: at each array position, the accumulators of the depth that summed the last block.
    const accumulator_type* accumulators() const override {
        const std::size_t n = m_geo.n, cols = m_geo.tile_cols();
        std::fill(m_out.begin(), m_out.end(), accumulator_type{});
        if (!m_holder) return m_out.data();
        for (std::size_t r = 0; r < m_geo.shape.rows; ++r)
            for (std::size_t c = 0; c < m_geo.shape.cols; ++c) {
                const core_type& k = m_nodes[index(r, c, *m_holder)]->core;
                for (std::size_t i = 0; i < n; ++i)
                    std::copy_n(k.accumulator_row(i), n, &m_out[(r * n + i) * cols + c * n]);
            }
        return m_out.data();
    }

    std::uint64_t edges() const override { return m_edges; }
    std::uint64_t macs() const override {
        std::uint64_t s = 0;
        for (const auto& x : m_nodes)
            s += x->core.macs();
        return s;
    }
    std::uint64_t macs_in(std::size_t rows, std::size_t cols) const override {
        return sum_over_block(
            rows, cols, [](const core_type& k, std::size_t r, std::size_t c) { return k.macs_in(r, c); });
    }
    std::uint64_t overflows_in(std::size_t rows, std::size_t cols) const override {
        return sum_over_block(rows, cols, [](const core_type& k, std::size_t r, std::size_t c) {
            return k.overflows_in(r, c);
        });
    }

    // Complete when the arrays' shares add up to `terms` and every PE of every array has consumed
    // its array's share (idle arrays: none).
    bool complete(std::uint64_t terms) const override { return stuck(terms).empty(); }
    std::vector<stuck_pe> stuck(std::uint64_t terms) const override {
        std::vector<stuck_pe> out;
        std::uint64_t total = 0;
        for (std::uint64_t s : m_share)
            total += s;
        const std::size_t n = m_geo.n;
        for (std::size_t a = 0; a < m_nodes.size(); ++a) {
            const node& x = *m_nodes[a];
            // Without the right total, every PE is off; name what each one did.
            const std::uint64_t want = total != terms ? ~std::uint64_t{0} : x.used ? m_share[x.d] : 0;
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < n; ++j)
                    if (x.core.consumed(i, j) != want)
                        out.push_back({x.r * n + i, x.c * n + j, x.core.consumed(i, j), a});
        }
        return out;
    }
    // The first array (array_0_0_0); observers of the whole fabric reach the others through core().
    const core_type* array() const override { return &m_nodes.front()->core; }
    std::uint64_t advance_edges(const tile& t, std::uint64_t kc) const override {
        return m_geo.advance_edges(t.rows, t.cols, kc);
    }

private:
    // A link's tokens in flight: 2L slots of N values and valid bits, slot e mod 2L written after edge e.
    struct token_ring {
        std::vector<operand_type> value;
        std::vector<std::uint8_t> ok;
    };

    struct node {
        node(std::size_t n, std::size_t r_, std::size_t c_, std::size_t d_)
            : core(n), r(r_), c(c_), d(d_), west(n), north(n), west_ok(n), north_ok(n) {}
        core_type core;
        std::size_t r, c, d;
        std::vector<operand_type> west, north;  // the feeder's tokens (on the west and north faces)
        std::vector<std::uint8_t> west_ok, north_ok;
        int west_in = -1, north_in = -1;  // incoming links (index into m_links), -1 on a face
        int east = -1, south = -1;        // outgoing A and B links
        int next_depth = -1;              // outgoing C link
        bool used = false;                // stepped since the last clear
    };

    int add_link(link_kind kind, std::size_t from, std::size_t to, std::size_t width) {
        m_links.push_back(fabric_link{kind, from, to});
        const std::size_t slots = m_span * width;
        m_rings.push_back(token_ring{std::vector<operand_type>(slots), std::vector<std::uint8_t>(slots)});
        return int(m_links.size() - 1);
    }

    void begin_chunk(const feeder<Format>& in, const tile& t) {
        const std::size_t D = m_geo.shape.depth;
        m_in = &in;
        m_tile = t;
        m_kc = in.chunk_length();
        m_blocks = m_geo.blocks(m_kc);
        m_ra = m_geo.active_rows(t.rows);
        m_ca = m_geo.active_cols(t.cols);
        // A chunk that goes on from an earlier one starts on the depth after the one holding the sums,
        // which hands them over first (D > 1).
        m_start = m_holder ? (*m_holder + (D > 1 ? 1 : 0)) % D : 0;
        if (m_holder && D > 1 && m_blocks > 0) {
            for (std::size_t r = 0; r < m_ra; ++r)
                for (std::size_t c = 0; c < m_ca; ++c)
                    for (std::size_t q = 0; q + 1 < 2 * m_geo.n; ++q)
                        hand_off_diagonal(*m_nodes[index(r, c, *m_holder)], q, 0);
        }
        std::fill(m_depth_active.begin(), m_depth_active.end(), 0);
        for (std::uint64_t b = 0; b < m_blocks; ++b) {
            const std::size_t d = depth_of(b);
            m_depth_active[d] = 1;
            m_share[d] += block_terms(b);
        }
        m_active.clear();
        for (auto& p : m_nodes) {
            if (p->r < m_ra && p->c < m_ca && m_depth_active[p->d]) {
                p->used = true;
                m_active.push_back(p.get());
            }
        }
        for (auto& link : m_links)
            link.last_edge = ~std::uint64_t{0};
        for (auto& ring : m_rings) {  // every link starts empty: bubbles
            std::fill(ring.value.begin(), ring.value.end(), operand_type{});
            std::fill(ring.ok.begin(), ring.ok.end(), 0);
        }
        if (m_blocks > 0) m_holder = depth_of(m_blocks - 1);
        m_passes += m_geo.passes(m_kc);
    }

    std::size_t depth_of(std::uint64_t block) const {
        return std::size_t((m_start + block) % m_geo.shape.depth);
    }
    std::uint64_t block_terms(std::uint64_t b) const {
        return std::min<std::uint64_t>(m_geo.n, m_kc - b * m_geo.n);
    }

    // Term k of the K range that a face stream with extra delay `delay` carries into an array at
    // depth d on edge e, or nothing (a bubble).
    bool term_at(std::uint64_t e, std::uint64_t delay, std::size_t d, std::uint64_t& k) const {
        const std::uint64_t t = e - delay;  // wraps to a huge value before the stream starts
        if (m_geo.shape.depth == 1) {       // one depth: the blocks follow each other without a gap
            k = t;
            return t < m_kc;
        }
        const std::uint64_t stride = m_geo.block_stride(), b = t / stride, kk = t - b * stride;
        k = b * m_geo.n + kk;
        return b < m_blocks && kk < m_geo.n && k < m_kc && depth_of(b) == d;
    }

    // The inputs of one edge of array x: from the feeder on the fabric's faces, else from the link.
    void step(node& x, std::uint64_t first, std::uint64_t count) {
        const std::size_t n = m_geo.n;
        const std::uint64_t L = m_geo.link_latency;
        const feed_tables& ft = m_in->tables();
        const std::uint64_t kc = m_kc;
        const std::size_t bcols = m_geo.tile_cols();
        for (std::uint64_t e = first; e < first + count; ++e) {
            const operand_type *west, *north;
            const std::uint8_t *west_ok, *north_ok;
            const std::size_t in_slot = std::size_t((e + L) % m_span) * n;  // written after edge e - L
            if (x.west_in < 0) {  // row gi = r*N + i of the feeder's A, term k at gi * kc + k
                feed_face(e, x.r, x.d, ft.row_delay, ft.row_valid, m_in->a(), kc, 1, x.west.data(),
                          x.west_ok.data());
                west = x.west.data();
                west_ok = x.west_ok.data();
            } else {
                west = &m_rings[x.west_in].value[in_slot];
                west_ok = &m_rings[x.west_in].ok[in_slot];
            }
            if (x.north_in < 0) {  // column gj = c*N + j of the feeder's B, term k at k * cols + gj
                feed_face(e, x.c, x.d, ft.col_delay, ft.col_valid, m_in->b(), 1, bcols, x.north.data(),
                          x.north_ok.data());
                north = x.north.data();
                north_ok = x.north_ok.data();
            } else {
                north = &m_rings[x.north_in].value[in_slot];
                north_ok = &m_rings[x.north_in].ok[in_slot];
            }
            x.core.advance(west, west_ok, north, north_ok);
            const std::size_t out_slot = std::size_t(e % m_span) * n;
            if (x.east >= 0 && x.c + 1 < m_ca) {  // the east column leaves; only into an active array
                token_ring& ring = m_rings[std::size_t(x.east)];
                x.core.east_column(&ring.value[out_slot], &ring.ok[out_slot]);
                tally(m_links[std::size_t(x.east)], &ring.ok[out_slot], real_part(m_tile.rows, x.r), e);
            }
            if (x.south >= 0 && x.r + 1 < m_ra) {
                token_ring& ring = m_rings[std::size_t(x.south)];
                std::copy_n(x.core.south_row(), n, &ring.value[out_slot]);
                std::copy_n(x.core.south_row_valid(), n, &ring.ok[out_slot]);
                tally(m_links[std::size_t(x.south)], &ring.ok[out_slot], real_part(m_tile.cols, x.c), e);
            }
        }
    }

    // Of the N rows (or columns) of the array at position `at` along an axis, those inside the
    // tile's `real` ones.
    std::size_t real_part(std::uint64_t real, std::size_t at) const {
        const std::uint64_t first = std::uint64_t(at) * m_geo.n;
        return std::size_t(std::min<std::uint64_t>(m_geo.n, real - std::min(real, first)));
    }

    // The N tokens a face stream puts into the array at position `at` along its axis (r for A, c
    // for B) and depth d on edge e: lane l is the feeder's stream g = at*N + l, whose term k lies at
    // data[g * lane_stride + k * term_stride]. Each stream starts after its feed table delay plus the
    // links it crosses on the way (at (L - 1)).
    void feed_face(std::uint64_t e, std::size_t at, std::size_t d, const std::vector<std::uint64_t>& delay,
                   const std::vector<std::uint8_t>& valid, const operand_type* data,
                   std::uint64_t lane_stride, std::uint64_t term_stride, operand_type* out,
                   std::uint8_t* ok) const {
        const std::size_t n = m_geo.n;
        for (std::size_t l = 0; l < n; ++l) {
            const std::size_t g = at * n + l;
            std::uint64_t k = 0;
            const bool in = term_at(e, at * m_geo.link_extra() + delay[g], d, k);
            out[l] = in ? data[g * lane_stride + k * term_stride] : operand_type{};
            ok[l] = in & valid[g];
        }
    }

    // Counts the tokens an edge put on a link: the valid ones of the first `real` lanes are real
    // words, the valid ones of the others padding zeros.
    void tally(fabric_link& link, const std::uint8_t* ok, std::size_t real, std::uint64_t e) {
        std::uint64_t words = 0, padding = 0;
        for (std::size_t i = 0; i < real; ++i)
            words += ok[i];
        for (std::size_t i = real; i < m_geo.n; ++i)
            padding += ok[i];
        link.words += words;
        link.padding_words += padding;
        if (words + padding) link.last_edge = e;
    }

    // After the edges [first, first + count): every PE that summed the last term of a block in them
    // hands its sum to the same PE at the next depth (D > 1). PE(i, j) of array (r, c) sums the last
    // term of block b at edge b * stride + (r + c)(L - 1) + (r + c) N + N - 1 + i + j (every block
    // but the last has N terms), so the PEs of one edge form an anti-diagonal i + j = q.
    void hand_off_blocks(std::uint64_t first, std::uint64_t count) {
        if (m_geo.shape.depth == 1 || m_blocks < 2) return;
        const std::int64_t n = std::int64_t(m_geo.n), stride = std::int64_t(m_geo.block_stride());
        const std::int64_t lo = std::int64_t(first), hi = std::int64_t(first + count);  // edges [lo, hi)
        for (std::size_t r = 0; r < m_ra; ++r) {
            for (std::size_t c = 0; c < m_ca; ++c) {
                const std::int64_t off = std::int64_t((r + c) * (m_geo.link_extra() + m_geo.n)) + n - 1;
                // Blocks whose anti-diagonals [off + b*stride, off + b*stride + 2N - 2] meet [lo, hi).
                const std::int64_t b_lo =
                    std::max<std::int64_t>(0, (lo - off - (2 * n - 2) + stride - 1) / stride);
                for (std::int64_t b = b_lo; b + 1 < std::int64_t(m_blocks); ++b) {
                    const std::int64_t base = off + b * stride;
                    if (base >= hi) break;
                    node& from = *m_nodes[index(r, c, depth_of(std::uint64_t(b)))];
                    for (std::int64_t q = std::max<std::int64_t>(0, lo - base);
                         q < std::min(hi - base, 2 * n - 1); ++q)
                        hand_off_diagonal(from, std::size_t(q), first);
                }
            }
        }
    }

    // The PEs on anti-diagonal q of array `from` hand their sums over its C link.
    void hand_off_diagonal(node& from, std::size_t q, std::uint64_t edge) {
        const std::size_t n = m_geo.n;
        fabric_link& link = m_links[std::size_t(from.next_depth)];
        core_type& to = m_nodes[link.to]->core;
        std::uint64_t words = 0, padding = 0;
        for (std::size_t i = q < n ? 0 : q - n + 1; i <= std::min(q, n - 1); ++i) {
            const std::size_t j = q - i;
            to.load_accumulator(i, j, from.core.accumulator(i, j));
            const bool real = from.r * n + i < m_tile.rows && from.c * n + j < m_tile.cols;
            ++(real ? words : padding);
        }
        link.words += words;
        link.padding_words += padding;
        link.last_edge = edge;
    }

    template <class F>
    std::uint64_t sum_over_block(std::size_t rows, std::size_t cols, F f) const {
        const std::size_t n = m_geo.n;
        std::uint64_t s = 0;
        for (const auto& x : m_nodes) {
            const std::size_t r = std::min(n, rows - std::min(rows, x->r * n));
            const std::size_t c = std::min(n, cols - std::min(cols, x->c * n));
            if (r && c) s += f(x->core, r, c);
        }
        return s;
    }

    fabric_geometry m_geo;
    worker_pool m_pool;
    std::size_t m_span = 2;                      // 2L link slots
    std::vector<std::unique_ptr<node>> m_nodes;  // index(r, c, d)
    std::vector<fabric_link> m_links;
    std::vector<token_ring> m_rings;  // parallel to m_links (C links have none)
    mutable std::vector<accumulator_type> m_out;
    std::vector<std::uint64_t> m_share;  // terms each depth sums per PE since the last clear
    std::vector<std::uint8_t> m_depth_active;
    std::vector<node*> m_active;          // the arrays this chunk steps
    std::optional<std::size_t> m_holder;  // the depth that summed the last block since the last clear
    std::uint64_t m_edges = 0;
    std::uint64_t m_passes = 0;
    // The chunk being stepped.
    const feeder<Format>* m_in = nullptr;
    tile m_tile;
    std::uint64_t m_kc = 0, m_blocks = 0;
    std::size_t m_start = 0, m_ra = 0, m_ca = 0;
    std::uint64_t m_group_first = 0, m_group_count = 0;
};

}  // namespace systolic
