// A fabric of arrays stepped on one thread and on two, side by side (docs/fabric.md): a 2x2 fabric
// of 128x128 int32 arrays, one output tile (M = P = 256) and a long K, through the real model
// (memory, fabric, tile controller over TLM). Benchmarks fabric/int32/2x2x1/N=128/threads=T.
#pragma once

#include <cstdint>
#include <cstdio>

// Builds the rigs; call before the first sc_start (SystemC elaborates once).
void build_fabric_rigs(std::uint64_t k);
// Runs each rig once untimed and checks C against the reference GEMM. False, with the reason on
// stderr, on a failure.
bool check_fabric_rigs();
// Registers the benchmarks with Google Benchmark; call before RunSpecifiedBenchmarks.
void register_fabric_benchmarks();
// "fabric 2x2x1 of 128x128 int32: 1 thread X M PE-updates/s, 2 threads Y M (Z x)", for the rigs that ran.
void print_fabric_summary(std::FILE* out);
