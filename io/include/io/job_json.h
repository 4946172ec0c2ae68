// The counters of one job as every JSON report names them: systolic-tb's --json, systolic-run's job
// records and reports, systolic-vp's and systolic-soc's --json. Plain values, so that each
// executable fills them from what it has (a job's result, a record read back, a passive check) and
// the keys are declared in one place (job_counter_fields, json_fields.h), which both the writer and
// systolic-run's reader use; each report adds its own keys beside them.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "io/json_fields.h"

namespace systolic::io {

// What the scoreboard found, as far as every report that has one tells it. systolic-run's records
// keep the first three; the reports of a checked job (tb, vp, soc) have the rest too.
struct scoreboard_counts {
    std::uint64_t checked = 0, mismatches = 0;
    std::vector<std::string> errors;
    std::optional<std::uint64_t> writes, out_of_range_writes, partial_writes, missing, duplicates,
        protocol_violations;
    std::optional<bool> untouched_ok, edges_ok;
};

// All of it from a scoreboard's summary (verify::scoreboard_summary: io does not know verify).
template <class Summary>
scoreboard_counts scoreboard_counts_of(const Summary& s) {
    return {s.checked,
            s.mismatches,
            s.errors,
            s.writes,
            s.out_of_range_writes,
            s.partial_writes,
            s.missing,
            s.duplicates,
            s.protocol_violations,
            s.untouched_ok,
            s.edges_ok};
}

struct job_counters {
    std::uint64_t m = 0, k = 0, p = 0;
    std::uint64_t advance_edges = 0, macs_padded = 0, macs_real = 0;
    // Left out of the JSON where a report does not have them.
    std::optional<std::uint64_t> tiles, real_outputs, masked_outputs;
    std::optional<scoreboard_counts> scoreboard;
};

// The scoreboard's keys: {"checked", "mismatches", "errors"} and the counts it has of "writes",
// "out_of_range_writes", "partial_writes", "missing", "duplicates", "protocol_violations",
// "untouched_ok" and "edges_ok". checked is at most `elements` (C's), mismatches at most checked.
template <class V, class S>
void scoreboard_fields(V& v, S& s, std::uint64_t elements = ~std::uint64_t{0}) {
    v("checked", s.checked, range{0, elements});
    v("mismatches", s.mismatches, range{0, s.checked});
    v("errors", s.errors);
    v("writes", s.writes);
    v("out_of_range_writes", s.out_of_range_writes);
    v("partial_writes", s.partial_writes);
    v("missing", s.missing);
    v("duplicates", s.duplicates);
    v("protocol_violations", s.protocol_violations);
    v("untouched_ok", s.untouched_ok);
    v("edges_ok", s.edges_ok);
}

// {"m", "k", "p", "advance_edges", "macs_padded", "macs_real"}, those of "tiles", "real_outputs" and
// "masked_outputs" it has, and "scoreboard". C (any record with these members: job_counters,
// systolic-run's layer_record) may hold each optional one as a plain value, always written then;
// m, k and p are in [1, max_dimension] when read.
template <class V, class C>
void job_counter_fields(V& v, C& c, std::uint64_t max_dimension = ~std::uint64_t{0}) {
    v("m", c.m, range{1, max_dimension});
    v("k", c.k, range{1, max_dimension});
    v("p", c.p, range{1, max_dimension});
    v("advance_edges", c.advance_edges);
    v("macs_padded", c.macs_padded);
    v("macs_real", c.macs_real, range{0, c.macs_padded});
    v("tiles", c.tiles);
    v("real_outputs", c.real_outputs);
    v("masked_outputs", c.masked_outputs);
    v.object("scoreboard", c.scoreboard,
             [&](auto& sv, auto& s) { scoreboard_fields(sv, s, std::uint64_t(c.m) * std::uint64_t(c.p)); });
}

nlohmann::json job_json(const job_counters& c);

}  // namespace systolic::io
