# CTest firmware_<name>_<isa>: runs a firmware on systolic-soc and passes only when all hold: the
# exit status is 0, the output has the program's PASS line, and the summary line says that the
# passive checker checked the program's jobs (a PASS_REGULAR_EXPRESSION alone would ignore the exit
# status, and so a failure the platform's checkers report after the PASS).
# -D SOC=systolic-soc -D ELF=... -D PASS=regex [-D ARGS="--array;2"] [-D SUMMARY=regex]
execute_process(COMMAND ${SOC} ${ARGS} ${ELF} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message("${out}${err}")
if(NOT rc STREQUAL "0")
  message(FATAL_ERROR "systolic-soc exited with ${rc}")
endif()
if(NOT out MATCHES "${PASS}")
  message(FATAL_ERROR "no line matching '${PASS}'")
endif()
if(DEFINED SUMMARY AND NOT "${out}${err}" MATCHES "${SUMMARY}")
  message(FATAL_ERROR "the summary does not match '${SUMMARY}'")
endif()
