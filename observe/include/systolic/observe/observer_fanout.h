// One controller observer that forwards to several (a waveform, a timeline, a progress bar), so each
// stays a small class of its own. It asks for edges only when one of them does.
#pragma once

#include <vector>

#include "systolic/edge_observer.h"

namespace systolic::observe {

template <class Format>
class observer_fanout final : public edge_observer<Format> {
public:
    void add(edge_observer<Format>* o) {
        if (!o) return;
        m_all.push_back(o);
        if (o->wants_edges()) m_edges.push_back(o);
    }
    bool empty() const { return m_all.empty(); }

    bool wants_edges() const override { return !m_edges.empty(); }
    void on_edge(const edge_event<Format>& e) override {
        for (auto* o : m_edges)
            o->on_edge(e);
    }
    void on_step_begin(const step_event<Format>& e) override {
        for (auto* o : m_all)
            o->on_step_begin(e);
    }
    void on_step_end(const step_event<Format>& e) override {
        for (auto* o : m_all)
            o->on_step_end(e);
    }
    void on_job_begin(const matmul_job& job, const sc_core::sc_time& t) override {
        for (auto* o : m_all)
            o->on_job_begin(job, t);
    }
    void on_job_end(const job_result& r) override {
        for (auto* o : m_all)
            o->on_job_end(r);
    }
    void on_transfer(const dma_transfer& t) override {
        for (auto* o : m_all)
            o->on_transfer(t);
    }

private:
    std::vector<edge_observer<Format>*> m_all, m_edges;
};

}  // namespace systolic::observe
