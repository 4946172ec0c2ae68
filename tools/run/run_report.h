// What systolic-run records about one (layer, array, dataflow) job, and the reports made from the records:
// COMPUTE_REPORT.csv (SCALE-Sim v2's columns, then ours), BANDWIDTH_REPORT.csv (SCALE-Sim's, then
// ours), TRAFFIC_REPORT.csv and report.json. A record holds integers, strings, the project's enums
// (written as their names.h names) and the memory report's bandwidths (doubles, which nlohmann::json writes
// so that they read back exactly): the reports of a sweep merged from per-job files (--merge) are byte for
// byte those of a run in one process. Plain C++.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "io/job_json.h"
#include "systolic/energy/price.h"
#include "systolic/job_names.h"
#include "systolic/memory_system.h"
#include "systolic/names.h"
#include "systolic/number_format.h"
#include "systolic/verify/fault_names.h"
#include "topology.h"

namespace systolic::run {

struct report_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// SCALE-Sim's folds that counted the same: how many, their edges, SCALE-Sim's used PEs and the terms
// those PEs consumed. For os a fold is one of our tiles: its advance edges, the PEs whose result was
// written. For ws and is a fold is one fold of a tile (its L x n stationary block): its preload and
// advance edges, the L x n PEs that hold a real weight (or input), and their share of the tile's
// real MACs.
struct fold_group {
    std::uint64_t count = 0;
    std::uint64_t edges = 0;
    std::uint64_t used_pes = 0;
    std::uint64_t macs_real = 0;
    bool operator<(const fold_group& o) const;
    bool operator==(const fold_group& o) const;
};

struct traffic_counts {
    std::uint64_t a_read_bytes = 0, b_read_bytes = 0;
    std::uint64_t c_write_bytes = 0, c_read_bytes = 0;
    std::uint64_t partial_read_bytes = 0, partial_write_bytes = 0;
    std::uint64_t other_bytes = 0;  // anything outside A, B, C and the partial-sum buffer (none when correct)
    std::uint64_t reads = 0, writes = 0;  // transactions
};

// The memory system of a run (--config): SCALE-Sim's configuration as the job got it.
struct memory_settings {
    std::string config;  // the .cfg's file name; empty: no --config (buffers none)
    buffer_mode buffers = buffer_mode::none;
    // "CALC" or "USER" (interface_bandwidth_names) with --config; else empty, a key the files keep
    std::string interface_bandwidth;
    std::uint64_t a_sram = 0, b_sram = 0, c_sram = 0;  // bytes; 0: unlimited
    std::uint64_t dram_bandwidth = 0;                  // bytes per cycle; 0: unlimited
    bool operator==(const memory_settings& o) const;
};

// --expect: how a layer's C compared with its expected file. Integer formats compare exactly; float
// formats within the summation error bound (docs/networks.md#the-tolerance). Errors are measured over
// the elements where both values are finite; a non-finite value must be matched exactly.
enum class expect_result { none, pass, fail };
inline constexpr enum_name<expect_result> expect_result_names[] = {
    {expect_result::none, "none", "no --expect: nothing compared"},
    {expect_result::pass, "pass", "C matches the expected file"},
    {expect_result::fail, "fail", "C differs from the expected file"},
};
static_assert(names_in_order(expect_result_names));
constexpr const char* to_string(expect_result r) {
    return name_of(expect_result_names, r);
}
struct expect_record {
    expect_result result = expect_result::none;
    std::uint64_t checked = 0, failures = 0;
    double max_abs_error = 0, max_rel_error = 0;  // max |c - e|, and max |c - e| / |e| over e != 0
    std::vector<std::string> errors;              // the first failures, one line each
    bool operator==(const expect_record& o) const;
};

// Where a layer's operands come from: seeded random data, or --data's .npy files.
enum class data_source { random, npy };
inline constexpr enum_name<data_source> data_source_names[] = {
    {data_source::random, "random", "seeded random operands"},
    {data_source::npy, "npy", "--data's .npy files"},
};
static_assert(names_in_order(data_source_names));
constexpr const char* to_string(data_source d) {
    return name_of(data_source_names, d);
}

// --energy: a job's energy and area as its table priced its counted actions (systolic::energy;
// docs/energy.md), and the counts a reader of the report needs to see why. Only a completed job is
// priced (priced false: the job stopped, its counts are partial, every figure is 0).
struct energy_record {
    std::string table;   // the table's name (not its path: where a job ran changes no byte)
    double node_nm = 0;  // the node it was priced at
    bool priced = false;
    double total_pj = 0;
    double pj_per_mac = 0;  // total_pj over the real MACs (M x K x P)
    // Each component's pJ, in energy::component_names order.
    std::vector<double> component_pj = std::vector<double>(std::size(energy::component_names), 0.0);
    double total_mm2 = 0;
    std::uint64_t mac_random = 0, mac_gated = 0, idle = 0, preload = 0;  // PE-edges by action
    std::uint64_t a_toggles = 0, b_toggles = 0, acc_toggles = 0;         // register bit toggles
    std::vector<std::string> unpriced;  // "component.action" counted but not in the table
    bool operator==(const energy_record& o) const;
};

struct layer_record {
    // What ran.
    std::string topology;  // the topology's name
    std::uint64_t layers_in_topology = 0;
    std::vector<std::string> sweep;        // the array sizes of the run, as "RxC", in the order given
    std::vector<dataflow_kind> dataflows;  // the dataflows of the run, in the order given
    std::uint64_t layer_id = 0;
    std::string layer;
    layer_kind kind = layer_kind::gemm;
    std::vector<std::uint64_t> conv;  // conv layers: ifmap h, w, filter h, w, channels, filters, stride h, w
    std::uint64_t array_rows = 0, array_cols = 0;
    dataflow_kind dataflow = dataflow_kind::os;  // this job's, one of dataflows
    std::uint64_t m = 0, k = 0, p = 0;
    systolic::dtype dtype = systolic::dtype::int8;
    engine_kind engine = engine_kind::cycle;
    std::uint64_t seed = 0;
    data_source data = data_source::random;
    std::uint64_t k_tile = 0;                    // 0: the whole K in one chunk
    verify::fault inject = verify::fault::none;  // a planted fault (testbench use)
    memory_settings memory;
    std::uint64_t operand_bytes = 1, output_bytes = 4;  // a word of A and B, and of C
    // What happened.
    job_status status = job_status::idle;
    std::string error;
    bool pass = false;
    io::scoreboard_counts scoreboard;  // checked, mismatches and the first errors
    expect_record expect;              // --expect
    std::uint64_t tiles = 0, advance_edges = 0, macs_padded = 0, macs_real = 0;
    std::uint64_t preload_edges = 0;  // ws, is: R a fold; os: none
    std::uint64_t overflows = 0;      // integer accumulations (and partial-sum combinations) that wrapped
    std::uint64_t real_outputs = 0, masked_outputs = 0;
    std::vector<fold_group> folds;  // sorted
    std::uint64_t clock_ps = 0;
    std::uint64_t sim_time_ps = 0, clear_ps = 0, load_ps = 0, preload_ps = 0, advance_ps = 0, drain_ps = 0;
    traffic_counts traffic;
    memory_report memory_use;             // stalls, the DRAM and array bytes per stream, bandwidths
    std::optional<energy_record> energy;  // --energy only

    std::string array_name() const;  // "RxC"
};

// The figures SCALE-Sim's COMPUTE_REPORT.csv defines (simulator.py, systolic_compute_{os,ws,is}.py),
// from our counted edges and stalls: Total Cycles is SCALE-Sim's last 0-based cycle index, preload +
// advance edges - 1 + the stall cycles (SCALE-Sim's ws and is folds load their stationary block in R
// cycles, as our preload does); v3's Total Cycles (incl. prefetch) is the job from its first DRAM
// transfer to its last drain.
struct compute_figures {
    std::uint64_t total_cycles = 0;
    std::uint64_t total_cycles_incl_prefetch = 0;
    std::uint64_t stall_cycles = 0;
    double overall_util = 0;        // MACs x 100 / (Total Cycles x R x C)
    double mapping_efficiency = 0;  // mean over folds of used PEs x 100 / (R x C)
    double compute_util = 0;  // mean over folds of real MACs x 100 / (R x C x edges of the fold): used PEs
                              // x K for os, used PEs x T for ws and is
};
compute_figures compute_figures_of(const layer_record& r);

// SCALE-Sim's BANDWIDTH_REPORT.csv (single_layer_sim.py) in words per cycle: each stream's words
// between its scratchpad and the array over Total Cycles, and between DRAM and the scratchpad over
// Total Cycles (incl. prefetch); a word is an operand for A and B and an output for C.
struct bandwidth_figures {
    double ifmap_sram = 0, filter_sram = 0, ofmap_sram = 0;
    double ifmap_dram = 0, filter_dram = 0, ofmap_dram = 0;
};
bandwidth_figures bandwidth_figures_of(const layer_record& r);

// Totals over jobs of one (array, dataflow): a network layer's GEMMs, or the whole network. The
// summary on stdout, report.json and scripts/draw's network.png all take their totals from here.
struct job_totals {
    std::uint64_t jobs = 0, tiles = 0, advance_edges = 0, preload_edges = 0, macs_real = 0, macs_padded = 0;
    std::uint64_t total_cycles = 0, stall_cycles = 0, sim_time_ps = 0;  // SCALE-Sim's cycles, summed
    std::uint64_t pes = 0;                                              // the array's
    bool pass = true;
    // --expect (any job compared): elements compared and differing, the largest errors of any job.
    bool expected = false;
    std::uint64_t expect_checked = 0, expect_failures = 0;
    double max_abs_error = 0, max_rel_error = 0;
    // --energy: the jobs' energy over their real MACs, and the area of the array that runs every job
    // (the largest a job needs: an unlimited scratchpad is as large as its operand).
    bool energy = false, priced = true;
    double pj = 0, mm2 = 0;

    void add(const layer_record& r);
    std::uint64_t edges() const { return advance_edges + preload_edges; }  // both are the array's work
    double utilization_percent() const;                                    // real MACs over edges x PEs
    double overall_util_percent() const;  // SCALE-Sim's Overall Util: real MACs over Total Cycles x PEs
    // The totals' keys in report.json.
    nlohmann::json to_json() const;
};

// One network layer's jobs on one (array, dataflow): the records whose layer_group is `layer`.
struct layer_totals {
    std::string layer;
    std::vector<const layer_record*> gemms;  // in LayerID order
    job_totals totals;
};
// The records of one (array, dataflow), in LayerID order, gathered by network layer, the layers in
// the order of their first GEMMs.
std::vector<layer_totals> network_layers(const std::vector<const layer_record*>& series);

// The record's keys, declared once (record_fields in run_report.cpp, io/json_fields.h): the writer
// and the reader are derived from that one declaration.
nlohmann::json to_json(const layer_record& r);
// Throws report_error naming `source` and the field for a missing or mistyped key, a number out of
// its range, a name not in its list, or fields that disagree (a layer past the topology's end, a
// convolution that does not lower to the GEMM, a pass with mismatches, counts of a completed job
// that are not count_job's for its shape, ...).
layer_record record_from_json(const nlohmann::json& j, const std::string& source);

// The records in report order: by the array's place in the sweep, then the dataflow's, then LayerID.
void sort_records(std::vector<layer_record>& records);
// Refuses (report_error) records of one layer that disagree on its name, kind, convolution or
// shape, naming the field and both files (sources[i] is records[i]'s).
void check_layers_agree(const std::vector<layer_record>& records, const std::vector<std::string>& sources);
// Refuses (report_error) records of different runs, records of one layer that disagree
// (check_layers_agree, naming sources[i] for records[i]), duplicates, and missing (layer, array,
// dataflow) jobs.
void check_complete(const std::vector<layer_record>& records, const std::string& source,
                    const std::vector<std::string>& sources = {});

std::string compute_report_csv(const std::vector<layer_record>& records);
std::string bandwidth_report_csv(const std::vector<layer_record>& records);
std::string traffic_report_csv(const std::vector<layer_record>& records);
std::string report_json(const std::vector<layer_record>& records);
// --energy (records with energy): one row per job, the same leading keys as the other reports.
std::string energy_report_csv(const std::vector<layer_record>& records);

// One job's file (--job-out): the record, marked so that --merge can tell it from other JSON.
std::string job_file_text(const layer_record& r);
layer_record read_job_file(const std::string& path);
// The same from the file's text; `source` names it in messages.
layer_record parse_job_file(std::string_view text, const std::string& source);

}  // namespace systolic::run
