#include "output_options.h"

#include "cli_values.h"
#include "systolic/log.h"

namespace systolic::cli {

void check_output_options(const output_options& o) {
    if (o.vcd && o.vcd->empty()) throw usage_error("--vcd needs a file name, got ''");
    if (o.trace && o.trace->empty()) throw usage_error("--trace needs a file name, got ''");
    if (o.gtkw && o.gtkw->empty()) throw usage_error("--gtkw needs a file name, got ''");
    if (!parse_log_level(o.log_level))
        throw usage_error("--log-level " + one_line(o.log_level) + ": not a log level (" +
                          names_text(log_level_names) + ")");
}

spdlog::level::level_enum log_level_of(const output_options& o) {
    return parse_log_level(o.log_level).value_or(default_log_level);
}

}  // namespace systolic::cli
