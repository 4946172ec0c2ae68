// What systolic-partition reports: the counts of partition.h (enumerated for small spaces, closed
// forms for large ones), the block-level schedule, and their text and JSON forms (keys in
// docs/index-space.md).
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>

#include "partition.h"
#include "systolic/names.h"

namespace systolic {

enum class count_method { automatic, enumerate, closed_form };
inline constexpr enum_name<count_method> count_method_names[] = {
    {count_method::automatic, "auto", "enumerate up to ~10^7 points, closed forms beyond"},
    {count_method::enumerate, "enumerate", "visit every point and edge"},
    {count_method::closed_form, "closed-form", "count with the closed forms"},
};
static_assert(names_in_order(count_method_names));
constexpr const char* to_string(count_method m) {
    return name_of(count_method_names, m);
}
constexpr std::optional<count_method> parse_count_method(std::string_view name) {
    return parse_name(count_method_names, name);
}

// Automatic counting enumerates up to about 10^7 points (and a bounded number of edge visits).
constexpr std::uint64_t enumeration_point_limit = 10'000'000;
constexpr std::uint64_t enumeration_work_limit = 200'000'000;

struct analysis_options {
    count_method method = count_method::automatic;
    tile_order order = tile_order::row_major;
    std::uint64_t seed = 1;           // for tile_order::random
    std::uint64_t max_blocks = 4096;  // blocks listed with their own counts
    std::uint64_t max_visits = 4096;  // entries of the block visiting order listed
    bool list_edges = false;          // every crossing edge, for drawing (enumerated spaces only)
    std::uint64_t max_edges = 2'000'000;
};

struct partition_report {
    partition_spec spec;
    analysis_options options;
    bool enumerated = false;
    index3 grid{};
    partition_counts counts;
    std::vector<index3> visits;
    std::vector<crossing_edge> edges;  // with list_edges
};

// Throws std::invalid_argument (one line) for a spec or options that cannot be counted.
partition_report analyse(const partition_spec& spec, const analysis_options& options);

nlohmann::json to_json(const partition_report& r);
void print_text(std::ostream& os, const partition_report& r);

}  // namespace systolic
