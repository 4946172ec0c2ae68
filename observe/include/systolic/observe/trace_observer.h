// A Chrome / Perfetto trace-event timeline of jobs (open it in ui.perfetto.dev or chrome://tracing),
// on the controllers' own simulated time. One trace_file per file (one process); each controller's
// trace_observer adds four tracks to it:
//   <controller>        spans for each tile ("tile 3 (2,0)"), inside it each K chunk ("chunk 1"; under
//                       ws and is each fold, "fold 1"), and inside that each step: clear, load,
//                       preload, advance, drain, stall (categories tile, chunk, phase; args say the
//                       tile, chunk, and for preload and advance the edges);
//   <controller>.dma A, <controller>.dma B, <controller>.dma C
//                       one track per stream (C: the outputs and partial sums), one span per transfer
//                       ("read A", "write C", ...; category dma) with its bytes, address, whether it
//                       went through DMI and whether it was a prefetch for a later tile. The streams
//                       share one DRAM channel, so with double buffering their spans overlap the
//                       controller's phases but not each other.
// Times are microseconds ("ts", "dur"), see trace_clock. Steps only: nothing is done per edge. A
// step that failed (watchdog, bus error) ends at the job's end, with "failed": true; a step that
// took no time has no span.
//
// Readers rebuild the span tree from the times (Chrome DevTools' trace engine drops a span that
// seems to end after its parent, or after the next span's start), and of two spans with equal
// extents they put the one written first outside. So each tile's spans are written tile first, then
// each chunk followed by its phases; tests/trace_engine_check.mjs loads traces in that engine.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <systemc>

#include "systolic/edge_observer.h"
#include "systolic/format_instances.h"
#include "systolic/observe/file_sink.h"

namespace systolic::observe {

// Simulated time as trace-event microseconds that a reader's double arithmetic keeps exact: each
// time is rounded up to a multiple of 2^-24 us (0.06 ps), so every "ts" and "dur" is a double with
// no rounding, and ts + dur is exactly the "ts" of a span that starts at that end (a decimal such as
// 0.001 + 0.05 gives 0.051000000000000004 and overshoots it). Exact up to 2^29 us (537 s) of
// simulated time, monotonic beyond. Rounding up keeps a reader that truncates to whole ns right.
class trace_clock {
public:
    trace_clock() {
        const double res = sc_core::sc_get_time_resolution().to_seconds();
        if (res >= 1e-6)
            m_us_per_unit = std::uint64_t(res / 1e-6 + 0.5);
        else
            m_units_per_us = std::uint64_t(1e-6 / res + 0.5);
    }
    std::string ts(std::uint64_t units) const { return text(at(units)); }
    std::string dur(std::uint64_t begin, std::uint64_t end) const {
        return text(end > begin ? at(end) - at(begin) : 0.0);  // exact: both are multiples of 2^-24
    }

private:
    static constexpr int fraction_bits = 24;
    double at(std::uint64_t units) const {
        if (m_us_per_unit) return double(units) * double(m_us_per_unit);
        const unsigned __int128 scaled = static_cast<unsigned __int128>(units) << fraction_bits;
        const unsigned __int128 steps = (scaled + m_units_per_us - 1) / m_units_per_us;
        return std::ldexp(double(steps), -fraction_bits);
    }
    // The shortest decimal that reads back as the same double.
    static std::string text(double v) {
        char buf[32];
        for (int digits = 1; digits <= 17; ++digits) {
            std::snprintf(buf, sizeof buf, "%.*g", digits, v);
            if (std::strtod(buf, nullptr) == v) break;
        }
        return buf;
    }

    std::uint64_t m_units_per_us = 0, m_us_per_unit = 0;
};

// The file's JSON around the events: opened for the process `process` ("systolic-tb"), closed by
// finish(). Tracks are numbered 1, 2, ... in the order they are added.
class trace_file {
public:
    trace_file(file_sink& out, const std::string& process) : m_out(out) {
        m_out.append("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n");
        m_out.append(R"({"name":"process_name","ph":"M","pid":1,"tid":1,"args":{"name":")" + process +
                     "\"}}");
    }
    // A named track; returns its number, the events' "tid".
    int add_track(const std::string& name) {
        ++m_tracks;
        m_out.append(",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" +
                     std::to_string(m_tracks) + ",\"args\":{\"name\":\"" + name + "\"}}");
        return m_tracks;
    }
    void append(std::string_view events) { m_out.append(events); }
    // One complete event ("ph":"X") on track `tid` from `begin` to `end` (simulated time, in the
    // kernel's resolution), with `args` the inside of its args object; to append() now or later.
    std::string span(int tid, const std::string& name, const char* cat, std::uint64_t begin,
                     std::uint64_t end, const std::string& args) const {
        return ",\n{\"name\":\"" + name + "\",\"cat\":\"" + cat +
               "\",\"ph\":\"X\",\"pid\":1,\"tid\":" + std::to_string(tid) + ",\"ts\":" + m_clock.ts(begin) +
               ",\"dur\":" + m_clock.dur(begin, end) + ",\"args\":{" + args + "}}";
    }
    // After the last event (every observer's job ended or finished); the file_sink is the caller's.
    void finish() { m_out.append("\n]}\n"); }

private:
    file_sink& m_out;
    int m_tracks = 0;
    trace_clock m_clock;
};

template <class Format>
class trace_observer final : public edge_observer<Format> {
public:
    trace_observer(trace_file& out, const std::string& controller)
        : m_out(out),
          m_track(out.add_track(controller)),
          m_dma_tracks{out.add_track(controller + ".dma A"), out.add_track(controller + ".dma B"),
                       out.add_track(controller + ".dma C")} {}

    bool wants_edges() const override { return false; }
    void on_edge(const edge_event<Format>&) override {}

    void on_step_begin(const step_event<Format>& e) override;

    void on_step_end(const step_event<Format>& e) override {
        m_last_end = e.time.value();
        close_step(m_last_end, false);
    }

    void on_transfer(const dma_transfer& t) override;

    // A chunk of K is a fold under ws and is, and its span says so.
    void on_job_begin(const matmul_job& job, const sc_core::sc_time&) override {
        m_chunk_word = is_stationary(job.run.dataflow) ? "fold " : "chunk ";
    }
    void on_job_end(const job_result& r) override { finish(r.end); }

    // The job ended at `end` (on_job_end; or a job that did not end, where the simulation stopped):
    // closes what is still open, a failed step among it.
    void finish(const sc_core::sc_time& end);

private:
    void close_step(std::uint64_t end, bool failed);
    void close_chunk(std::uint64_t end);
    void close_tile(std::uint64_t end);

    std::string span(int tid, const std::string& name, const char* cat, std::uint64_t begin,
                     std::uint64_t end, const std::string& args) const {
        return m_out.span(tid, name, cat, begin, end, args);
    }

    // The stream's track: A, B, or C for the outputs, the partial sums and the column vectors.
    int dma_track(dma_stream what) const {
        return m_dma_tracks[what == dma_stream::a ? 0 : what == dma_stream::b ? 1 : 2];
    }

    trace_file& m_out;
    const int m_track;          // the controller's steps
    const int m_dma_tracks[3];  // its DMA transfers, per stream
    bool m_tile_open = false, m_chunk_open = false, m_step_open = false, m_step_failed = false;
    std::size_t m_tile = 0;
    std::uint64_t m_chunk = 0;
    std::uint64_t m_tile_begin = 0, m_chunk_begin = 0, m_step_begin = 0, m_last_end = 0, m_step_edges = 0;
    step_kind m_step_kind = step_kind::clear;
    const char* m_chunk_word = "chunk ";
    std::string m_tile_name, m_tile_args;
    // The open tile's chunk and phase spans, and the open chunk's phases, until the tile is written.
    std::string m_tile_parts, m_chunk_phases;
};

template <class Format>
void trace_observer<Format>::on_step_begin(const step_event<Format>& e) {
    const tile& t = *e.step.where;
    const std::uint64_t now = e.time.value();
    if (m_tile_open && m_tile != t.index) close_tile(m_last_end);
    if (m_chunk_open && m_chunk != e.step.chunk) close_chunk(m_last_end);
    if (!m_tile_open) {
        m_tile_open = true;
        m_tile = t.index;
        m_tile_begin = now;
        m_tile_name = "tile " + std::to_string(t.index) + " (" + std::to_string(t.r0) + "," +
                      std::to_string(t.c0) + ")";
        m_tile_args = "\"tile\":" + std::to_string(t.index) + ",\"r0\":" + std::to_string(t.r0) +
                      ",\"c0\":" + std::to_string(t.c0) + ",\"rows\":" + std::to_string(t.rows) +
                      ",\"cols\":" + std::to_string(t.cols);
    }
    if (!m_chunk_open) {
        m_chunk_open = true;
        m_chunk = e.step.chunk;
        m_chunk_begin = now;
    }
    m_step_open = true;
    m_step_kind = e.step.kind;
    m_step_begin = now;
    m_step_edges = e.step.edges;
}

template <class Format>
void trace_observer<Format>::on_transfer(const dma_transfer& t) {
    const bool read = t.command == tlm::TLM_READ_COMMAND;
    char addr[24];
    std::snprintf(addr, sizeof addr, "0x%llx", static_cast<unsigned long long>(t.address));
    m_out.append(span(dma_track(t.what), std::string(read ? "read " : "write ") + to_string(t.what), "dma",
                      t.begin.value(), t.end.value(),
                      "\"bytes\":" + std::to_string(t.length) + ",\"address\":\"" + addr + "\",\"dmi\":" +
                          (t.dmi ? "true" : "false") + ",\"ok\":" + (t.ok ? "true" : "false") +
                          ",\"prefetch\":" + (t.prefetch ? "true" : "false")));
}

template <class Format>
void trace_observer<Format>::finish(const sc_core::sc_time& end) {
    const std::uint64_t t = end.value();
    if (m_step_open) close_step(t, true);
    if (m_tile_open) close_tile(m_step_failed ? t : m_last_end);
    m_step_failed = false;
}

template <class Format>
void trace_observer<Format>::close_step(std::uint64_t end, bool failed) {
    if (!m_step_open) return;
    m_step_open = false;
    m_step_failed = failed;
    // A step that takes none of the array's time (with double buffering, a load from the
    // scratchpads or a drain into the C scratchpad; its transfers are on the stream tracks) gets no
    // span: readers nest a zero-length span around the next one that starts at its time.
    if (end == m_step_begin && !failed) return;
    std::string args = m_tile_args + ",\"chunk\":" + std::to_string(m_chunk);
    if (m_step_kind == step_kind::advance || m_step_kind == step_kind::preload)
        args += ",\"edges\":" + std::to_string(m_step_edges);
    if (failed) args += ",\"failed\":true";
    m_chunk_phases += span(m_track, to_string(m_step_kind), "phase", m_step_begin, end, args);
}

template <class Format>
void trace_observer<Format>::close_chunk(std::uint64_t end) {
    if (!m_chunk_open) return;
    m_chunk_open = false;
    m_tile_parts += span(m_track, m_chunk_word + std::to_string(m_chunk), "chunk", m_chunk_begin, end,
                         m_tile_args + ",\"chunk\":" + std::to_string(m_chunk));
    m_tile_parts += m_chunk_phases;
    m_chunk_phases.clear();
}

template <class Format>
void trace_observer<Format>::close_tile(std::uint64_t end) {
    close_chunk(end);
    m_tile_open = false;
    m_out.append(span(m_track, m_tile_name, "tile", m_tile_begin, end, m_tile_args));
    m_out.append(m_tile_parts);
    m_tile_parts.clear();
}

SYSTOLIC_EXTERN_TEMPLATE(trace_observer)

}  // namespace systolic::observe
