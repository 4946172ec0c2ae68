#include "memory_estimate.h"

#include "cli_options.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <optional>
#include <string>

namespace systolic::tb {
namespace {

// Measured on x86-64 Linux with Debian's SystemC 2.3.4 (see the test that keeps them honest).
constexpr double process_bytes = 10.0 * (1 << 20);  // libraries, SystemC kernel, heap arenas
constexpr double module_bytes = 510;      // one sc_module: the object, its name, the kernel's registries
constexpr double link_bytes = 48;         // a link's record in the job's outcome
constexpr double link_json_bytes = 1500;  // and its object in the report
constexpr double tile_bytes = 800;        // plan entry + tile_report
constexpr double tile_json_bytes = 1700;  // its tiles_detail object in the report (nine members)
constexpr double guard = 64;
constexpr double vcd_signal_bytes = 300;  // one --vcd variable: record, name, scope and header line

double round16(double v) {
    return double((static_cast<std::uint64_t>(v) + 15) / 16 * 16);
}

}  // namespace

memory_estimate estimate_memory(const memory_job& j) {
    const double m = double(j.m), k = double(j.k), p = double(j.p), rows = double(j.rows),
                 cols = double(j.cols);
    const double osz = double(j.operand_bytes), asz = double(j.accumulator_bytes),
                 csz = double(j.output_bytes);
    const double g = j.packed ? 0 : guard;
    auto stride = [&](double row_bytes) { return j.packed ? row_bytes : round16(row_bytes + 8); };
    double image = 2 * g + m * stride(k * osz) + g + k * stride(p * osz) + g + m * stride(p * csz) + 64;
    if (j.partial_buffer) image += g + m * stride(p * asz);

    const double a = m * k, b = k * p, c = m * p;
    double inputs = (a + b) * osz;
    // A file's raw bytes live next to the converted operands until the conversion is done.
    if (j.file_bytes)
        inputs += std::max(a, b) * (double(j.file_bytes) + (osz != double(j.file_bytes) ? 4 : 0));
    const double kt = j.k_tile && j.k_tile < j.k ? double(j.k_tile) : k;
    // A fabric's tile is its arrays' rows and columns side by side; every array has its own PEs.
    const double tile_rows = rows * double(j.fabric_rows), tile_cols = cols * double(j.fabric_cols);
    const double buffers = (tile_rows + tile_cols) * kt * osz;
    const double pes = double(j.modules) * module_bytes + double(j.engine_bytes);
    const double links = double(j.links) * (link_bytes + (j.json_report ? link_json_bytes : 0));
    const double tiles = std::ceil(m / tile_rows) * std::ceil(p / tile_cols);
    const double tile_records = tiles * (tile_bytes + (j.json_report ? tile_json_bytes : 0));
    // Expected C and the write counts stay for the whole job, C read back joins them at the end; the
    // wide reference lives only while it is encoded. --quantize-partials computes a second reference.
    double checking = std::max(c * (csz + 4 + csz), c * (asz + csz));
    if (j.per_partial) checking += c * (asz + csz);

    const std::vector<std::pair<std::string, double>> parts = {
        {"memory image and its shadow copy", 2 * image},
        {"operands", inputs},
        {"reference and scoreboard", checking},
        {"tile records", tile_records},
        {"PEs and engine state", pes},
        {"link records", links},
        {"operand buffers", buffers},
        // About 270 bytes per variable measured at 256x256 with --vcd-pes all.
        {"VCD signal table", double(j.vcd_signals) * vcd_signal_bytes},
    };
    double total = process_bytes;
    for (const auto& part : parts)
        total += part.second;
    memory_estimate est;
    auto clamp = [](double v) { return v >= 0x1p64 ? ~std::uint64_t{0} : static_cast<std::uint64_t>(v); };
    est.total = clamp(total);
    est.process = clamp(process_bytes);
    // A memory keeps its largest size (vector capacity), and the PEs and buffers stay with their bench.
    est.bench = clamp(2 * image + pes + buffers);
    est.job = clamp(total - process_bytes - (2 * image + pes + buffers));
    for (const auto& part : parts)
        est.parts.emplace_back(part.first, clamp(part.second));
    std::sort(est.parts.begin(), est.parts.end(),
              [](const auto& x, const auto& y) { return x.second > y.second; });
    return est;
}

std::uint64_t default_memory_limit() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGESIZE);
    std::uint64_t physical = pages > 0 && page > 0 ? std::uint64_t(pages) * std::uint64_t(page) : 0;
    // A container's memory limit (cgroup v2) is what really counts when it is lower.
    std::ifstream cg("/sys/fs/cgroup/memory.max");
    std::string text;
    if (cg >> text && !text.empty() && text.find_first_not_of("0123456789") == std::string::npos) {
        const std::uint64_t limit = std::stoull(text);
        if (physical == 0 || limit < physical) physical = limit;
    }
    if (physical == 0) physical = std::uint64_t{8} << 30;  // unknown: assume a small machine
    return physical / 2;
}

std::pair<std::string, std::string> format_bytes_apart(std::uint64_t a, std::uint64_t b) {
    if (format_bytes(a) != format_bytes(b)) return {format_bytes(a), format_bytes(b)};
    const std::uint64_t larger = std::max(a, b);
    const char* units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    if (larger < 1024) return {std::to_string(a) + " bytes", std::to_string(b) + " bytes"};
    int u = 0;
    double scale = 1024;
    while (double(larger) / scale >= 1024 && u < 5) {
        scale *= 1024;
        ++u;
    }
    // Each with format_bytes's digits (one decimal below 10 units, none above), then more of them
    // while the two read the same.
    auto text = [&](std::uint64_t v, int extra) {
        const double x = double(v) / scale;
        char buf[48];
        std::snprintf(buf, sizeof buf, "%.*f %s", (x < 10 ? 1 : 0) + extra, x, units[u]);
        return std::string(buf);
    };
    int extra = 0;
    while (a != b && extra < 6 && text(a, extra) == text(b, extra))
        ++extra;
    return {text(a, extra), text(b, extra)};
}

namespace {

std::string limit_source(const memory_budget& b) {
    return b.limit_given ? " set by --max-memory" : " (half of physical memory; --max-memory changes it)";
}

std::optional<memory_budget>& budget() {
    static std::optional<memory_budget> b;
    return b;
}

std::string out_of_memory_text(const std::string& what) {
    std::string text = "out of memory while " + what;
    if (const auto& b = budget()) {
        const auto [need, limit] = format_bytes_apart(b->estimate, b->limit);
        text += ", although the estimate of about " + need + " was within the limit of " + limit +
                (b->limit_given ? " set by --max-memory" : " (half of physical memory)") +
                ": the machine had less to give (other processes, or a limit such as ulimit -v)";
    }
    return text;
}

}  // namespace

std::string memory_refusal(const std::string& subject, const std::string& detail, const memory_budget& b) {
    if (b.estimate <= b.limit) return {};
    const auto [need, limit] = format_bytes_apart(b.estimate, b.limit);
    return subject + " needs about " + need + " of memory" + detail + ", over the limit of " + limit +
           limit_source(b);
}

void set_memory_budget(const memory_budget& b) {
    budget() = b;
}

out_of_memory::out_of_memory(const std::string& what) : std::runtime_error(out_of_memory_text(what)) {}

}  // namespace systolic::tb
