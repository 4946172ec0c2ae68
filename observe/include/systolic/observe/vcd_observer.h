// Drives a vcd_writer from the controller's observer callbacks, so that a VCD shows every advance
// edge at its own simulated time (the controller's time: kernel time plus its quantum-keeper offset).
// Signals, under the SystemC names of the modules:
//   <controller>.advance   one pulse per advance edge: high at the edge, low half a clock later
//   <controller>.preload   (ws and is) one pulse per preload edge, as advance
//   <controller>.phase     0 idle, 1 clear, 2 load, 3 advance, 4 drain, 5 stall, 6 preload;
//                          .phase_name the same as text
//   <controller>.prefetch  high while the DRAM channel fetches operands for a later tile (--buffers
//                          double), so the overlap of a tile's advance with the next one's loads shows
//   <controller>.tile, .r0, .c0, .chunk   the output tile (index in visiting order), its origin, the K chunk
//   <controller>.c_write   one pulse per write to C (only real rows are ever written), with
//                          .c_addr, .c_row (global row of C) and .c_len (bytes)
//   <array>.row_<i>.pe_<i>_<j>.{a, a_valid, b, b_valid, acc, terms}   for the traced PEs (os): the A
//                          and B tokens the PE holds (and passes on), its accumulator and consumed terms
//   <array>.row_<i>.pe_<i>_<j>.{stream, stream_valid, stationary, psum, terms}   (ws and is): the
//                          streamed token (A's in ws, B's in is) moving east, the stationary register
//                          (B's element in ws, A's in is) that the preload fills, the partial sum
//                          moving south, and the consumed terms; pe_registers says which set a VCD has
// Transfers carry their own times (with double buffering the DRAM channel runs ahead of or behind
// the array), so their changes wait in a queue and are written when the file's time reaches them.
// PE values are sampled after each edge (preload edges too) and after each clear. Integers are wires (two's
// complement), floating-point values VCD reals. The timescale is the SystemC time resolution. save_file()
// gives GTKWave's save file for the VCD (gtkw_file.h), its rows declared here with the signals. An observer
// declares its signals when it is made; several may share one writer (an accelerator's controllers), and the
// caller ends the writer's definitions (vcd_writer::end_definitions) once they all exist, before the
// simulation runs.
#pragma once

#include <cstdint>
#include <iterator>
#include <limits>
#include <queue>
#include <string>
#include <systemc>
#include <type_traits>
#include <vector>

#include "systolic/edge_observer.h"
#include "systolic/fabric.h"
#include "systolic/format_instances.h"
#include "systolic/job.h"
#include "systolic/observe/gtkw_file.h"
#include "systolic/observe/pe_selection.h"
#include "systolic/observe/vcd_writer.h"
#include "systolic/systolic_array.h"

namespace systolic::observe {

// The phase signal's values: 0 while idle, 1 + the step's kind while a step runs (step_kind_names'
// order). The legend in the file's header and in docs/waveforms.md says the same.
constexpr std::uint8_t idle_phase = 0;
constexpr std::uint8_t phase_of(step_kind k) {
    return static_cast<std::uint8_t>(1 + static_cast<int>(k));
}
constexpr const char* phase_name(std::uint8_t phase) {
    return phase == idle_phase ? "idle" : to_string(static_cast<step_kind>(phase - 1));
}
constexpr unsigned phase_width = 3;

// The PE registers a VCD declares: an output-stationary PE's, a weight- or input-stationary PE's,
// or both (an accelerator, whose jobs each choose their dataflow); terms in every case.
enum class pe_registers { output_stationary, stationary, both };
constexpr pe_registers pe_registers_for(dataflow_kind df) {
    return is_stationary(df) ? pe_registers::stationary : pe_registers::output_stationary;
}
static_assert(std::size(step_kind_names) < (1u << phase_width), "the phase signal holds every step kind");
inline std::string vcd_phase_legend() {
    std::string legend = "phase: " + std::to_string(idle_phase) + " " + phase_name(idle_phase);
    for (const auto& e : step_kind_names)
        legend += ", " + std::to_string(phase_of(e.value)) + " " + e.name;
    return legend;
}

template <class Format>
class vcd_observer final : public edge_observer<Format> {
public:
    using operand_type = typename Format::operand_type;
    using accumulator_type = typename Format::accumulator_type;

    // The PEs of one array: the state, and the SystemC name of the array module, under which the PEs
    // are row_<i>.pe_<i>_<j> ("tb.array", or "tb.fabric.array_0_1_0").
    struct traced_array {
        const array_core<Format>* core;
        std::string name;
    };

    vcd_observer(vcd_writer& w, const systolic_array<Format>& array, const std::string& controller,
                 const pe_selection& sel, const sc_core::sc_time& clock,
                 pe_registers regs = pe_registers::output_stationary)
        : vcd_observer(w, {{&array.core(), array.name()}}, controller, sel, clock, nullptr, regs) {}

    // A fabric: the traced PEs of every array (sel in each array's own coordinates), and a strobe per
    // link, <fabric>.link_<kind>_<r>_<c>_<d>_to_<r>_<c>_<d>, high for half a clock on every edge that
    // carried a word.
    vcd_observer(vcd_writer& w, const fabric<Format>& f, const std::string& controller,
                 const pe_selection& sel, const sc_core::sc_time& clock)
        : vcd_observer(w, arrays_of(f), controller, sel, clock, &f) {}

    vcd_observer(vcd_writer& w, const std::vector<traced_array>& arrays, const std::string& controller,
                 const pe_selection& sel, const sc_core::sc_time& clock, const fabric<Format>* fab = nullptr,
                 pe_registers regs = pe_registers::output_stationary);

    // A GTKWave save file for this VCD (`dumpfile`, the path GTKWave opens): every signal under
    // a name that places it, the view on the first tile with markers A and B at its first and last
    // edge. Complete after finish().
    std::string save_file(const std::string& dumpfile) const;

    void on_edge(const edge_event<Format>& e) override;
    void on_step_begin(const step_event<Format>& e) override;
    void on_step_end(const step_event<Format>& e) override;
    void on_transfer(const dma_transfer& t) override;

    void on_job_begin(const matmul_job& job, const sc_core::sc_time&) override { m_c = job.c; }
    void on_job_end(const job_result& r) override { finish(r.end); }

    // The job ended at `end` (on_job_end; or a job that did not end, where the simulation stopped):
    // the last pulses fall, the phase goes idle.
    void finish(const sc_core::sc_time& end);

private:
    struct pe_ids {
        vcd_writer::id a, a_valid, b, b_valid, acc, terms;      // os's (terms: every dataflow's)
        vcd_writer::id stream, stream_valid, stationary, psum;  // ws's and is's
    };
    static constexpr std::uint64_t never = std::numeric_limits<std::uint64_t>::max();

    // A change a transfer causes, due at `time`. Of changes due at once, the queue gives the one
    // queued first, except that a prefetch ends after another begins (so back-to-back prefetches
    // keep the signal high instead of a zero-width dip).
    struct change {
        enum kind_t : std::uint8_t { c_write_rise, c_write_fall, prefetch_rise, prefetch_fall };
        std::uint64_t time;
        std::uint64_t seq;
        kind_t kind;
        std::uint64_t addr = 0, row = 0, len = 0;  // c_write_rise: the write; c_write_fall: its number
        bool operator>(const change& o) const {
            const bool late = kind == prefetch_fall, o_late = o.kind == prefetch_fall;
            if (time != o.time) return time > o.time;
            if (late != o_late) return late;
            return seq > o.seq;
        }
    };
    void push(change c) {
        c.seq = m_seq++;
        m_queue.push(c);
    }
    void apply(const change& c);

    void set_phase(std::uint8_t ph) {
        m_w.set(m_phase, std::uint64_t(ph));
        m_w.set_string(m_phase_name, phase_name(ph));
    }

    // A wire in the VCD, and its row in the save file's group.
    vcd_writer::id wire(gtkw_group& g, const std::string& path, unsigned width, gtkw_signal::kind shown,
                        const std::string& alias = "") {
        g.signals.push_back({path, width, shown, alias});
        return m_w.add_wire(path, width);
    }
    vcd_writer::id add_accumulator(gtkw_group& g, const std::string& path, const std::string& alias) {
        if constexpr (std::is_floating_point_v<accumulator_type>) {
            g.signals.push_back({path, 1, gtkw_signal::kind::real, alias});
            return m_w.add_real(path, true);
        } else {
            return wire(g, path, 8 * sizeof(accumulator_type), gtkw_signal::kind::signed_decimal, alias);
        }
    }
    void set_accumulator(vcd_writer::id v, accumulator_type x) {
        if constexpr (std::is_floating_point_v<accumulator_type>)
            m_w.set_real(v, double(x));
        else
            m_w.set(v, static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
    }
    vcd_writer::id add_operand(gtkw_group& g, const std::string& path, const std::string& alias) {
        if constexpr (Format::is_integer)
            return wire(g, path, 8 * sizeof(operand_type), gtkw_signal::kind::signed_decimal, alias);
        g.signals.push_back({path, 1, gtkw_signal::kind::real, alias});
        return m_w.add_real(path, true);  // fp32 and bf16 operands are exact as floats
    }

    // Moves the file's time to t (after the changes due by then are written); returns t in units.
    std::uint64_t at(const sc_core::sc_time& time) {
        const std::uint64_t t = time.value();
        flush_due(t);
        m_w.set_time(t);
        return t;
    }

    void flush_due(std::uint64_t until);

    void set_operand(vcd_writer::id v, operand_type x) {
        if constexpr (Format::is_integer) {
            m_w.set(v, static_cast<std::uint64_t>(static_cast<std::int64_t>(x)));
        } else {
            m_w.set_real(v, double(Format::widen(x)));
        }
    }

    void sample();                                     // os: every traced array's PEs
    void sample(const stationary_core<Format>& core);  // ws, is

    static std::vector<traced_array> arrays_of(const fabric<Format>& f) {
        std::vector<traced_array> v;
        for (std::size_t a = 0; a < f.arrays(); ++a)
            v.push_back({&f.state().core(a), f.array(a).name()});
        return v;
    }
    // "0_1_2": an array's place in the fabric.
    static std::string coords(const fabric_engine<Format>& st, std::size_t a) {
        const auto rcd = st.position(a);
        return std::to_string(rcd[0]) + "_" + std::to_string(rcd[1]) + "_" + std::to_string(rcd[2]);
    }

    vcd_writer& m_w;
    pe_selection m_sel;
    matrix_layout m_c;  // the running job's C, for c_row
    std::uint64_t m_half = 1;
    vcd_writer::id m_advance, m_phase, m_phase_name, m_tile, m_r0, m_c0, m_chunk, m_c_write, m_c_addr,
        m_c_row, m_c_len, m_prefetch, m_preload = 0;
    std::vector<traced_array> m_arrays;
    const fabric<Format>* m_fabric = nullptr;
    bool m_os_pes, m_stationary_pes;      // which PE registers are declared (pe_registers)
    std::vector<pe_ids> m_pes;            // the traced PEs, array by array, row-major
    std::vector<vcd_writer::id> m_links;  // a fabric's link strobes, in the engine's order
    std::uint64_t m_advance_fall = never;
    std::priority_queue<change, std::vector<change>, std::greater<change>> m_queue;
    std::uint64_t m_seq = 0;
    std::uint64_t m_c_writes = 0;           // C writes begun: a write's pulse falls unless a later one began
    std::uint64_t m_prefetches_active = 0;  // prefetch transfers under way at the file's time
    std::vector<gtkw_group> m_save;         // the save file's groups, declared with the signals
    gtkw_view m_view;                       // the first tile, as the save file shows it
    std::size_t m_first_tile = 0;
    bool m_first_tile_seen = false, m_first_tile_done = false;
};

template <class Format>
vcd_observer<Format>::vcd_observer(vcd_writer& w, const std::vector<traced_array>& arrays,
                                   const std::string& controller, const pe_selection& sel,
                                   const sc_core::sc_time& clock, const fabric<Format>* fab,
                                   pe_registers regs)
    : m_w(w),
      m_sel(sel),
      m_arrays(arrays),
      m_fabric(fab),
      m_os_pes(regs != pe_registers::stationary),
      m_stationary_pes(regs != pe_registers::output_stationary) {
    const auto res = sc_core::sc_get_time_resolution();
    m_half = std::max<std::uint64_t>(1, clock.value() / 2);
    m_w.set_timescale(res.to_string());
    m_w.add_comment(vcd_phase_legend());
    m_w.add_comment("advance: one pulse per advance edge, rising at the edge (one clock of " +
                    clock.to_string() + " after the previous edge), falling half a clock later");
    m_view.clock = clock.value();
    const std::string p = controller + ".";
    using k = gtkw_signal::kind;
    // The save file's groups: the controller, then each kind of PE register the VCD has.
    m_save.push_back({"controller"});
    if (m_os_pes) m_save.push_back({"accumulators"});
    if (m_stationary_pes) m_save.insert(m_save.end(), {{"stationary registers"}, {"partial sums"}});
    m_save.insert(m_save.end(), {{"terms"}, {"tokens"}});
    gtkw_group& ctl = m_save[0];
    gtkw_group& accs = m_save[1];
    gtkw_group& stationaries = m_save[m_os_pes ? 2 : 1];
    gtkw_group& psums = m_save[m_os_pes ? 3 : 2];
    gtkw_group& terms = m_save[m_save.size() - 2];
    gtkw_group& all_tokens = m_save.back();
    m_advance = wire(ctl, p + "advance", 1, k::bit);
    m_phase = wire(ctl, p + "phase", phase_width, k::decimal);
    m_phase_name = m_w.add_string(p + "phase_name", "idle");
    ctl.signals.push_back({p + "phase_name", 1, k::text, ""});
    m_tile = wire(ctl, p + "tile", 32, k::decimal);
    m_r0 = wire(ctl, p + "r0", 32, k::decimal);
    m_c0 = wire(ctl, p + "c0", 32, k::decimal);
    m_chunk = wire(ctl, p + "chunk", 32, k::decimal);
    m_c_write = wire(ctl, p + "c_write", 1, k::bit);
    m_c_addr = wire(ctl, p + "c_addr", 64, k::hex);
    m_c_row = wire(ctl, p + "c_row", 32, k::decimal);
    m_c_len = wire(ctl, p + "c_len", 32, k::decimal);
    m_prefetch = wire(ctl, p + "prefetch", 1, k::bit);
    if (m_stationary_pes) {
        m_preload = wire(ctl, p + "preload", 1, k::bit);
        m_w.add_comment("preload: one pulse per preload edge (ws, is), as advance");
    }
    m_w.add_comment(
        "prefetch: high while the DRAM channel fetches a later tile's operands (--buffers double)");
    for (const traced_array& ta : m_arrays) {
        // The row names place each PE: pe_1_0_acc, or array_0_1_0_pe_1_0_acc on a fabric. No dots:
        // GTKWave shows only the last part of a dotted name, an alias's too.
        const std::string where = m_fabric ? ta.name.substr(ta.name.rfind('.') + 1) + "_" : "";
        for (std::size_t i = 0; i < ta.core->rows(); ++i) {
            for (std::size_t j = 0; j < ta.core->cols(); ++j) {
                if (!sel.contains(i, j)) continue;
                const std::string pe_name = "pe_" + std::to_string(i) + "_" + std::to_string(j);
                const std::string pe = ta.name + ".row_" + std::to_string(i) + "." + pe_name + ".";
                const std::string alias = where + pe_name + "_";
                gtkw_group tokens{where + pe_name, true};
                pe_ids ids{};
                if (m_os_pes) {
                    ids.a = add_operand(tokens, pe + "a", alias + "a");
                    ids.a_valid = wire(tokens, pe + "a_valid", 1, k::bit, alias + "a_valid");
                    ids.b = add_operand(tokens, pe + "b", alias + "b");
                    ids.b_valid = wire(tokens, pe + "b_valid", 1, k::bit, alias + "b_valid");
                    ids.acc = add_accumulator(accs, pe + "acc", alias + "acc");
                }
                if (m_stationary_pes) {
                    ids.stream = add_operand(tokens, pe + "stream", alias + "stream");
                    ids.stream_valid = wire(tokens, pe + "stream_valid", 1, k::bit, alias + "stream_valid");
                    ids.stationary = add_operand(stationaries, pe + "stationary", alias + "stationary");
                    ids.psum = add_accumulator(psums, pe + "psum", alias + "psum");
                }
                ids.terms = wire(terms, pe + "terms", 32, k::decimal, alias + "terms");
                all_tokens.groups.push_back(std::move(tokens));
                m_pes.push_back(ids);
            }
        }
    }
    if (m_fabric) {
        m_w.add_comment("link_*: one pulse per edge on which the link carried a word (fabric)");
        m_save.push_back({"links", true});
        const auto& st = m_fabric->state();
        for (const fabric_link& l : st.links())
            m_links.push_back(wire(m_save.back(),
                                   std::string(m_fabric->name()) + ".link_" + to_string(l.kind) + "_" +
                                       coords(st, l.from) + "_to_" + coords(st, l.to),
                                   1, k::bit));
    }
}

template <class Format>
std::string vcd_observer<Format>::save_file(const std::string& dumpfile) const {
    return gtkw_file(dumpfile, m_save, m_view,
                     {"GTKWave save file written by systolic-tb --gtkw for this run's --vcd.",
                      "Times are in the VCD's units (1 advance edge = 1 clock). " + vcd_phase_legend() + ".",
                      "Markers A and B: the first tile's first and last edge."});
}

template <class Format>
void vcd_observer<Format>::on_edge(const edge_event<Format>& e) {
    const std::uint64_t t = at(e.time);
    if (!m_first_tile_done) {
        if (!m_view.has_edges) m_view.first_edge = t;
        m_view.has_edges = true;
        m_view.last_edge = t;
    }
    m_w.set(e.step.kind == step_kind::preload && m_stationary_pes ? m_preload : m_advance, 1);
    m_advance_fall = t + m_half;
    if (m_fabric) {
        const auto& links = m_fabric->state().links();
        for (std::size_t l = 0; l < links.size(); ++l)
            if (links[l].last_edge == e.edge) m_w.set(m_links[l], 1);
    }
    if (e.array) sample();
    if (e.stationary && m_stationary_pes) sample(*e.stationary);
}

template <class Format>
void vcd_observer<Format>::on_step_begin(const step_event<Format>& e) {
    at(e.time);
    const plan_step& s = e.step;
    if (!m_first_tile_seen) {
        m_first_tile_seen = true;
        m_first_tile = s.where->index;
        m_view.tile_begin = e.time.value();
    } else if (!m_first_tile_done && s.where->index != m_first_tile) {
        m_first_tile_done = true;
        m_view.tile_end = e.time.value();
    }
    set_phase(phase_of(s.kind));
    m_w.set(m_tile, s.where->index);
    m_w.set(m_r0, s.where->r0);
    m_w.set(m_c0, s.where->c0);
    m_w.set(m_chunk, s.chunk);
}

template <class Format>
void vcd_observer<Format>::on_step_end(const step_event<Format>& e) {
    if (e.step.kind != step_kind::clear || !(e.array || (e.stationary && m_stationary_pes))) return;
    at(e.time);
    if (e.array) sample();
    if (e.stationary) sample(*e.stationary);
}

template <class Format>
void vcd_observer<Format>::on_transfer(const dma_transfer& t) {
    if (!t.ok) return;
    if (t.prefetch && t.end > t.begin) {
        push({t.begin.value(), 0, change::prefetch_rise});
        push({t.end.value(), 0, change::prefetch_fall});
    }
    if (t.command != tlm::TLM_WRITE_COMMAND || t.what != dma_stream::c) return;
    change c{t.begin.value(), 0, change::c_write_rise};
    c.addr = t.address;
    c.row = (t.address - m_c.base) / m_c.row_stride;
    c.len = t.length;
    push(c);
}

template <class Format>
void vcd_observer<Format>::apply(const change& c) {
    switch (c.kind) {
        case change::c_write_rise: {
            m_w.set(m_c_write, 1);
            m_w.set(m_c_addr, c.addr);
            m_w.set(m_c_row, c.row);
            m_w.set(m_c_len, c.len);
            change fall{c.time + m_half, 0, change::c_write_fall};
            fall.addr = ++m_c_writes;
            push(fall);
            break;
        }
        case change::c_write_fall:
            if (c.addr == m_c_writes) m_w.set(m_c_write, 0);
            break;
        case change::prefetch_rise:
            if (m_prefetches_active++ == 0) m_w.set(m_prefetch, 1);
            break;
        case change::prefetch_fall:
            if (--m_prefetches_active == 0) m_w.set(m_prefetch, 0);
            break;
    }
}

template <class Format>
void vcd_observer<Format>::finish(const sc_core::sc_time& end) {
    if (!m_first_tile_done) m_view.tile_end = end.value();
    m_first_tile_done = true;
    at(end);
    flush_due(never);
    m_w.set_time(end.value());
    set_phase(idle_phase);
}

template <class Format>
void vcd_observer<Format>::flush_due(std::uint64_t until) {
    for (;;) {
        const std::uint64_t queued = m_queue.empty() ? never : m_queue.top().time;
        // Of an edge's fall and a transfer's change due at once, the fall comes first.
        const bool advance = m_advance_fall <= queued;
        const std::uint64_t due = advance ? m_advance_fall : queued;
        if (due == never || (due > until && until != never)) return;
        m_w.set_time(due);
        if (advance) {
            m_w.set(m_advance, 0);
            if (m_stationary_pes) m_w.set(m_preload, 0);
            for (const vcd_writer::id l : m_links)  // link strobes rise with an edge and fall with it
                m_w.set(l, 0);
            m_advance_fall = never;
        } else {
            const change c = m_queue.top();
            m_queue.pop();
            apply(c);
        }
    }
}

template <class Format>
void vcd_observer<Format>::sample() {
    if (!m_os_pes) return;
    std::size_t k = 0;
    for (const traced_array& traced : m_arrays) {
        const array_core<Format>& a = *traced.core;
        for (std::size_t i = m_sel.row0; m_sel.any && i <= m_sel.row1; ++i) {
            for (std::size_t j = m_sel.col0; j <= m_sel.col1; ++j, ++k) {
                const pe_ids& ids = m_pes[k];
                const auto ta = a.a(i, j), tb = a.b(i, j);
                set_operand(ids.a, ta.value);
                m_w.set(ids.a_valid, ta.valid);
                set_operand(ids.b, tb.value);
                m_w.set(ids.b_valid, tb.valid);
                set_accumulator(ids.acc, a.accumulator(i, j));
                m_w.set(ids.terms, a.consumed(i, j));
            }
        }
    }
}

template <class Format>
void vcd_observer<Format>::sample(const stationary_core<Format>& a) {
    std::size_t k = 0;
    for (std::size_t i = m_sel.row0; m_sel.any && i <= m_sel.row1; ++i) {
        for (std::size_t j = m_sel.col0; j <= m_sel.col1; ++j, ++k) {
            const pe_ids& ids = m_pes[k];
            const auto ts = a.a(i, j);
            set_operand(ids.stream, ts.value);
            m_w.set(ids.stream_valid, ts.valid);
            set_operand(ids.stationary, a.weight(i, j));
            set_accumulator(ids.psum, a.psum(i, j));
            m_w.set(ids.terms, a.consumed(i, j));
        }
    }
}

SYSTOLIC_EXTERN_TEMPLATE(vcd_observer)

}  // namespace systolic::observe
