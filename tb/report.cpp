#include "report.h"

#include "cli_options.h"
#include "io/job_json.h"

#include <cmath>
#include <sstream>

namespace systolic::tb {

namespace {

nlohmann::json traffic_json(const memory_traffic& t) {
    return {
        {"a_read", t.a_read}, {"b_read", t.b_read}, {"c_written", t.c_written}, {"partials", t.partials()}};
}

nlohmann::json fabric_json(const verify::fabric_outcome& f, const memory_traffic& traffic) {
    nlohmann::json links = nlohmann::json::array();
    for (const auto& l : f.links)
        links.push_back({{"from", l.from},
                         {"to", l.to},
                         {"kind", l.kind},
                         {"words", l.words},
                         {"padding_words", l.padding_words}});
    return {
        {"shape", std::to_string(f.rows) + "x" + std::to_string(f.cols) + "x" + std::to_string(f.depth)},
        {"rows", f.rows},
        {"cols", f.cols},
        {"depth", f.depth},
        {"array", f.n},
        {"link_latency", f.link_latency},
        {"threads", f.threads},
        {"passes", f.passes},
        {"links", links},
        {"memory_bytes", traffic_json(traffic)},
        {"single_array_memory_bytes", traffic_json(f.single_array)},
        {"halo_words", {{"a", f.halo_words("a")}, {"b", f.halo_words("b")}, {"c", f.halo_words("c")}}},
        {"padding_halo_words",
         {{"a", f.halo_words("a", true)}, {"b", f.halo_words("b", true)}, {"c", f.halo_words("c", true)}}}};
}

// A limit of the memory system: null when there is none (0, printed "inf").
template <class T>
nlohmann::json limit_json(T v) {
    return v == 0 ? nlohmann::json() : nlohmann::json(v);
}

nlohmann::json stream_json(const stream_bytes& s) {
    return {{"dram", s.dram}, {"array", s.array}};
}

// A measured rate: 0 is none, not unlimited.
std::string rate_text(double bytes_per_cycle) {
    return bytes_per_cycle == 0 ? "0" : bandwidth_text(bytes_per_cycle);
}

}  // namespace

nlohmann::json memory_json(const memory_config& config, const memory_report& m) {
    return {{"buffers", to_string(config.buffers)},
            {"a_sram", limit_json(config.a_sram)},
            {"b_sram", limit_json(config.b_sram)},
            {"c_sram", limit_json(config.c_sram)},
            {"dram_bandwidth", limit_json(config.dram_bandwidth)},
            {"stall_cycles", m.stall_cycles},
            {"prefetch_cycles", m.prefetch_cycles},
            {"total_cycles", m.total_cycles},
            {"bytes", {{"a", stream_json(m.a)}, {"b", stream_json(m.b)}, {"c", stream_json(m.c)}}},
            {"average_bandwidth", m.average_bandwidth},
            {"peak_bandwidth", m.peak_bandwidth},
            // Infinite when the latencies alone stall: no bandwidth is enough (JSON has no infinity).
            {"zero_stall_bandwidth",
             std::isinf(m.zero_stall_bandwidth) ? nlohmann::json() : nlohmann::json(m.zero_stall_bandwidth)},
            {"streamed_tiles", m.streamed_tiles},
            {"stream_k_chunk", m.stream_k_chunk}};
}

std::string memory_summary(const memory_config& config, const memory_report& m) {
    std::ostringstream os;
    os << "memory: buffers " << to_string(config.buffers);
    if (config.buffers != buffer_mode::none)
        os << " (A " << sram_text(config.a_sram) << ", B " << sram_text(config.b_sram) << ", C "
           << sram_text(config.c_sram) << ")";
    os << ", DRAM bandwidth " << bandwidth_text(config.dram_bandwidth)
       << (config.dram_bandwidth == 0 ? "" : " bytes/cycle") << "\n";
    os << "stalls: " << m.stall_cycles << " cycles (prefetch " << m.prefetch_cycles << " cycles, total "
       << m.total_cycles << " cycles)\n";
    os << "bytes DRAM<->scratchpad: A " << m.a.dram << ", B " << m.b.dram << ", C " << m.c.dram
       << "; scratchpad<->array: A " << m.a.array << ", B " << m.b.array << ", C " << m.c.array << "\n";
    os << "DRAM bandwidth (bytes/cycle): average " << rate_text(m.average_bandwidth) << ", peak "
       << rate_text(m.peak_bandwidth) << ", for zero stalls " << rate_text(m.zero_stall_bandwidth) << "\n";
    if (m.streamed_tiles > 0)
        os << "streamed tiles: " << m.streamed_tiles << " (operands over the scratchpads, in K chunks of "
           << m.stream_k_chunk << ")\n";
    return os.str();
}

nlohmann::json make_report(const report_input& in) {
    const job_result& r = *in.result;
    const verify::scoreboard_summary& sb = *in.scoreboard;
    const matmul_job& job = *in.job;
    const auto counts = count_job(job.shape, array_shape{in.rows, in.cols}, job.run.k_tile, job.run.dataflow);

    nlohmann::json tiles = nlohmann::json::array();
    for (const auto& t : r.tiles) {
        tiles.push_back({{"index", t.where.index},
                         {"origin", {t.where.r0, t.where.c0}},
                         {"advance_edges", t.advance_edges},
                         {"advance_edges_per_chunk", t.advance_edges_per_chunk},
                         {"preload_edges", t.preload_edges},
                         {"macs_padded", t.macs_padded},
                         {"macs_real", t.macs_real},
                         {"real_outputs", t.real_outputs},
                         {"masked_outputs", t.masked_outputs}});
    }
    auto ns = [](const sc_core::sc_time& t) { return t.to_seconds() * 1e9; };
    const auto per_tile = uniform_edges_per_tile(r);
    const auto& q = job.run.quant;
    nlohmann::json j =
        io::job_json({job.shape.m, job.shape.k, job.shape.p, r.advance_edges, r.macs_padded, r.macs_real,
                      r.tiles.size(), std::nullopt, r.masked_outputs, io::scoreboard_counts_of(sb)});
    j.update({
        // "array": N for a square array (as before rectangular arrays existed), "RxC" otherwise.
        {"array", in.rows == in.cols
                      ? nlohmann::json(in.rows)
                      : nlohmann::json(std::to_string(in.rows) + "x" + std::to_string(in.cols))},
        {"array_rows", in.rows},
        {"array_cols", in.cols},
        {"dtype", in.dtype},
        {"accumulator_dtype", in.accumulator_dtype},
        {"order", to_string(job.run.order)},
        {"k_tile", effective_k_tile(job.shape.k, job.run.k_tile)},
        {"k_chunks", counts.k_chunks},
        {"k_policy", to_string(job.run.policy)},
        {"overflow",
         {{"mode", to_string(job.run.overflow)},
          {"wraps", job.run.overflow == overflow_mode::wrap ? r.overflows + r.partial_overflows : 0},
          {"saturations",
           job.run.overflow == overflow_mode::saturate ? r.overflows + r.partial_overflows : 0}}},
        {"output",
         {{"dtype", q.enabled ? "int8" : in.accumulator_dtype},
          // Per-column vectors: "per_column" in place of the number (the values are the input files').
          {"scale", !q.enabled  ? nlohmann::json()
                    : q.columns ? nlohmann::json("per_column")
                                : nlohmann::json(q.scale)},
          {"zero_point", !q.enabled                            ? nlohmann::json()
                         : q.columns && q.columns->zero_points ? nlohmann::json("per_column")
                                                               : nlohmann::json(q.zero_point)},
          {"rounding", q.enabled ? nlohmann::json(std::string(to_string(q.rounding))) : nlohmann::json()},
          {"quantize_partials", q.per_partial},
          {"saturated", r.saturated_outputs},
          {"differs_from_quantize_once", in.differs_from_quantize_once}}},
        {"inject", in.inject},
        {"engine", to_string(r.engine)},
        {"dataflow", to_string(r.dataflow)},
        {"counts", counts_kind(r.engine)},
        {"preload_edges", r.preload_edges},
        {"advance_edges_per_tile", per_tile ? nlohmann::json(*per_tile) : nlohmann::json()},
        {"utilization", r.completed() && r.macs_padded
                            ? nlohmann::json(double(r.macs_real) / double(r.macs_padded))
                            : nlohmann::json()},
        {"sim_time_ns", ns(r.end - r.start)},
        {"phase_time_ns",
         {{"clear", ns(r.phases.clear)},
          {"load", ns(r.phases.load)},
          {"preload", ns(r.phases.preload)},
          {"advance", ns(r.phases.advance)},
          {"drain", ns(r.phases.drain)},
          {"stall", ns(r.phases.stall)}}},
        {"status", to_string(r.status)},
        {"error", r.error},
        {"tiles_detail", tiles},
        {"memory_bytes", traffic_json(r.traffic)},
        {"memory", memory_json(job.run.memory, r.memory)},
        {"fabric", in.fabric ? fabric_json(*in.fabric, r.traffic) : nlohmann::json()},
        {"pass", sb.pass()},
    });
    return j;
}

}  // namespace systolic::tb
