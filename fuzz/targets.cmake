# Every fuzz target, declared once with the plain libraries it links beside systolic::io:
# fuzz/CMakeLists.txt builds <name>_fuzz from <name>_fuzz.cpp as a libFuzzer target,
# tests/CMakeLists.txt replays its seed corpus fuzz/corpus/<name> in CTest (fuzz_replay_<name>), and
# scripts/fuzz runs them in this order.
set(SYSTOLIC_FUZZ_TARGETS npy cli topology register vp_script job_file scale_config elf expect column_files)
set(SYSTOLIC_FUZZ_LIBS_npy "")
# The parser reads --fabric with the model's shape parser, numbers with the command lines' own.
set(SYSTOLIC_FUZZ_LIBS_cli systolic_tb_cli systolic_cli_plain systolic_model_rules)
set(SYSTOLIC_FUZZ_LIBS_topology systolic_run_topology)
set(SYSTOLIC_FUZZ_LIBS_register systolic_model_rules)
# systolic-vp's job-script reader, against the register map (times in picoseconds, read as every
# command line reads them).
set(SYSTOLIC_FUZZ_LIBS_vp_script systolic_vp_script systolic_cli_plain systolic_model_rules)
# systolic-run --merge's job-file reader; the names of engines, statuses and faults come from the
# model and the testbench.
set(SYSTOLIC_FUZZ_LIBS_job_file systolic_run_records systolic_run_topology systolic_verify_faults
    systolic_model_rules)
# systolic-run --config's SCALE-Sim .cfg reader (with the topology reader).
set(SYSTOLIC_FUZZ_LIBS_scale_config systolic_run_topology systolic_verify_faults systolic_model_rules)
# The hart's ELF loader (components/), against systolic-soc's memory map's RAM (soc_regions.h names
# the model's register block).
set(SYSTOLIC_FUZZ_LIBS_elf systolic_components_elf systolic_soc_map systolic_model_rules)
# systolic-run --expect's files (expect_files.h, header only) and its layers.
set(SYSTOLIC_FUZZ_LIBS_expect systolic_run_topology systolic_model_rules)
# systolic-tb's --scale-file and --zero-point-file, then the model's requantization.
set(SYSTOLIC_FUZZ_LIBS_column_files systolic_tb_cli systolic_cli_plain systolic_model_rules)
