# Provides the imported target systolic::systemc (SystemC + TLM-2.0).
# Prefers a SystemC built with CMake (find_package(SystemCLanguage CONFIG)), as users who build it
# themselves have; falls back to pkg-config `systemc`, which is how Debian's libsystemc-dev ships.
if(TARGET systolic::systemc)
  return()
endif()

find_package(SystemCLanguage CONFIG QUIET)
if(SystemCLanguage_FOUND)
  add_library(systolic::systemc INTERFACE IMPORTED)
  target_link_libraries(systolic::systemc INTERFACE SystemC::systemc)
  message(STATUS "SystemC: CMake package SystemCLanguage ${SystemCLanguage_VERSION}")
else()
  find_package(PkgConfig REQUIRED)
  pkg_check_modules(SYSTOLIC_SYSTEMC REQUIRED IMPORTED_TARGET systemc)
  add_library(systolic::systemc INTERFACE IMPORTED)
  target_link_libraries(systolic::systemc INTERFACE PkgConfig::SYSTOLIC_SYSTEMC)
  # SYSTEM, so that SystemC's own warnings do not drown ours.
  set_target_properties(systolic::systemc PROPERTIES INTERFACE_SYSTEM_INCLUDE_DIRECTORIES
                                                     "${SYSTOLIC_SYSTEMC_INCLUDE_DIRS}")
  message(STATUS "SystemC: pkg-config systemc ${SYSTOLIC_SYSTEMC_VERSION}")
endif()
