// The named choices of a job and the statuses it ends with, as the command lines, the reports and
// the logs spell them. Plain C++ (no SystemC), so that a command-line parser can hold them.
#pragma once

#include <optional>
#include <string_view>

#include "systolic/names.h"

namespace systolic {

// How a tile's reduction is split into chunks (see counting.h): keep the PE accumulators between
// chunks, or drain each chunk's wide partial sums to a buffer and combine them there.
enum class k_policy { preserve, partials };
inline constexpr enum_name<k_policy> k_policy_names[] = {
    {k_policy::preserve, "preserve", "keep the accumulators between chunks, drain once"},
    {k_policy::partials, "partials", "drain each chunk's wide partial sums and combine them in memory"},
};
static_assert(names_in_order(k_policy_names));
constexpr const char* to_string(k_policy policy) {
    return name_of(k_policy_names, policy);
}
constexpr std::optional<k_policy> parse_k_policy(std::string_view name) {
    return parse_name(k_policy_names, name);
}

// How a chunk runs (see engine.h): stepped one advance edge at a time (counters are what the PEs
// did), or computed by a blocked loop nest with the same result (counters from the counting rules).
enum class engine_kind { cycle, functional };
inline constexpr enum_name<engine_kind> engine_kind_names[] = {
    {engine_kind::cycle, "cycle", "step the array one advance edge at a time"},
    {engine_kind::functional, "functional", "compute each chunk with a blocked loop nest, counters modelled"},
};
static_assert(names_in_order(engine_kind_names));
constexpr const char* to_string(engine_kind kind) {
    return name_of(engine_kind_names, kind);
}
constexpr std::optional<engine_kind> parse_engine_kind(std::string_view name) {
    return parse_name(engine_kind_names, name);
}

// What stays in the PEs while the other operands stream past (docs/dataflows.md). Output
// stationary keeps one C element per PE for the whole K; weight and input stationary keep a block of
// B (or of A's transpose) for a fold of at most R terms, stream A's rows (or B's columns) through
// it, and combine the folds' partial sums in the tile's accumulators.
enum class dataflow_kind { os, ws, is };
inline constexpr enum_name<dataflow_kind> dataflow_kind_names[] = {
    {dataflow_kind::os, "os", "output stationary: each PE keeps one C element over the whole K"},
    {dataflow_kind::ws, "ws", "weight stationary: a block of B stays, A's rows stream, sums move south"},
    {dataflow_kind::is, "is", "input stationary: a block of A's transpose stays, B's columns stream"},
};
static_assert(names_in_order(dataflow_kind_names));
constexpr const char* to_string(dataflow_kind df) {
    return name_of(dataflow_kind_names, df);
}
constexpr std::optional<dataflow_kind> parse_dataflow_kind(std::string_view name) {
    return parse_name(dataflow_kind_names, name);
}
constexpr bool is_stationary(dataflow_kind df) {
    return df != dataflow_kind::os;
}

// How a job ended (job_result::status).
enum class job_status { idle, running, completed, watchdog, bus_error, rejected, aborted };
inline constexpr enum_name<job_status> job_status_names[] = {
    {job_status::idle, "idle", "no job has started"},
    {job_status::running, "running", "the job has started and not ended"},
    {job_status::completed, "completed", "every step ran"},
    {job_status::watchdog, "watchdog", "the array did not complete a chunk in time"},
    {job_status::bus_error, "bus_error", "a bus transaction failed"},
    {job_status::rejected, "rejected", "the job was refused before it started"},
    {job_status::aborted, "aborted", "the job was stopped between steps"},
};
static_assert(names_in_order(job_status_names));
constexpr const char* to_string(job_status status) {
    return name_of(job_status_names, status);
}
constexpr std::optional<job_status> parse_job_status(std::string_view name) {
    return parse_name(job_status_names, name);
}

}  // namespace systolic
