# CTest package_consumer: install this build into a scratch prefix, then configure, build and run
# tests/consumer against it with find_package(systolic), as a user's platform would.
# -D BUILD_DIR=... -D CONSUMER_DIR=... -D WORK_DIR=...
file(REMOVE_RECURSE ${WORK_DIR})
function(step)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()
step(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix)
# What a user of the installed package needs besides the model: the executables, the workloads, the
# drawing scripts, the GTKWave save file and the energy tables (the README lists this tree).
foreach(f include/systolic/accelerator.h include/systolic/accelerator_regs.h include/systolic/accelerator_driver.h
          include/systolic/accelerator_map.h include/systolic/verify/register_dut.h
          include/systolic/verify/format_environments.h include/systolic/observe/accelerator_observers.h
          include/systolic/verify/environment.h include/systolic/verify/dut.h
          include/systolic/verify/passive_checker.h
          bin/systolic-tb bin/systolic-run bin/systolic-partition bin/systolic-vp bin/systolic-regs
          share/systolic/workloads/resnet18.csv share/systolic/workloads/gpt2.csv
          share/systolic/scripts/draw share/systolic/scripts/draw_sweep.py
          share/systolic/scripts/draw_index_space.py share/systolic/seed.gtkw
          share/systolic/vp/default.vps share/systolic/vp/registers.vps
          include/systolic/energy/price.h include/systolic/qemu_pci/pci_device.h
          include/systolic/qemu_pci/qemu_child.h share/systolic/energy/horowitz45.json
          share/systolic/energy/accelergy45.json share/systolic/energy/tpu7.json
          bin/systolic-qemu share/systolic/qemu/systolic-exit include/systolic/qemu_map.h
          include/systolic/linux/systolic.h include/systolic/linux/runtime.h)
  if(NOT EXISTS ${WORK_DIR}/prefix/${f})
    message(FATAL_ERROR "not installed: ${f}")
  endif()
endforeach()
# Every package whose targets the installed ones link is found by systolicConfig.cmake itself, not by
# luck through another package's config (spdlog's finds Threads, for one).
file(GLOB_RECURSE targets_files ${WORK_DIR}/prefix/*/systolicTargets.cmake)
file(GLOB_RECURSE config_file ${WORK_DIR}/prefix/*/systolicConfig.cmake)
file(STRINGS "${targets_files}" link_lines REGEX "INTERFACE_LINK_LIBRARIES")
file(READ "${config_file}" config_text)
string(REGEX MATCHALL "[A-Za-z0-9_]+::" namespaces "${link_lines}")
list(REMOVE_DUPLICATES namespaces)
foreach(ns IN LISTS namespaces)
  string(REPLACE "::" "" package "${ns}")
  if(NOT package STREQUAL "systolic" AND NOT config_text MATCHES "find_dependency\\(${package}[ )]")
    message(FATAL_ERROR "the installed targets link ${ns}, but systolicConfig.cmake does not find_dependency(${package})")
  endif()
endforeach()
step(${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -DCMAKE_BUILD_TYPE=Release
     -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix)
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/consumer)
message("${last_output}")
if(NOT last_output MATCHES "consumer: C\\(0,0\\)=7 C\\(2,2\\)=23 irq=1, PASS")
  message(FATAL_ERROR "unexpected output: ${last_output}")
endif()
step(${WORK_DIR}/build/verified_platform)
message("${last_output}")
if(NOT last_output MATCHES "verified_platform: 4 jobs checked, 0 failed, PASS")
  message(FATAL_ERROR "unexpected output: ${last_output}")
endif()
step(${WORK_DIR}/build/qemu_consumer)
message("${last_output}")
if(NOT last_output MATCHES "qemu_consumer: link closed, BAR0 mask 0xfffff000, PASS")
  message(FATAL_ERROR "unexpected output: ${last_output}")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
