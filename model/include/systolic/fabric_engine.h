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
// A job that counts its actions (engine::count_actions) has every array count its own edges' actions
// and toggles as it steps (its own edge_tally: arrays step on different threads), summed after each
// run of edges; an array that a chunk does not use idles through it. A partial sum that arrives
// over a C link replaces the accumulator's value in the same edge as that PE's MAC, so the register
// toggles once, from its old value to the new sum, as the VCD shows it.
// Stepping: a link of L edges gives every array L edges of lookahead. What an array consumes on
// edge e from a link left its neighbour on edge e - L (tokens in a ring of 2L slots; a PE's partial
// sum, ready at edge X, waits in the link's mailbox until edge X + L). So an array may step edge e
// once every neighbour it shares a link with, either way, has stepped edge e - L: its inputs are
// there and the slot it writes has been read. Each thread (worker_pool) steps its own arrays as far
// as that allows, with no barrier: conservative parallel simulation, nothing rolled back. Results
// and counts do not depend on the number of threads. With an edge observer all arrays meet after
// every edge instead, so that the observer sees them in step.
#pragma once

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "systolic/array_core.h"
#include "systolic/engine.h"
#include "systolic/fabric_geometry.h"
#include "systolic/format_instances.h"
#include "systolic/names.h"
#include "systolic/worker_pool.h"

namespace systolic {

enum class link_kind { a, b, c };
inline constexpr enum_name<link_kind> link_kind_names[] = {
    {link_kind::a, "a", "A tokens, passed east"},
    {link_kind::b, "b", "B tokens, passed south"},
    {link_kind::c, "c", "partial sums, passed along K"},
};
static_assert(names_in_order(link_kind_names));
constexpr const char* to_string(link_kind k) {
    return name_of(link_kind_names, k);
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

    // What an engine of geometry g allocates, from its structures' sizes: per array its node and
    // array_core, per A and B link its ring of 2L slots (the memory estimate counts with it).
    static std::uint64_t heap_bytes(const fabric_geometry& g) {
        const std::uint64_t n = g.n, arrays = g.shape.arrays();
        const std::uint64_t per_array = heap_block_bytes(sizeof(node)) + core_type::heap_bytes(n, n) +
                                        2 * heap_block_bytes(n * sizeof(operand_type)) +
                                        2 * heap_block_bytes(n) + heap_block_bytes(6 * sizeof(node*)) +
                                        heap_block_bytes(n * n * sizeof(accumulator_type)) + sizeof(node*);
        const std::uint64_t ab_links = g.shape.rows * (g.shape.cols - 1) * g.shape.depth +
                                       (g.shape.rows - 1) * g.shape.cols * g.shape.depth,
                            links = ab_links + (g.shape.depth > 1 ? arrays : 0);
        const std::uint64_t slots = 2 * g.link_latency * n;
        const std::uint64_t ring = heap_block_bytes(slots * sizeof(operand_type)) + heap_block_bytes(slots);
        return arrays * per_array + links * (sizeof(fabric_link) + sizeof(token_ring)) + ab_links * ring +
               heap_block_bytes(g.tile_rows() * g.tile_cols() * sizeof(accumulator_type));
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
        if (this->m_counter) {
            std::vector<const core_type*> cores;
            for (const auto& x : m_nodes)
                cores.push_back(&x->core);
            this->m_counter->clear_registers(cores);
        }
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
        const std::uint64_t end = first + count;
        if (after) {  // every array steps edge e, then the observer sees them all
            for (std::uint64_t e = first; e < end; ++e) {
                m_pool.run([this, e](unsigned thread) {
                    for (std::size_t i = thread; i < m_active.size(); i += m_pool.size())
                        step_edge(*m_active[i], e);
                });
                after->after_edge(e);
            }
        } else {
            m_pool.run([this, end](unsigned thread) { run_arrays(thread, end); });
        }
        m_edges += count;
        if (this->m_counter) sum_tallies(count);
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

    // Besides the PEs' counts: the words the links carried (real ones and padding zeros: each is a
    // transfer) since counting began, and the fabric's depth (its arrays along K are PEs too).
    void report_actions(action_counts& out) const override {
        engine<Format>::report_actions(out);
        out.link_words = link_words() - m_link_words_before;
        out.depth = m_geo.shape.depth;
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

    // A partial sum that replaced an accumulator this edge, before the MAC pass counted its toggles
    // from the new value.
    struct loaded_sum {
        std::size_t pe;
        accumulator_type before, loaded;
    };

    struct node {
        node(std::size_t n, std::size_t r_, std::size_t c_, std::size_t d_)
            : core(n), r(r_), c(c_), d(d_), west(n), north(n), west_ok(n), north_ok(n), mailbox(n * n) {}
        core_type core;
        std::size_t r, c, d;
        std::vector<operand_type> west, north;  // the feeder's tokens (on the west and north faces)
        std::vector<std::uint8_t> west_ok, north_ok;
        int west_in = -1, north_in = -1;        // incoming links (index into m_links), -1 on a face
        int east = -1, south = -1;              // outgoing A and B links
        int next_depth = -1;                    // outgoing C link
        bool used = false;                      // stepped since the last clear
        std::atomic<std::uint64_t> done{0};     // edges of the current chunk stepped
        std::vector<node*> neighbours;          // the active arrays it shares a link with, this chunk
        std::vector<accumulator_type> mailbox;  // its C link's partial sums, one per PE
        edge_tally tally;                       // what it did, counting, since the last sum_tallies
        std::vector<loaded_sum> loaded;         // counting: sums loaded since its last edge
    };

    void counter_changed() override {
        for (auto& x : m_nodes) {
            x->tally = {};
            x->core.tally_into(this->m_counter ? &x->tally : nullptr);
        }
        m_link_words_before = link_words();
    }

    std::uint64_t link_words() const {
        std::uint64_t words = 0;
        for (const auto& link : m_links)
            words += link.words + link.padding_words;
        return words;
    }

    // After a run of `count` edges: the arrays' counts into the counter's, and every PE of the
    // fabric, stepped or not, in its edges (the counter's R x C PEs are one depth's).
    void sum_tallies(std::uint64_t count) {
        edge_tally& sum = *this->m_counter->stepped();
        for (auto& x : m_nodes) {
            const edge_tally& t = x->tally;
            sum.valid += t.valid;
            sum.random += t.random;
            sum.row_toggles += t.row_toggles;
            sum.col_toggles += t.col_toggles;
            sum.sum_toggles += t.sum_toggles;
            x->tally = {};
        }
        sum.mac_edges += count * m_geo.shape.depth;
    }

    // PE p of x goes on from a partial sum v that crossed a C link.
    void load_sum(node& x, std::size_t p, accumulator_type v) {
        const std::size_t n = m_geo.n;
        if (this->m_counter) x.loaded.push_back({p, x.core.accumulator(p / n, p % n), v});
        x.core.load_accumulator(p / n, p % n, v);
    }
    // After x's edge: the loaded accumulators toggled from their old values to what they hold now,
    // not from the loaded ones (which the MAC pass counted from).
    void count_loaded(node& x) {
        const std::size_t n = m_geo.n;
        for (const loaded_sum& l : x.loaded) {
            const accumulator_type now = x.core.accumulator(l.pe / n, l.pe % n);
            x.tally.sum_toggles += toggles_between(l.before, now);
            x.tally.sum_toggles -= toggles_between(l.loaded, now);
        }
        x.loaded.clear();
    }

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
                    hand_off_all(*m_nodes[index(r, c, *m_holder)]);
        }
        std::fill(m_depth_active.begin(), m_depth_active.end(), 0);
        for (std::uint64_t b = 0; b < m_blocks; ++b) {
            const std::size_t d = depth_of(b);
            m_depth_active[d] = 1;
            m_share[d] += block_terms(b);
        }
        m_active.clear();
        for (auto& p : m_nodes) {
            p->done.store(0, std::memory_order_relaxed);
            if (active(*p)) {
                p->used = true;
                m_active.push_back(p.get());
            }
        }
        for (node* x : m_active) {
            x->neighbours.clear();
            auto add = [&](std::size_t r, std::size_t c, std::size_t d) {
                node* y = m_nodes[index(r, c, d)].get();
                if (active(*y) && y != x) x->neighbours.push_back(y);
            };
            if (x->c > 0) add(x->r, x->c - 1, x->d);
            if (x->c + 1 < m_geo.shape.cols) add(x->r, x->c + 1, x->d);
            if (x->r > 0) add(x->r - 1, x->c, x->d);
            if (x->r + 1 < m_geo.shape.rows) add(x->r + 1, x->c, x->d);
            if (D > 1) {
                add(x->r, x->c, (x->d + 1) % D);
                add(x->r, x->c, (x->d + D - 1) % D);
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

    bool active(const node& x) const { return x.r < m_ra && x.c < m_ca && m_depth_active[x.d]; }

    std::size_t depth_of(std::uint64_t block) const {
        return std::size_t((m_start + block) % m_geo.shape.depth);
    }
    std::uint64_t block_terms(std::uint64_t b) const {
        return std::min<std::uint64_t>(m_geo.n, m_kc - b * m_geo.n);
    }

    // Term k of the K range that a face stream with extra delay `delay` carries into an array at
    // depth d on edge e, or nothing (a bubble).
    bool term_at(std::uint64_t e, std::uint64_t delay, std::size_t d, std::uint64_t& k) const {
        const std::uint64_t t = skewed_term(e, delay);  // huge before the stream starts
        if (m_geo.shape.depth == 1) {  // one depth: the blocks follow each other without a gap
            k = t;
            return t < m_kc;
        }
        const std::uint64_t stride = m_geo.block_stride(), b = t / stride, kk = t - b * stride;
        k = b * m_geo.n + kk;
        return b < m_blocks && kk < m_geo.n && k < m_kc && depth_of(b) == d;
    }

    // One thread's share of a run of edges up to `end`: its arrays, each stepped as far as its
    // neighbours allow (see the header comment), until all of them are there.
    void run_arrays(unsigned thread, std::uint64_t end) {
        const std::uint64_t L = m_geo.link_latency;
        for (unsigned idle = 0;;) {
            bool finished = true, moved = false;
            for (std::size_t i = thread; i < m_active.size(); i += m_pool.size()) {
                node& x = *m_active[i];
                std::uint64_t e = x.done.load(std::memory_order_relaxed);
                while (e < end && std::all_of(x.neighbours.begin(), x.neighbours.end(), [&](const node* y) {
                           return y->done.load(std::memory_order_acquire) + L > e;
                       })) {
                    step_edge(x, e++);
                    moved = true;
                }
                finished = finished && e == end;
            }
            if (finished) return;
            if (moved)
                idle = 0;
            else
                worker_pool::wait_a_little(idle++);
        }
    }

    // Edge e of array x: the partial sums due from the previous depth, the inputs (from the feeder
    // on the fabric's faces, else from the links), the step, the tokens and sums it hands on.
    void step_edge(node& x, std::uint64_t e) {
        if (m_geo.shape.depth > 1) receive_blocks(x, e);
        step(x, e, 1);
        if (!x.loaded.empty()) count_loaded(x);
        if (m_geo.shape.depth > 1) send_blocks(x, e);
        x.done.store(e + 1, std::memory_order_release);
    }

    void step(node& x, std::uint64_t first, std::uint64_t count) {
        const std::size_t n = m_geo.n;
        const std::uint64_t L = m_geo.link_latency;
        const feed_tables& ft = m_in->tables();
        const std::uint64_t kc = m_kc;
        const std::size_t bcols = m_geo.tile_cols();
        for (std::uint64_t e = first; e < first + count; ++e) {
            const std::size_t in_slot = std::size_t((e + L) % m_span) * n;  // written after edge e - L
            // Row gi = r*N + i of the feeder's A has term k at gi * kc + k; column gj of B at k * cols + gj.
            const auto [west, west_ok] = side(x.west_in, in_slot, x.west, x.west_ok, [&] {
                feed_face(e, x.r, x.d, ft.row_delay, ft.row_valid, m_in->a(), kc, 1, x.west.data(),
                          x.west_ok.data());
            });
            const auto [north, north_ok] = side(x.north_in, in_slot, x.north, x.north_ok, [&] {
                feed_face(e, x.c, x.d, ft.col_delay, ft.col_valid, m_in->b(), 1, bcols, x.north.data(),
                          x.north_ok.data());
            });
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

    // One side's inputs of an edge: on the fabric's face, what `feed` puts into buf; else the slot
    // of the incoming link.
    template <class Feed>
    std::pair<const operand_type*, const std::uint8_t*> side(int link, std::size_t slot,
                                                             std::vector<operand_type>& buf,
                                                             std::vector<std::uint8_t>& ok, Feed feed) {
        if (link >= 0) return {&m_rings[std::size_t(link)].value[slot], &m_rings[std::size_t(link)].ok[slot]};
        feed();
        return {buf.data(), ok.data()};
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

    // PE(i, j) of array (r, c) sums the last term of block b at edge
    //   b * stride + (r + c)(L - 1 + N) + N - 1 + i + j
    // (every block but the last has N terms), so the PEs that finish on one edge form an
    // anti-diagonal i + j = q. Calls f(b, q) for every block b < blocks - 1 that array (r, c)'s PEs
    // finish on edge e.
    template <class F>
    void blocks_finishing(const node& x, std::uint64_t e, F f) const {
        const std::int64_t n = std::int64_t(m_geo.n), stride = std::int64_t(m_geo.block_stride());
        const std::int64_t off = std::int64_t((x.r + x.c) * (m_geo.link_extra() + m_geo.n)) + n - 1;
        const std::int64_t t = std::int64_t(e) - off;
        if (t < 0) return;
        // Blocks whose anti-diagonals [off + b*stride, off + b*stride + 2N - 2] hold edge e.
        const std::int64_t b_hi = std::min<std::int64_t>(t / stride, std::int64_t(m_blocks) - 2);
        for (std::int64_t b = std::max<std::int64_t>(0, (t - (2 * n - 2) + stride - 1) / stride); b <= b_hi;
             ++b)
            if (t - b * stride <= 2 * n - 2) f(std::uint64_t(b), std::size_t(t - b * stride));
    }

    // The PEs of x that summed their block on edge e put their sums in x's C link mailbox.
    void send_blocks(node& x, std::uint64_t e) {
        blocks_finishing(x, e, [&](std::uint64_t b, std::size_t q) {
            if (depth_of(b) != x.d) return;
            fabric_link& link = m_links[std::size_t(x.next_depth)];
            for_diagonal(q, [&](std::size_t i, std::size_t j) {
                x.mailbox[i * m_geo.n + j] = x.core.accumulator(i, j);
                count_sum(link, x, i, j);
            });
            link.last_edge = e;
        });
    }

    // The PEs of x whose predecessor at the previous depth summed its block L edges ago start from
    // that sum: it has crossed the C link.
    void receive_blocks(node& x, std::uint64_t e) {
        const std::uint64_t L = m_geo.link_latency;
        if (e < L) return;
        const std::size_t D = m_geo.shape.depth;
        const node& from = *m_nodes[index(x.r, x.c, (x.d + D - 1) % D)];
        blocks_finishing(x, e - L, [&](std::uint64_t b, std::size_t q) {
            if (depth_of(b + 1) != x.d) return;
            for_diagonal(q, [&](std::size_t i, std::size_t j) {
                const std::size_t p = i * m_geo.n + j;
                load_sum(x, p, from.mailbox[p]);
            });
        });
    }

    template <class F>
    void for_diagonal(std::size_t q, F f) const {
        const std::size_t n = m_geo.n;
        for (std::size_t i = q < n ? 0 : q - n + 1; i <= std::min(q, n - 1); ++i)
            f(i, q - i);
    }

    // One partial sum over x's C link: real when its PE holds a real output.
    void count_sum(fabric_link& link, const node& x, std::size_t i, std::size_t j) const {
        const bool real = x.r * m_geo.n + i < m_tile.rows && x.c * m_geo.n + j < m_tile.cols;
        ++(real ? link.words : link.padding_words);
    }

    // A chunk that goes on from an earlier one: every PE of `from` (the depth holding the sums)
    // hands its sum over the C link before the chunk's first edge.
    void hand_off_all(node& from) {
        const std::size_t n = m_geo.n;
        fabric_link& link = m_links[std::size_t(from.next_depth)];
        node& to = *m_nodes[link.to];
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j) {
                load_sum(to, i * n + j, from.core.accumulator(i, j));
                count_sum(link, from, i, j);
            }
        link.last_edge = 0;
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
    std::uint64_t m_link_words_before = 0;  // the links' words when counting began
    // The chunk being stepped.
    const feeder<Format>* m_in = nullptr;
    tile m_tile;
    std::uint64_t m_kc = 0, m_blocks = 0;
    std::size_t m_start = 0, m_ra = 0, m_ca = 0;
};

SYSTOLIC_EXTERN_TEMPLATE(fabric_engine)

}  // namespace systolic
