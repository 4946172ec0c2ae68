// The functional engine's arithmetic on a real layer: gemm_accumulate per number format, OpenBLAS
// cblas_sgemm on one thread as the anchor (when the bench was built with OpenBLAS), and the
// testbench's reference GEMM, all on the 1024 x 1600 x 1600 GPT-2 projection, in MAC/s.
#pragma once

// Registers the benchmarks with Google Benchmark; call before RunSpecifiedBenchmarks.
void register_functional_benchmarks();
