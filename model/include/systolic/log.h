// Logging: one spdlog logger per module instance, named by the module's hierarchical name, all
// writing to stderr through one sink whose pattern carries the simulation time, e.g.
//   [I 0.000000025] tb.controller: tile 1 origin (0,2)
// Quiet by default (warnings and errors only); set_log_level changes every logger at once.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "systolic/names.h"

namespace tlm {
class tlm_generic_payload;
}
namespace tlm_utils {
class tlm_quantumkeeper;
}

namespace systolic {

// The logger for a module; created on first use, shared afterwards.
std::shared_ptr<spdlog::logger> get_logger(const std::string& name);

// The levels every --log-level takes, in spdlog's order (trace = 0 ... off = 6): the parser, the
// options' help and their messages all read this one table.
inline constexpr enum_name<spdlog::level::level_enum> log_level_names[] = {
    {spdlog::level::trace, "trace", "everything the modules log"},
    {spdlog::level::debug, "debug", "detail for debugging a model"},
    {spdlog::level::info, "info", "progress"},
    {spdlog::level::warn, "warn", "warnings and errors"},
    {spdlog::level::err, "error", "errors only"},
    {spdlog::level::critical, "critical", "critical errors only"},
    {spdlog::level::off, "off", "nothing"},
};
static_assert(names_in_order(log_level_names));
inline constexpr spdlog::level::level_enum default_log_level = spdlog::level::warn;

// A name of log_level_names, or nullopt.
std::optional<spdlog::level::level_enum> parse_log_level(std::string_view name);
// "trace, debug, info, warn (default), error, critical, off", the help of every --log-level.
std::string log_level_help();
void set_log_level(spdlog::level::level_enum level);

// A process that runs ahead of the kernel with a quantum keeper registers it here (from inside the
// process), so that its log lines carry its own time, kernel time plus local offset, rather than
// the kernel time of its last sync. Unregister before the keeper goes away.
void register_local_time(const tlm_utils::tlm_quantumkeeper* keeper);
void unregister_local_time(const tlm_utils::tlm_quantumkeeper* keeper);

// One line per transaction for every log that mentions one:
//   "WRITE 0x00000140 len=16 -> TLM_OK_RESPONSE"
std::string txn_to_string(const tlm::tlm_generic_payload& trans);

}  // namespace systolic
