// systolic-soc in systolic-bench (soc_bench.cpp, built when systolic-soc is, since it links Unicorn):
//  - soc/hart_beside_unicorn/<isa>: the platform's hart (the whole systolic-soc platform, quantum
//    keeper and interrupt delivery in place) running hart_loop.c, in instructions per wall second,
//    and in turn with it the same ELF on a bare Unicorn engine in this process (RAM mapped from
//    host memory, no hooks), the ceiling the hart is measured against;
//  - soc/gpt2_layer_beside_systolic_tb: the GPT-2 projection layer (int8, 1024 x 1600 x 1600 on
//    128 x 128) driven by firmware on systolic-soc, and in turn the same job on systolic-tb, each a
//    whole run of the executable, in wall and CPU seconds.
// docs/performance.md has the figures.
#pragma once

#include <cstdio>

// Builds the platforms; call before the first sc_start (SystemC elaborates once).
void build_soc_rigs();
// Gets each hart going and calibrates Unicorn alone (instructions per round of the loop), untimed,
// then suspends the harts, whose endless loop would otherwise keep every other rig's simulation
// from running out of events. False, with the reason on stderr, on a failure.
bool check_soc_rigs();
void register_soc_benchmarks();
// "hart rv32: X M instructions/s, Unicorn alone Y M (ratio)", and the GPT-2 layer's wall times.
void print_soc_summary(std::FILE* out);
