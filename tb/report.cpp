#include "report.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace systolic::tb {

nlohmann::json make_report(const report_input& in) {
    const job_result& r = *in.result;
    const scoreboard_summary& sb = *in.scoreboard;
    const auto counts = count_job(in.shape, in.n);

    nlohmann::json tiles = nlohmann::json::array();
    for (const auto& t : r.tiles) {
        tiles.push_back({{"index", t.where.index},
                         {"origin", {t.where.r0, t.where.c0}},
                         {"advance_edges", t.advance_edges},
                         {"real_outputs", t.real_outputs},
                         {"masked_outputs", t.masked_outputs}});
    }
    auto ns = [](const sc_core::sc_time& t) { return t.to_seconds() * 1e9; };
    return {
        {"array", in.n},
        {"m", in.shape.m},
        {"k", in.shape.k},
        {"p", in.shape.p},
        {"dtype", in.dtype},
        {"order", in.order},
        {"tiles", r.tiles.size()},
        {"advance_edges", r.advance_edges},
        {"advance_edges_per_tile", counts.advance_edges_per_tile},
        {"macs_padded", r.macs_padded},
        {"macs_real", r.macs_real},
        {"masked_outputs", r.masked_outputs},
        {"utilization", r.macs_padded ? double(r.macs_real) / double(r.macs_padded) : 0.0},
        {"sim_time_ns", ns(r.end - r.start)},
        {"phase_time_ns",
         {{"clear", ns(r.phases.clear)},
          {"load", ns(r.phases.load)},
          {"advance", ns(r.phases.advance)},
          {"drain", ns(r.phases.drain)}}},
        {"status", to_string(r.status)},
        {"error", r.error},
        {"tiles_detail", tiles},
        {"scoreboard",
         {{"checked", sb.checked},
          {"mismatches", sb.mismatches},
          {"writes", sb.writes},
          {"out_of_range_writes", sb.out_of_range_writes},
          {"missing", sb.missing},
          {"duplicates", sb.duplicates},
          {"untouched_ok", sb.untouched_ok},
          {"edges_ok", sb.edges_ok},
          {"errors", sb.errors}}},
        {"pass", sb.pass()},
    };
}

void write_file_atomically(const std::string& path, const std::string& text) {
    const std::string tmp = path + ".tmp." + std::to_string(::getpid());
    {
        std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
        if (!out) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
        out << text;
        out.flush();
        if (!out) {
            std::remove(tmp.c_str());
            throw std::runtime_error(path + ": write failed");
        }
    }
    if (std::rename(tmp.c_str(), path.c_str()) != 0) {
        const std::string why = std::strerror(errno);
        std::remove(tmp.c_str());
        throw std::runtime_error(path + ": cannot write: " + why);
    }
}

}  // namespace systolic::tb
