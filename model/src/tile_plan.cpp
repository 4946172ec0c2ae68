#include "systolic/tile_plan.h"

#include <stdexcept>
#include <utility>

#include "systolic/counting.h"

namespace systolic {

tile_plan::tile_plan(const matmul_job& job, std::size_t n) : tile_plan(job, n, n) {}

tile_plan::tile_plan(const matmul_job& job, std::size_t rows, std::size_t cols)
    : tile_plan(job, rows, cols, [rows, cols](const tile&, std::uint64_t kc) {
          return advance_edges_per_tile(rows, cols, kc);
      }) {}

tile_plan::tile_plan(const matmul_job& job, std::size_t rows, std::size_t cols, edge_rule edges)
    : m_rows(rows), m_cols(cols), m_dataflow(job.run.dataflow), m_edges(std::move(edges)) {
    if (!m_edges) throw std::invalid_argument("tile_plan: no rule for a chunk's advance edges");
    if (is_stationary(m_dataflow))
        plan_stationary(job);
    else
        plan_output_stationary(job);
}

void tile_plan::plan_output_stationary(const matmul_job& job) {
    m_chunks = job.chunks();
    m_tiles = plan_tiles(job.shape.m, job.shape.p, m_rows, m_cols, job.run.order, job.run.order_seed);
    const bool partials = job.run.policy == k_policy::partials;
    std::uint64_t k0 = 0;
    for (std::uint64_t c = 0; c < m_chunks; ++c) {
        plan_step s;
        s.chunk = c;
        s.k0 = k0;
        s.kc = chunk_length(job.shape.k, job.run.k_tile, c);
        s.fresh = c == 0 || partials;
        s.last_chunk = c + 1 == m_chunks;
        s.terms = s.fresh ? s.kc : k0 + s.kc;
        if (s.fresh) {
            s.kind = step_kind::clear;
            m_tile_steps.push_back(s);
        }
        s.kind = step_kind::load;
        m_tile_steps.push_back(s);
        s.kind = step_kind::advance;
        m_tile_steps.push_back(s);
        if (partials || s.last_chunk) {
            s.kind = step_kind::drain;
            s.target = partials && !s.last_chunk ? drain_target::partial : drain_target::c;
            s.combine = partials && c > 0;
            m_tile_steps.push_back(s);
        }
        k0 += s.kc;
    }
}

// A tile is all T stream rows by C stationary columns: for ws the tiles of C are a row of T = M
// rows by C columns, for is a column of C rows (of M) by T = P columns.
void tile_plan::plan_stationary(const matmul_job& job) {
    const array_shape a{m_rows, m_cols};
    const stationary_geometry g = stationary_of(job.shape, a, job.run.k_tile, m_dataflow);
    m_chunks = k_chunks(job.shape.k, g.fold_terms);
    m_tiles =
        m_dataflow == dataflow_kind::ws
            ? plan_tiles(job.shape.m, job.shape.p, job.shape.m, m_cols, job.run.order, job.run.order_seed)
            : plan_tiles(job.shape.m, job.shape.p, m_cols, job.shape.p, job.run.order, job.run.order_seed);
    std::uint64_t k0 = 0;
    for (std::uint64_t f = 0; f < m_chunks; ++f) {
        plan_step s;
        s.chunk = f;
        s.k0 = k0;
        s.kc = chunk_length(job.shape.k, g.fold_terms, f);
        s.fresh = f == 0;
        s.last_chunk = f + 1 == m_chunks;
        s.terms = (f + 1) * g.stream;
        if (s.fresh) {
            s.kind = step_kind::clear;
            m_tile_steps.push_back(s);
        }
        s.kind = step_kind::load;
        m_tile_steps.push_back(s);
        s.kind = step_kind::preload;
        s.edges = preload_edges_per_fold(a);
        m_tile_steps.push_back(s);
        s.kind = step_kind::advance;
        s.edges = stream_edges_per_fold(a, g.stream);
        m_tile_steps.push_back(s);
        s.edges = 0;
        if (s.last_chunk) {
            s.kind = step_kind::drain;
            s.target = drain_target::c;
            m_tile_steps.push_back(s);
        }
        k0 += s.kc;
    }
}

plan_step tile_plan::operator[](std::size_t i) const {
    plan_step s = m_tile_steps[i % m_tile_steps.size()];
    s.where = &m_tiles[i / m_tile_steps.size()];
    if (s.kind == step_kind::advance && !is_stationary(m_dataflow)) s.edges = m_edges(*s.where, s.kc);
    return s;
}

}  // namespace systolic
