#include "partition_report.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

namespace systolic {

partition_report analyse(const partition_spec& spec, const analysis_options& options) {
    validate(spec);
    partition_report r;
    r.spec = spec;
    r.options = options;
    r.grid = block_grid(spec);
    const std::uint64_t points = spec.extent[0] * spec.extent[1] * spec.extent[2];
    const std::uint64_t work = enumeration_work(spec);
    const bool small = points <= enumeration_point_limit && work <= enumeration_work_limit;
    if (options.method == count_method::enumerate && work > 50 * enumeration_work_limit)
        throw std::invalid_argument("the index space is too large to enumerate (" + std::to_string(work) +
                                    " edge visits); use --method closed-form or auto");
    if (options.list_edges && !small)
        throw std::invalid_argument("--edges lists the edges of enumerated spaces only (at most " +
                                    std::to_string(enumeration_point_limit) + " points)");
    r.enumerated =
        options.method == count_method::enumerate || (options.method == count_method::automatic && small);
    r.counts = r.enumerated ? count_enumerated(spec, options.max_blocks)
                            : count_closed_form(spec, options.max_blocks);
    r.visits = block_visit_order(spec, options.order, options.seed, options.max_visits);
    if (options.list_edges) {
        try {
            r.edges = list_crossing_edges(spec, options.max_edges);
        } catch (const std::length_error& e) {
            throw std::invalid_argument(std::string("--edges: ") + e.what());
        }
    }
    return r;
}

namespace {

std::uint64_t total_points(const partition_spec& s) {
    return s.extent[0] * s.extent[1] * s.extent[2];
}

struct totals {
    std::uint64_t halo = 0, long_range = 0, collective = 0, corner = 0, inputs = 0;
    std::array<std::uint64_t, 6> faces{};
};

totals sum_deps(const std::vector<dep_counts>& deps) {
    totals t;
    for (const auto& d : deps) {
        t.halo += d.halo;
        t.long_range += d.long_range;
        t.collective += d.collective;
        t.corner += d.corner_halo;
        t.inputs += d.boundary_inputs;
        for (std::size_t f = 0; f < 6; ++f)
            t.faces[f] += d.face_words[f];
    }
    return t;
}

double ratio(std::uint64_t words, std::uint64_t volume) {
    return volume ? double(words) / double(volume) : 0.0;
}

nlohmann::json faces_json(const std::array<std::uint64_t, 6>& faces) {
    nlohmann::json j = nlohmann::json::object();
    for (std::size_t f = 0; f < 6; ++f)
        j[face_names[f]] = faces[f];
    return j;
}

nlohmann::json dep_json(const dependence& d, const dep_counts& c) {
    nlohmann::json j;
    j["name"] = d.name;
    j["kind"] = d.collective ? "collective" : "uniform";
    if (d.collective)
        j["axis"] = std::string(1, "ijk"[d.axis]);
    else
        j["offset"] = d.offset;
    j["edges"] = c.edges;
    j["internal_edges"] = c.internal;
    j["crossing_edges"] = c.crossing();
    j["halo_edges"] = c.halo;
    j["corner_halo_edges"] = c.corner_halo;
    j["long_range_edges"] = c.long_range;
    j["collective_edges"] = c.collective;
    j["boundary_inputs"] = c.boundary_inputs;
    j["halo_depth"] = c.halo_depth;
    j["face_words"] = faces_json(c.face_words);
    return j;
}

// The systolic-tb command that runs this partition: an array of Ti rows of Tj PEs (--array Ti when
// Ti = Tj, else TixTj), K chunks of Tk.
std::string tb_command(const partition_report& r) {
    const auto& s = r.spec;
    std::ostringstream os;
    os << "systolic-tb --array " << s.block[0];
    if (s.block[1] != s.block[0]) os << "x" << s.block[1];
    os << " --m " << s.extent[0] << " --k " << s.extent[2] << " --p " << s.extent[1] << " --k-tile "
       << s.block[2] << " --order " << to_string(r.options.order);
    if (r.options.order == tile_order::random) os << " --seed " << r.options.seed;
    return os.str();
}

std::string range_text(std::uint64_t lo, std::uint64_t hi) {
    return "[" + std::to_string(lo) + "," + std::to_string(hi) + ")";
}

std::string triple(const index3& v) {
    return "(" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + ")";
}

std::string triple(const offset3& v) {
    return "(" + std::to_string(v[0]) + "," + std::to_string(v[1]) + "," + std::to_string(v[2]) + ")";
}

std::string number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// Columns as wide as their widest cell, two spaces apart, indented by two.
void print_table(std::ostream& os, const std::vector<std::vector<std::string>>& rows) {
    std::vector<std::size_t> width;
    for (const auto& row : rows)
        for (std::size_t c = 0; c < row.size(); ++c) {
            if (width.size() <= c) width.push_back(0);
            width[c] = std::max(width[c], row[c].size());
        }
    for (const auto& row : rows) {
        std::string line = " ";
        for (std::size_t c = 0; c < row.size(); ++c)
            line += " " + row[c] + std::string(c + 1 < row.size() ? width[c] - row[c].size() + 1 : 0, ' ');
        os << line << "\n";
    }
}

}  // namespace

nlohmann::json to_json(const partition_report& r) {
    const auto& s = r.spec;
    nlohmann::json j;
    j["m"] = s.extent[0];
    j["k"] = s.extent[2];
    j["p"] = s.extent[1];
    j["points"] = total_points(s);
    j["block"] = {{"i", s.block[0]}, {"j", s.block[1]}, {"k", s.block[2]}};
    j["grid"] = {
        {"i", r.grid[0]}, {"j", r.grid[1]}, {"k", r.grid[2]}, {"blocks", r.grid[0] * r.grid[1] * r.grid[2]}};
    j["method"] = r.enumerated ? "enumerated" : "closed-form";

    j["dependences"] = nlohmann::json::array();
    nlohmann::json halo_words = nlohmann::json::object();
    for (std::size_t d = 0; d < s.deps.size(); ++d) {
        j["dependences"].push_back(dep_json(s.deps[d], r.counts.deps[d]));
        halo_words[s.deps[d].name] = r.counts.deps[d].halo;
    }
    const totals t = sum_deps(r.counts.deps);
    j["halo_words"] = halo_words;
    j["long_range_edges"] = t.long_range;
    j["collective_edges"] = t.collective;
    j["corner_halo_edges"] = t.corner;
    j["boundary_inputs"] = t.inputs;
    j["face_words"] = faces_json(t.faces);
    j["surface_to_volume"] = {
        {"halo_words", t.halo}, {"volume", total_points(s)}, {"ratio", ratio(t.halo, total_points(s))}};

    j["blocks"] = nlohmann::json::array();
    for (const auto& b : r.counts.blocks) {
        nlohmann::json bj;
        bj["index"] = b.index;
        bj["i"] = {b.lo[0], b.hi[0]};
        bj["j"] = {b.lo[1], b.hi[1]};
        bj["k"] = {b.lo[2], b.hi[2]};
        bj["volume"] = b.volume;
        const totals bt = sum_deps(b.deps);
        bj["halo_words"] = bt.halo;
        nlohmann::json by_dep = nlohmann::json::object();
        for (std::size_t d = 0; d < s.deps.size(); ++d)
            by_dep[s.deps[d].name] = b.deps[d].halo;
        bj["halo_words_by_dependence"] = by_dep;
        bj["long_range_edges"] = bt.long_range;
        bj["collective_edges"] = bt.collective;
        bj["boundary_inputs"] = bt.inputs;
        bj["surface_to_volume"] = ratio(bt.halo, b.volume);
        bj["wavefront_steps"] = wavefront_steps({b.hi[0] - b.lo[0], b.hi[1] - b.lo[1], b.hi[2] - b.lo[2]});
        j["blocks"].push_back(bj);
    }
    j["blocks_listed"] = r.counts.blocks.size();

    nlohmann::json sched;
    sched["wavefront"] = {1, 1, 1};
    sched["block_wavefront_steps"] = wavefront_steps(s.block);
    sched["cube_wavefront_steps"] = wavefront_steps(s.extent);
    sched["block_matmul"] = {{"i", r.grid[0]}, {"j", r.grid[1]}, {"k", r.grid[2]}};
    sched["order"] = to_string(r.options.order);
    sched["seed"] = r.options.seed;
    sched["visits"] = r.visits;
    sched["visits_listed"] = r.visits.size();
    sched["systolic_tb"] = tb_command(r);
    j["schedule"] = sched;

    if (r.options.list_edges) {
        nlohmann::json edges = nlohmann::json::array();
        for (const auto& e : r.edges)
            edges.push_back({e.to, e.from, to_string(e.kind), s.deps[e.dep].name});
        j["crossing_edge_list"] = edges;  // [consumer, source, class, dependence]
    }
    return j;
}

void print_text(std::ostream& os, const partition_report& r) {
    const auto& s = r.spec;
    const auto& g = r.grid;
    const std::uint64_t blocks = g[0] * g[1] * g[2];
    os << "systolic-partition: C = A*B as the index space i < M=" << s.extent[0] << ", j < P=" << s.extent[1]
       << ", k < K=" << s.extent[2] << " (" << total_points(s) << " points)\n";
    os << "blocks: Ti=" << s.block[0] << " Tj=" << s.block[1] << " Tk=" << s.block[2] << ", a " << g[0]
       << " x " << g[1] << " x " << g[2] << " grid (I x J x K) of " << blocks << " blocks; counts "
       << (r.enumerated ? "enumerated point by point" : "from closed forms") << "\n";

    const std::size_t shown = std::min<std::size_t>(r.counts.blocks.size(), 27);
    std::vector<std::vector<std::string>> rows = {
        {"(I,J,K)", "i", "j", "k", "volume", "halo in", "halo/volume"}};
    for (std::size_t b = 0; b < shown; ++b) {
        const auto& bc = r.counts.blocks[b];
        rows.push_back({triple(bc.index), range_text(bc.lo[0], bc.hi[0]), range_text(bc.lo[1], bc.hi[1]),
                        range_text(bc.lo[2], bc.hi[2]), std::to_string(bc.volume),
                        std::to_string(bc.halo_words()), number_text(ratio(bc.halo_words(), bc.volume))});
    }
    print_table(os, rows);
    if (shown < blocks)
        os << "  ... " << blocks - shown << " more (--json lists " << r.counts.blocks.size() << ")\n";

    os << "dependences (source = point + offset):\n";
    rows = {
        {"name", "offset", "edges", "inside", "halo", "depth(i,j,k)", "long-range", "collective", "inputs"}};
    for (std::size_t d = 0; d < s.deps.size(); ++d) {
        const auto& dep = s.deps[d];
        const auto& c = r.counts.deps[d];
        rows.push_back(
            {dep.name, dep.collective ? std::string("reduce-") + "ijk"[dep.axis] : triple(dep.offset),
             std::to_string(c.edges), std::to_string(c.internal), std::to_string(c.halo),
             std::to_string(c.halo_depth[0]) + "," + std::to_string(c.halo_depth[1]) + "," +
                 std::to_string(c.halo_depth[2]),
             std::to_string(c.long_range), std::to_string(c.collective), std::to_string(c.boundary_inputs)});
    }
    print_table(os, rows);
    const totals t = sum_deps(r.counts.deps);
    os << "halo words by face:";
    for (std::size_t f = 0; f < 6; ++f)
        os << (f ? ", " : " ") << face_names[f] << " " << t.faces[f];
    os << "; corner " << t.corner << "\n";
    os << "crossing edges: " << t.halo << " halo, " << t.long_range << " long-range, " << t.collective
       << " collective\n";
    os << "surface to volume: " << t.halo << " halo words for " << total_points(s)
       << " points = " << ratio(t.halo, total_points(s)) << "\n";

    os << "schedule:\n";
    os << "  within a block: the wavefront tau = [1,1,1] over (ii,jj,kk) takes Ti+Tj+Tk-2 = "
       << wavefront_steps(s.block) << " steps (" << wavefront_steps(s.extent) << " over the whole cube)\n";
    os << "  across blocks: a " << g[0] << " x " << g[1] << " x " << g[2]
       << " matmul of blocks, C[I][J] = sum_K A[I][K]*B[K][J]\n";
    const std::uint64_t c_shown = std::min<std::uint64_t>(g[0] * g[1], 9);
    for (std::uint64_t c = 0; c < c_shown; ++c) {
        const std::uint64_t I = c / g[1], J = c % g[1];
        os << "    C[" << I << "][" << J << "] =";
        for (std::uint64_t K = 0; K < std::min<std::uint64_t>(g[2], 8); ++K)
            os << (K ? " + " : " ") << "A[" << I << "][" << K << "]*B[" << K << "][" << J << "]";
        if (g[2] > 8) os << " + ... (" << g[2] << " terms)";
        os << "\n";
    }
    if (c_shown < g[0] * g[1]) os << "    ... " << g[0] * g[1] - c_shown << " more output blocks\n";
    os << "  " << tb_command(r) << " visits the blocks as (I,J,K), one output tile per line:\n";
    const std::size_t lines = 16;
    std::size_t line = 0;
    for (std::size_t v = 0; v < r.visits.size() && line < lines; v += g[2], ++line) {
        os << "   ";
        for (std::size_t k = v; k < std::min<std::size_t>({v + g[2], v + 12, r.visits.size()}); ++k)
            os << " " << triple(r.visits[k]);
        if (g[2] > 12) os << " ...";
        os << "\n";
    }
    if (g[0] * g[1] > lines) os << "    ... " << g[0] * g[1] - lines << " more output tiles\n";
}

}  // namespace systolic
