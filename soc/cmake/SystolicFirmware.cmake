# systolic_firmware(NAME SOURCES src... ISA rv32|rv64 [OPTIONS flag...])
# Builds ${NAME}-${ISA}.elf in the current binary directory, for systolic-soc, with the command that
# docs/soc.md gives users (the firmware support files compiled from source, so any -march works):
#   riscv64-unknown-elf-gcc --specs=picolibc.specs -march=rv32imac -mabi=ilp32 -O2
#       -I<include> -I<support> -T <support>/soc.ld <support>/*.S <support>/*.c SOURCES -o NAME-rv32.elf
# (RV64: -march=rv64imac -mabi=lp64 -mcmodel=medany), plus OPTIONS. A target of the same name as the
# file, without .elf, builds it with `all`; the variable ${NAME}_${ISA}_ELF holds its path.
#
# SYSTOLIC_FIRMWARE_FOUND says whether the cross compiler and picolibc were found (Debian packages
# gcc-riscv64-unknown-elf and picolibc-riscv64-unknown-elf); without them systolic_firmware is an
# error. SYSTOLIC_FIRMWARE_DIR (soc.ld, start.S, soc.c, soc.h) and SYSTOLIC_FIRMWARE_INCLUDE_DIRS
# (<systolic/soc_map.h>, <systolic/accelerator_driver.h>) default to an installed package's layout
# around this file (lib/cmake/systolic); the project's own build sets them to its source tree.
include_guard(GLOBAL)

if(NOT DEFINED SYSTOLIC_FIRMWARE_DIR)
  get_filename_component(_systolic_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
  set(SYSTOLIC_FIRMWARE_DIR "${_systolic_prefix}/share/systolic/soc")
  set(SYSTOLIC_FIRMWARE_INCLUDE_DIRS "${_systolic_prefix}/include")
endif()

find_program(SYSTOLIC_RISCV_GCC riscv64-unknown-elf-gcc)
set(SYSTOLIC_FIRMWARE_FOUND FALSE)
if(SYSTOLIC_RISCV_GCC)
  # The compiler prints the name back, unchanged, when it finds no such file.
  execute_process(COMMAND ${SYSTOLIC_RISCV_GCC} --specs=picolibc.specs -print-file-name=picolibc.specs
                  OUTPUT_VARIABLE _systolic_specs OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(IS_ABSOLUTE "${_systolic_specs}" AND EXISTS "${_systolic_specs}")
    set(SYSTOLIC_FIRMWARE_FOUND TRUE)
  endif()
endif()

function(systolic_firmware name)
  cmake_parse_arguments(PARSE_ARGV 1 fw "" "ISA" "SOURCES;OPTIONS")
  if(NOT SYSTOLIC_FIRMWARE_FOUND)
    message(FATAL_ERROR "systolic_firmware(${name}): riscv64-unknown-elf-gcc with picolibc not found "
                        "(Debian packages gcc-riscv64-unknown-elf and picolibc-riscv64-unknown-elf)")
  endif()
  if(fw_ISA STREQUAL "rv32")
    set(arch -march=rv32imac -mabi=ilp32)
  elseif(fw_ISA STREQUAL "rv64")
    set(arch -march=rv64imac -mabi=lp64 -mcmodel=medany)
  else()
    message(FATAL_ERROR "systolic_firmware(${name}): ISA must be rv32 or rv64, not '${fw_ISA}'")
  endif()
  if(NOT fw_SOURCES)
    message(FATAL_ERROR "systolic_firmware(${name}): no SOURCES")
  endif()
  file(GLOB support_asm "${SYSTOLIC_FIRMWARE_DIR}/*.S")
  file(GLOB support_c "${SYSTOLIC_FIRMWARE_DIR}/*.c")
  list(SORT support_asm)
  list(SORT support_c)
  set(includes)
  set(headers "${SYSTOLIC_FIRMWARE_DIR}/soc.h" "${SYSTOLIC_FIRMWARE_DIR}/soc.ld")
  foreach(dir IN LISTS SYSTOLIC_FIRMWARE_INCLUDE_DIRS)
    list(APPEND includes "-I${dir}")
    file(GLOB dir_headers "${dir}/systolic/soc_map.h" "${dir}/systolic/accelerator_*.h")
    list(APPEND headers ${dir_headers})
  endforeach()
  set(sources)
  foreach(src IN LISTS fw_SOURCES)
    get_filename_component(src "${src}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND sources "${src}")
  endforeach()
  set(elf "${CMAKE_CURRENT_BINARY_DIR}/${name}-${fw_ISA}.elf")
  add_custom_command(
    OUTPUT "${elf}"
    COMMAND ${SYSTOLIC_RISCV_GCC} --specs=picolibc.specs ${arch} -O2 ${includes} "-I${SYSTOLIC_FIRMWARE_DIR}"
            -T "${SYSTOLIC_FIRMWARE_DIR}/soc.ld" ${support_asm} ${support_c} ${sources} ${fw_OPTIONS} -o "${elf}"
    DEPENDS ${sources} ${support_asm} ${support_c} ${headers}
    COMMENT "Building firmware ${name}-${fw_ISA}.elf"
    VERBATIM)
  add_custom_target(${name}-${fw_ISA} ALL DEPENDS "${elf}")
  set(${name}_${fw_ISA}_ELF "${elf}" PARENT_SCOPE)
endfunction()
