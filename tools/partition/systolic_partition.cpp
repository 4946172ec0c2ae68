// systolic-partition: the index-space view of C = A*B cut into Ti x Tj x Tk blocks (seed 000).
// Prints the block grid, each dependence's edges inside blocks and across their faces (halo,
// long-range, collective), the surface-to-volume ratio and the two-level schedule; --json FILE
// writes the same as JSON. Exit status: 0 done, 2 bad usage or bad input (one line on stderr).
#include <CLI/CLI.hpp>

#include <cstdint>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "cli_choice.h"
#include "cli_parse.h"
#include "io/output_set.h"
#include "io/process.h"
#include "io/text.h"
#include "option_rules.h"
#include "partition_report.h"

namespace {

using namespace systolic;

constexpr int exit_ok = 0;
constexpr int exit_usage = 2;

struct usage_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

std::uint64_t positive(const std::string& what, std::int64_t v) {
    if (v <= 0) throw usage_error(what + " must be positive, got " + std::to_string(v));
    return std::uint64_t(v);
}

// "T" or "Ti,Tk,Tj" (the order of --m --k --p), as (Ti, Tj, Tk).
index3 parse_block(const std::string& text) {
    std::vector<std::int64_t> v;
    std::size_t pos = 0;
    while (true) {
        const std::size_t end = text.find(',', pos);
        const std::string part = text.substr(pos, end == std::string::npos ? std::string::npos : end - pos);
        std::size_t used = 0;
        std::int64_t x = 0;
        try {
            x = std::stoll(part, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (part.empty() || used != part.size())
            throw usage_error("--block '" + text + "': expected T or Ti,Tk,Tj (positive integers)");
        v.push_back(x);
        if (end == std::string::npos) break;
        pos = end + 1;
    }
    if (v.size() != 1 && v.size() != 3)
        throw usage_error("--block '" + text + "': expected one size T or three, Ti,Tk,Tj");
    if (v.size() == 1) v = {v[0], v[0], v[0]};
    return {positive("--block Ti", v[0]), positive("--block Tj", v[2]), positive("--block Tk", v[1])};
}

// What the option rules look at.
struct rule_inputs {
    tile_order order;
    std::string json;
};

// Options that change nothing without another (README's "Options that need another" lists them).
const std::vector<cli::option_rule<rule_inputs>>& partition_option_rules() {
    static const std::vector<cli::option_rule<rule_inputs>> rules = {
        {"--seed", "--order random", "it seeds only the random block order",
         [](const rule_inputs& v) { return v.order == tile_order::random; }},
        {"--edges", "--json", "the crossing edges are listed in the JSON report only",
         [](const rule_inputs& v) { return !v.json.empty(); }},
    };
    return rules;
}

}  // namespace

// The tool runs no simulation, but the model library links libsystemc, whose own main() refers to
// sc_main. This main() takes precedence; the stub only satisfies the linker.
extern "C" int sc_main(int, char*[]) {
    return 0;
}

int main(int argc, char* argv[]) {
    if (const int status = io::start("systolic-partition"); status != 0) return status;
    std::int64_t m = 0, k = 0, p = 0;
    std::string block, json;
    tile_order order = tile_order::row_major;
    count_method method = count_method::automatic;
    std::vector<std::string> deps;
    std::uint64_t seed = 1;
    bool edges = false;

    CLI::App app{
        "The index space of C = A*B (points (i,j,k), i < M, j < P, k < K) cut into blocks: the block grid,\n"
        "each dependence's edges inside and across blocks (halo, long-range, collective), surface to\n"
        "volume, and the two-level schedule. Matmul's dependences a (0,-1,0), b (-1,0,0), c (0,0,-1) are\n"
        "always present; --dep adds more."};
    app.option_defaults()->always_capture_default();
    app.add_option("--m", m, "Rows of C (extent of i)")->required();
    app.add_option("--k", k, "The reduction (extent of k)")->required();
    app.add_option("--p", p, "Columns of C (extent of j)")->required();
    app.add_option("--block", block, "Block size T, or Ti,Tk,Tj")->required();
    app.add_option("--dep", deps,
                   "Another dependence: NAME:di,dj,dk (point reads point + offset) or NAME:reduce-i|j|k "
                   "(reads its whole line along that axis, a collective); repeatable");
    cli::add_choice(app, "--order", order, tile_order_names,
                    "systolic-tb's tile order for the block schedule");
    app.add_option("--seed", seed, "Seed for --order random");
    cli::add_choice(app, "--method", method, count_method_names,
                    "auto: enumerate up to ~10^7 points, closed forms beyond");
    app.add_option("--json", json, "Write the report as JSON to FILE ('-' for stdout)");
    app.add_flag("--edges", edges, "List every crossing edge in the JSON (for drawing; small spaces only)");
    app.footer(cli::option_rules_help(partition_option_rules()));

    if (const auto status = cli::parse_command_line(app, argc, argv, "systolic-partition", exit_usage))
        return *status;

    try {
        if (const auto broken =
                cli::broken_option_rule(partition_option_rules(), rule_inputs{order, json},
                                        [&](const char* name) { return app.count(name) > 0; }))
            throw usage_error(*broken);
        // The --json file is checked, and its temporary created, before anything runs.
        const bool json_to_stdout = json == "-";
        io::output_set files;
        if (!json.empty() && !json_to_stdout) files.add({"--json", json});
        partition_spec spec;
        spec.extent = {positive("--m", m), positive("--p", p), positive("--k", k)};
        spec.block = parse_block(block);
        spec.deps = matmul_dependences();
        for (const auto& d : deps)
            spec.deps.push_back(parse_dependence(d));
        analysis_options opt;
        opt.order = order;
        opt.seed = seed;
        opt.method = method;
        opt.list_edges = edges;
        const partition_report r = analyse(spec, opt);

        const std::string text = to_json(r).dump(edges ? -1 : 2) + "\n";
        if (!json.empty() && !json_to_stdout) files.set(json, {text});
        files.prepare();
        print_text(json_to_stdout ? std::cerr : std::cout, r);
        if (json_to_stdout)
            io::write_stdout(text);
        else
            io::flush_stdout();
        files.commit();
        return exit_ok;
    } catch (const std::exception& e) {  // usage_error, std::invalid_argument, an unwritable file
        std::cerr << "systolic-partition: error: " << e.what() << "\n";
        return exit_usage;
    }
}
