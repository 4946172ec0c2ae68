#include "partition.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <set>
#include <stdexcept>

#include "systolic/counting.h"

namespace systolic {

namespace {

constexpr std::uint64_t max_extent = (std::uint64_t{1} << 40);  // keeps every product of two in range

std::int64_t floor_div(std::int64_t a, std::int64_t b) {
    const std::int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

// Face a word crosses when its source is `delta` (+1 or -1) blocks away along `axis`: the data moves
// the other way, so a source one block back along j (delta -1) crosses the +j face.
std::size_t face_index(int axis, std::int64_t delta) {
    return std::size_t(2 * axis + (delta < 0 ? 0 : 1));
}

}  // namespace

std::vector<dependence> matmul_dependences() {
    return {{"a", false, {0, -1, 0}, 2}, {"b", false, {-1, 0, 0}, 2}, {"c", false, {0, 0, -1}, 2}};
}

dependence parse_dependence(std::string_view spec) {
    const auto bad = [&](const std::string& why) {
        return std::invalid_argument("--dep '" + std::string(spec) + "': " + why);
    };
    const auto colon = spec.find(':');
    if (colon == std::string_view::npos) throw bad("expected NAME:di,dj,dk or NAME:reduce-k");
    dependence d;
    d.name = std::string(spec.substr(0, colon));
    if (d.name.empty()) throw bad("the name is empty");
    for (char ch : d.name) {
        if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-'))
            throw bad("the name may hold letters, digits, '_' and '-' only");
    }
    const std::string_view rest = spec.substr(colon + 1);
    if (rest.rfind("reduce-", 0) == 0) {
        const std::string_view ax = rest.substr(7);
        if (ax.size() != 1 || std::string_view("ijk").find(ax[0]) == std::string_view::npos)
            throw bad("a collective is reduce-i, reduce-j or reduce-k");
        d.collective = true;
        d.axis = int(std::string_view("ijk").find(ax[0]));
        return d;
    }
    std::size_t pos = 0;
    for (int a = 0; a < 3; ++a) {
        const std::size_t end = a < 2 ? rest.find(',', pos) : rest.size();
        if (end == std::string_view::npos) throw bad("expected three offsets di,dj,dk");
        std::string_view num = rest.substr(pos, end - pos);
        if (!num.empty() && num[0] == '+') num.remove_prefix(1);
        std::int64_t v = 0;
        const auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), v);
        if (num.empty() || ec != std::errc() || ptr != num.data() + num.size())
            throw bad("'" + std::string(rest.substr(pos, end - pos)) + "' is not an integer offset");
        d.offset[a] = v;
        pos = end + 1;
    }
    return d;
}

void validate(const partition_spec& spec) {
    const char* extent_names[3] = {"--m", "--p", "--k"};
    const char* block_names[3] = {"Ti", "Tj", "Tk"};
    for (int a = 0; a < 3; ++a) {
        if (spec.extent[a] == 0)
            throw std::invalid_argument(std::string(extent_names[a]) + " must be positive");
        if (spec.extent[a] > max_extent)
            throw std::invalid_argument(std::string(extent_names[a]) + " is larger than 2^40");
        if (spec.block[a] == 0)
            throw std::invalid_argument(std::string("block size ") + block_names[a] + " must be positive");
        if (spec.block[a] > max_extent)
            throw std::invalid_argument(std::string("block size ") + block_names[a] + " is larger than 2^40");
    }
    std::set<std::string> names;
    for (const auto& d : spec.deps) {
        if (!names.insert(d.name).second)
            throw std::invalid_argument("two dependences are named '" + d.name + "'");
        if (d.collective) {
            if (d.axis < 0 || d.axis > 2)
                throw std::invalid_argument("dependence '" + d.name + "': bad axis");
            continue;
        }
        if (d.offset == offset3{0, 0, 0})
            throw std::invalid_argument("dependence '" + d.name + "': a zero offset reads the point itself");
        for (auto v : d.offset) {
            if (v > std::int64_t(max_extent) || v < -std::int64_t(max_extent))
                throw std::invalid_argument("dependence '" + d.name + "': an offset is larger than 2^40");
        }
    }
    // Every count is at most points x (dependences + collective extents): keep that below 2^62.
    const long double points = (long double)spec.extent[0] * spec.extent[1] * spec.extent[2];
    long double per_point = 1;
    for (const auto& d : spec.deps)
        per_point += d.collective ? (long double)spec.extent[d.axis] : 1.0L;
    if (points * per_point > 4.0e18L)
        throw std::invalid_argument("the index space is too large to count in 64 bits");
}

index3 block_grid(const partition_spec& spec) {
    index3 g;
    for (int a = 0; a < 3; ++a)
        g[a] = ceil_div(spec.extent[a], spec.block[a]);
    return g;
}

std::array<std::uint64_t, 2> block_range(const partition_spec& spec, int axis, std::uint64_t b) {
    const std::uint64_t lo = b * spec.block[axis];
    return {lo, lo + chunk_length(spec.extent[axis], spec.block[axis], b)};
}

edge_class classify(const offset3& block_delta) {
    std::int64_t far = 0;
    for (auto d : block_delta)
        far = std::max(far, d < 0 ? -d : d);
    if (far == 0) return edge_class::internal;
    return far == 1 ? edge_class::halo : edge_class::long_range;
}

bool dep_counts::operator==(const dep_counts& o) const {
    return edges == o.edges && internal == o.internal && halo == o.halo && corner_halo == o.corner_halo &&
           long_range == o.long_range && collective == o.collective && boundary_inputs == o.boundary_inputs &&
           face_words == o.face_words && halo_depth == o.halo_depth;
}

std::uint64_t block_counts::halo_words() const {
    std::uint64_t w = 0;
    for (const auto& d : deps)
        w += d.halo;
    return w;
}

bool block_counts::operator==(const block_counts& o) const {
    return index == o.index && lo == o.lo && hi == o.hi && volume == o.volume && deps == o.deps;
}

bool partition_counts::operator==(const partition_counts& o) const {
    return deps == o.deps && blocks == o.blocks;
}

std::uint64_t enumeration_work(const partition_spec& spec) {
    const std::uint64_t points = spec.extent[0] * spec.extent[1] * spec.extent[2];
    std::uint64_t per_point = 1;
    for (const auto& d : spec.deps)
        per_point += d.collective ? spec.extent[d.axis] : 1;
    return points * per_point;
}

namespace {

// The listed blocks with their ranges; counts zero, for the counting functions to fill.
std::vector<block_counts> listed_blocks(const partition_spec& spec, std::uint64_t max_blocks) {
    const index3 g = block_grid(spec);
    const std::uint64_t total = g[0] * g[1] * g[2];
    std::vector<block_counts> blocks;
    blocks.reserve(std::min(total, max_blocks));
    for (std::uint64_t id = 0; id < std::min(total, max_blocks); ++id) {
        block_counts b;
        b.index = {id / (g[1] * g[2]), id / g[2] % g[1], id % g[2]};
        for (int a = 0; a < 3; ++a) {
            const auto r = block_range(spec, a, b.index[a]);
            b.lo[a] = r[0];
            b.hi[a] = r[1];
        }
        b.deps.resize(spec.deps.size());
        blocks.push_back(std::move(b));
    }
    return blocks;
}

// ---- Enumeration: every point, every edge ----

// Calls f(point, point's block, dependence index, source, source's block) for every edge whose
// source lies inside the space, and inputs(point, block, dependence index) for every uniform edge
// whose source lies outside.
template <class Edge, class Input>
void visit_edges(const partition_spec& spec, Edge&& f, Input&& input) {
    const auto& e = spec.extent;
    const auto& t = spec.block;
    index3 p, bp, src, bs;
    for (p[0] = 0; p[0] < e[0]; ++p[0]) {
        bp[0] = p[0] / t[0];
        for (p[1] = 0; p[1] < e[1]; ++p[1]) {
            bp[1] = p[1] / t[1];
            for (p[2] = 0; p[2] < e[2]; ++p[2]) {
                bp[2] = p[2] / t[2];
                for (std::size_t di = 0; di < spec.deps.size(); ++di) {
                    const dependence& d = spec.deps[di];
                    if (d.collective) {
                        src = p;
                        bs = bp;
                        for (std::uint64_t x = 0; x < e[d.axis]; ++x) {
                            if (x == p[d.axis]) continue;
                            src[d.axis] = x;
                            bs[d.axis] = x / t[d.axis];
                            f(p, bp, di, src, bs);
                        }
                        continue;
                    }
                    bool inside = true;
                    for (int a = 0; a < 3; ++a) {
                        const std::int64_t s = std::int64_t(p[a]) + d.offset[a];
                        inside = inside && s >= 0 && std::uint64_t(s) < e[a];
                        src[a] = std::uint64_t(s);
                    }
                    if (!inside) {
                        input(p, bp, di);
                        continue;
                    }
                    for (int a = 0; a < 3; ++a)
                        bs[a] = src[a] / t[a];
                    f(p, bp, di, src, bs);
                }
            }
        }
    }
}

offset3 block_delta(const index3& consumer_block, const index3& source_block) {
    offset3 delta;
    for (int a = 0; a < 3; ++a)
        delta[a] = std::int64_t(source_block[a]) - std::int64_t(consumer_block[a]);
    return delta;
}

// One edge into the counts of its dependence.
void tally_edge(dep_counts& c, const partition_spec& spec, const dependence& d, const index3& bp,
                const index3& src, const offset3& delta) {
    ++c.edges;
    if (d.collective) {
        if (delta == offset3{0, 0, 0})
            ++c.internal;
        else
            ++c.collective;
        return;
    }
    switch (classify(delta)) {
        case edge_class::internal:
            ++c.internal;
            return;
        case edge_class::long_range:
        case edge_class::collective:
            ++c.long_range;
            return;
        case edge_class::halo:
            break;
    }
    ++c.halo;
    int crossed = 0, axis = 0;
    for (int a = 0; a < 3; ++a) {
        if (delta[a] == 0) continue;
        ++crossed;
        axis = a;
        // How far into the neighbour the source lies, counted from the shared face (1 = adjacent layer).
        const std::uint64_t face = (bp[a] + (delta[a] > 0 ? 1 : 0)) * spec.block[a];
        const std::uint64_t depth = delta[a] < 0 ? face - src[a] : src[a] - face + 1;
        c.halo_depth[a] = std::max(c.halo_depth[a], depth);
    }
    if (crossed == 1)
        ++c.face_words[face_index(axis, delta[axis])];
    else
        ++c.corner_halo;
}

}  // namespace

partition_counts count_enumerated(const partition_spec& spec, std::uint64_t max_blocks) {
    validate(spec);
    partition_counts out;
    out.deps.resize(spec.deps.size());
    out.blocks = listed_blocks(spec, max_blocks);
    const index3 g = block_grid(spec);
    auto listed = [&](const index3& b) -> block_counts* {
        const std::uint64_t id = (b[0] * g[1] + b[1]) * g[2] + b[2];
        return id < out.blocks.size() ? &out.blocks[id] : nullptr;
    };
    for (auto& b : out.blocks)
        b.volume = 0;  // counted point by point below
    visit_edges(
        spec,
        [&](const index3&, const index3& bp, std::size_t di, const index3& src, const index3& bs) {
            const offset3 delta = block_delta(bp, bs);
            tally_edge(out.deps[di], spec, spec.deps[di], bp, src, delta);
            if (auto* b = listed(bp)) tally_edge(b->deps[di], spec, spec.deps[di], bp, src, delta);
        },
        [&](const index3&, const index3& bp, std::size_t di) {
            ++out.deps[di].boundary_inputs;
            if (auto* b = listed(bp)) ++b->deps[di].boundary_inputs;
        });
    // Volumes, point by point (a space without dependences still has its points).
    index3 p;
    for (p[0] = 0; p[0] < spec.extent[0]; ++p[0])
        for (p[1] = 0; p[1] < spec.extent[1]; ++p[1]) {
            index3 b{p[0] / spec.block[0], p[1] / spec.block[1], 0};
            for (p[2] = 0; p[2] < spec.extent[2]; ++p[2]) {
                b[2] = p[2] / spec.block[2];
                if (auto* bc = listed(b)) ++bc->volume;
            }
        }
    return out;
}

std::vector<crossing_edge> list_crossing_edges(const partition_spec& spec, std::uint64_t limit) {
    validate(spec);
    std::vector<crossing_edge> edges;
    visit_edges(
        spec,
        [&](const index3& p, const index3& bp, std::size_t di, const index3& src, const index3& bs) {
            if (bp == bs) return;
            if (edges.size() == limit)
                throw std::length_error("more than " + std::to_string(limit) + " crossing edges to list");
            const edge_class kind =
                spec.deps[di].collective ? edge_class::collective : classify(block_delta(bp, bs));
            edges.push_back({p, src, kind, di});
        },
        [](const index3&, const index3&, std::size_t) {});
    return edges;
}

// ---- Closed forms: each axis on its own, then products ----

namespace {

// On one axis (extent E, cut every T), the consumers x in [lo, hi) whose source x + d lies inside,
// grouped by the block offset of the source. With d = q*T + s (0 <= s < T), x = b*T + r lands
// floor((r + s) / T) + q blocks away: q for r < T - s, q + 1 for r >= T - s. So each group is a
// residue range, counted in O(1), and the halo depth depends on r alone.
struct axis_group {
    std::int64_t delta = 0;
    std::uint64_t count = 0;
    std::uint64_t depth = 0;  // for delta = +-1: the deepest layer of the neighbour read
};

// x in [0, L) with x mod T in [r0, r1).
std::int64_t residues_below(std::int64_t L, std::int64_t T, std::int64_t r0, std::int64_t r1) {
    return (L / T) * (r1 - r0) + std::clamp(L % T - r0, std::int64_t{0}, r1 - r0);
}

std::vector<axis_group> split_axis(std::int64_t E, std::int64_t T, std::int64_t d, std::int64_t lo,
                                   std::int64_t hi) {
    std::vector<axis_group> groups;
    const std::int64_t vlo = std::max(lo, -d), vhi = std::min(hi, E - d);  // the source is inside
    if (vlo >= vhi) return groups;
    const std::int64_t q = floor_div(d, T), s = d - q * T;
    // The residues r = x mod T that [vlo, vhi) reaches: one or two ranges.
    std::vector<std::array<std::int64_t, 2>> reached;
    if (vhi - vlo >= T) {
        reached.push_back({0, T});
    } else {
        const std::int64_t a = vlo % T, b = a + (vhi - vlo);
        if (b <= T) {
            reached.push_back({a, b});
        } else {
            reached.push_back({a, T});
            reached.push_back({0, b - T});
        }
    }
    const std::array<std::array<std::int64_t, 3>, 2> ranges = {{{q, 0, T - s}, {q + 1, T - s, T}}};
    for (const auto& [delta, r0, r1] : ranges) {
        if (r0 >= r1) continue;
        axis_group g;
        g.delta = delta;
        g.count = std::uint64_t(residues_below(vhi, T, r0, r1) - residues_below(vlo, T, r0, r1));
        if (g.count == 0) continue;
        std::int64_t rmin = T, rmax = -1;
        for (const auto& [a, b] : reached) {
            const std::int64_t l = std::max(a, r0), h = std::min(b, r1);
            if (l < h) {
                rmin = std::min(rmin, l);
                rmax = std::max(rmax, h - 1);
            }
        }
        // Source one block back: its depth from our -face is -(r + d); one block on: r + d - T + 1.
        if (delta == -1) g.depth = std::uint64_t(-(rmin + d));
        if (delta == 1) g.depth = std::uint64_t(rmax + d - T + 1);
        groups.push_back(g);
    }
    return groups;
}

// Collective along one axis, consumers x in [lo, hi): each reads the E - 1 other points of its line,
// t - 1 of them in its own block of extent t. Returns {internal, collective}.
std::array<std::uint64_t, 2> collective_axis(const partition_spec& spec, int axis, std::uint64_t lo,
                                             std::uint64_t hi) {
    const std::uint64_t E = spec.extent[axis], T = spec.block[axis];
    const auto block_extent = [&](std::uint64_t b) { return chunk_length(E, T, b); };
    std::array<std::uint64_t, 2> r{0, 0};
    const auto add = [&](std::uint64_t points, std::uint64_t t) {
        r[0] += points * (t - 1);
        r[1] += points * (E - t);
    };
    const std::uint64_t b0 = lo / T, b1 = (hi - 1) / T;
    if (b0 == b1) {
        add(hi - lo, block_extent(b0));
        return r;
    }
    add((b0 + 1) * T - lo, T);  // b0 is not the last block, so it is full
    add((b1 - b0 - 1) * T, T);
    add(hi - b1 * T, block_extent(b1));
    return r;
}

dep_counts closed_form(const partition_spec& spec, const dependence& d, const index3& lo, const index3& hi) {
    dep_counts c;
    if (d.collective) {
        const auto [internal, collective] = collective_axis(spec, d.axis, lo[d.axis], hi[d.axis]);
        std::uint64_t others = 1;
        for (int a = 0; a < 3; ++a)
            if (a != d.axis) others *= hi[a] - lo[a];
        c.internal = internal * others;
        c.collective = collective * others;
        c.edges = c.internal + c.collective;
        return c;
    }
    std::array<std::vector<axis_group>, 3> g;
    std::uint64_t points = 1;
    for (int a = 0; a < 3; ++a) {
        g[a] = split_axis(std::int64_t(spec.extent[a]), std::int64_t(spec.block[a]), d.offset[a],
                          std::int64_t(lo[a]), std::int64_t(hi[a]));
        points *= hi[a] - lo[a];
    }
    for (const auto& gi : g[0])
        for (const auto& gj : g[1])
            for (const auto& gk : g[2]) {
                const std::uint64_t n = gi.count * gj.count * gk.count;
                const offset3 delta{gi.delta, gj.delta, gk.delta};
                const std::array<const axis_group*, 3> parts{&gi, &gj, &gk};
                c.edges += n;
                switch (classify(delta)) {
                    case edge_class::internal:
                        c.internal += n;
                        break;
                    case edge_class::long_range:
                    case edge_class::collective:
                        c.long_range += n;
                        break;
                    case edge_class::halo: {
                        c.halo += n;
                        int crossed = 0, axis = 0;
                        for (int a = 0; a < 3; ++a) {
                            if (delta[a] == 0) continue;
                            ++crossed;
                            axis = a;
                            c.halo_depth[a] = std::max(c.halo_depth[a], parts[a]->depth);
                        }
                        if (crossed == 1)
                            c.face_words[face_index(axis, delta[axis])] += n;
                        else
                            c.corner_halo += n;
                        break;
                    }
                }
            }
    c.boundary_inputs = points - c.edges;
    return c;
}

}  // namespace

partition_counts count_closed_form(const partition_spec& spec, std::uint64_t max_blocks) {
    validate(spec);
    partition_counts out;
    for (const auto& d : spec.deps)
        out.deps.push_back(closed_form(spec, d, {0, 0, 0}, spec.extent));
    out.blocks = listed_blocks(spec, max_blocks);
    for (auto& b : out.blocks) {
        b.volume = (b.hi[0] - b.lo[0]) * (b.hi[1] - b.lo[1]) * (b.hi[2] - b.lo[2]);
        for (std::size_t di = 0; di < spec.deps.size(); ++di)
            b.deps[di] = closed_form(spec, spec.deps[di], b.lo, b.hi);
    }
    return out;
}

std::vector<index3> block_visit_order(const partition_spec& spec, tile_order order, std::uint64_t seed,
                                      std::uint64_t limit) {
    // plan_tiles on the I x J block grid with unit tiles: the same order the controller's
    // plan_tiles(M, P, Ti, Tj) gives on an array of Ti rows of Tj PEs (tests hold the two equal).
    const index3 g = block_grid(spec);
    std::vector<index3> visits;
    for (const auto& t : plan_tiles(g[0], g[1], 1, order, seed)) {
        for (std::uint64_t k = 0; k < g[2]; ++k) {
            if (visits.size() == limit) return visits;
            visits.push_back({t.r0, t.c0, k});
        }
    }
    return visits;
}

}  // namespace systolic
