#include "io/job_json.h"

namespace systolic::io {

nlohmann::json job_json(const job_counters& c) {
    nlohmann::json j = {{"m", c.m},
                        {"k", c.k},
                        {"p", c.p},
                        {"advance_edges", c.advance_edges},
                        {"macs_padded", c.macs_padded},
                        {"macs_real", c.macs_real}};
    if (c.tiles) j["tiles"] = *c.tiles;
    if (c.real_outputs) j["real_outputs"] = *c.real_outputs;
    if (c.masked_outputs) j["masked_outputs"] = *c.masked_outputs;
    if (c.scoreboard)
        j["scoreboard"] = {{"checked", c.scoreboard->checked},
                           {"mismatches", c.scoreboard->mismatches},
                           {"errors", c.scoreboard->errors}};
    return j;
}

}  // namespace systolic::io
