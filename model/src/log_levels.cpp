// The log levels' names (log.h): a rule without a logger, so the option parsers' fuzzers link it
// with systolic_model_rules alone.
#include "systolic/log.h"

namespace systolic {

std::optional<spdlog::level::level_enum> parse_log_level(std::string_view name) {
    return parse_name(log_level_names, name);
}

std::string log_level_help() {
    std::string out;
    for (const auto& e : log_level_names)
        out += std::string(out.empty() ? "" : ", ") + e.name +
               (e.value == default_log_level ? " (default)" : "");
    return out;
}

}  // namespace systolic
