// SCALE-Sim topology files, read as SCALE-Sim reads them, and each layer lowered to one GEMM.
//  - GEMM files: header "Layer, M, N, K," then one row per layer. SCALE-Sim's N is our P.
//  - Convolution files: header "Layer name, IFMAP Height, IFMAP Width, Filter Height, Filter Width,
//    Channels, Num Filter, Strides," (an optional ninth column gives a separate column stride).
//    Lowered as SCALE-Sim lowers them (topology_utils.py): no padding, an output side of
//    ceil((ifmap - filter + stride) / stride), M = output pixels, K = filter height x width x
//    channels, P = filters. A layer whose name contains "DP" is depth-wise, as in SCALE-Sim: it runs
//    as one single-channel layer per channel, named <name>Channel_<c>.
// Every row ends with a comma (SCALE-Sim drops the last field); a row without one is accepted too.
// Any bad row is a topology_error whose message is one line naming the file, the line and the field.
// Plain C++.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "systolic/counting.h"
#include "systolic/names.h"

namespace systolic::run {

struct topology_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

enum class layer_kind { gemm, conv };
inline constexpr enum_name<layer_kind> layer_kind_names[] = {
    {layer_kind::gemm, "gemm", "a GEMM layer: M, N, K"},
    {layer_kind::conv, "conv", "a convolution, lowered to a GEMM (im2col)"},
};
static_assert(names_in_order(layer_kind_names));
constexpr const char* to_string(layer_kind kind) {
    return name_of(layer_kind_names, kind);
}

struct conv_params {
    std::uint64_t ifmap_h = 0, ifmap_w = 0;
    std::uint64_t filter_h = 0, filter_w = 0;
    std::uint64_t channels = 0, filters = 0;
    std::uint64_t stride_h = 1, stride_w = 1;
    std::uint64_t ofmap_h = 0, ofmap_w = 0;  // SCALE-Sim's output sides
};

struct layer {
    std::size_t id = 0;  // LayerID: 0-based position in the lowered list
    std::string name;
    std::uint64_t line = 0;  // where it came from, for messages
    layer_kind kind = layer_kind::gemm;
    problem_shape gemm;  // the GEMM the layer runs as: M x K times K x P
    conv_params conv;    // conv layers only
};

struct topology {
    std::string name;  // the file name without directory and extension, as SCALE-Sim names a run
    layer_kind kind = layer_kind::gemm;
    std::vector<layer> layers;
};

// Largest dimension of a lowered GEMM we accept, so that a typo is an error and not an allocation.
constexpr std::uint64_t max_dimension = 0x7fffffff;
// Layers after lowering (a depth-wise row is one layer per channel), checked before they are made:
// each costs its job, record and report rows in every array size of a run.
constexpr std::uint64_t max_layers = 65536;

// SCALE-Sim's convolution output side.
constexpr std::uint64_t conv_output_side(std::uint64_t ifmap, std::uint64_t filter, std::uint64_t stride) {
    return ceil_div(ifmap - filter + stride, stride);
}

// The SCALE-Sim readers' text helpers: `s` without leading and trailing white space; in lower case.
std::string trim(std::string_view s);
std::string lower(std::string s);

// The network layer a topology row belongs to. A network layer can run as several GEMMs, each a row
// (a "layer" to SCALE-Sim): a row named <layer>.g<i> (a group of a grouped or depth-wise
// convolution) or <layer>.b<i> (a batch entry or head of a batched MatMul), as scripts/import names
// them, or a depth-wise row's <layer>Channel_<c>, as SCALE-Sim names them, is a GEMM of <layer>;
// any other row is a layer of its own. The reports total a network layer's GEMMs under its name.
std::string layer_group(std::string_view name);

// Parses a topology file's text; `path` names it in messages.
topology parse_topology(std::string_view text, const std::string& path);
// Reads and parses a file (regular files only).
topology read_topology(const std::string& path);

}  // namespace systolic::run
