#include "io/job_json.h"

namespace systolic::io {

nlohmann::json job_json(const job_counters& c) {
    return write_fields(c, [](auto& v, auto& r) { job_counter_fields(v, r); });
}

}  // namespace systolic::io
