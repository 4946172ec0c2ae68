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
    : m_rows(rows),
      m_cols(cols),
      m_chunks(job.chunks()),
      m_tiles(plan_tiles(job.shape.m, job.shape.p, rows, cols, job.order, job.seed)),
      m_edges(std::move(edges)) {
    if (!m_edges) throw std::invalid_argument("tile_plan: no rule for a chunk's advance edges");
    const bool partials = job.policy == k_policy::partials;
    std::uint64_t k0 = 0;
    for (std::uint64_t c = 0; c < m_chunks; ++c) {
        plan_step s;
        s.chunk = c;
        s.k0 = k0;
        s.kc = chunk_length(job.shape.k, job.k_tile, c);
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

plan_step tile_plan::operator[](std::size_t i) const {
    plan_step s = m_tile_steps[i % m_tile_steps.size()];
    s.where = &m_tiles[i / m_tile_steps.size()];
    if (s.kind == step_kind::advance) s.edges = m_edges(*s.where, s.kc);
    return s;
}

}  // namespace systolic
