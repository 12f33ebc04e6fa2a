# Fortran interface (include/sptensor/sptensor.f90, module `sptensor`, over
# include/sptensor/sptensor_capi.f90, module `sptensor_capi`, generated from
# the C headers by scripts/gen_bindings.py).
#
# SPT_WITH_FORTRAN: AUTO builds it when a Fortran compiler is found, ON
# requires one, OFF skips it. Included from the top-level CMakeLists.txt
# after the library target exists.
#
# What is built and installed:
#   libsptensor_fortran.a  the module's own procedures (option initialisers,
#                          string/array helpers); static, because a .mod and
#                          its object code are tied to one compiler version
#                          and there is nothing here worth an ABI promise
#   include/sptensor.mod, include/sptensor_capi.mod   the compiled modules
#                          (so `-I$prefix/include`, the pkg-config Cflags,
#                          finds them)
#   include/sptensor/sptensor_capi.f90, sptensor.f90   the sources, for
#                          other compilers
#   lib/pkgconfig/sptensor-fortran.pc   Requires: sptensor (pkgconfig/sptensor-fortran.pc.in)
#   CMake target sptensor::sptensor_fortran (in sptensorTargets)
#   with libsptensor_mpi also: libsptensor_mpi_fortran.a, include/sptensor_mpi.mod,
#   include/sptensor_mpi_capi.mod and include/sptensor/sptensor_mpi_capi.f90,
#   sptensor_mpi.f90 (module sptensor_mpi over the generated sptensor_mpi_capi)
set(SPT_WITH_FORTRAN "AUTO" CACHE STRING "Build the Fortran module (AUTO, ON, OFF)")
set_property(CACHE SPT_WITH_FORTRAN PROPERTY STRINGS AUTO ON OFF)

set(SPT_BUILD_FORTRAN OFF)
if(NOT SPT_WITH_FORTRAN STREQUAL "OFF")
  include(CheckLanguage)
  check_language(Fortran)
  if(CMAKE_Fortran_COMPILER)
    enable_language(Fortran)
    set(SPT_BUILD_FORTRAN ON)
  elseif(SPT_WITH_FORTRAN STREQUAL "ON")
    message(FATAL_ERROR "SPT_WITH_FORTRAN=ON but no Fortran compiler was found (set CMAKE_Fortran_COMPILER or FC, or use AUTO/OFF)")
  endif()
endif()
message(STATUS "Fortran module (sptensor.mod, libsptensor_fortran.a): ${SPT_BUILD_FORTRAN}")

if(SPT_BUILD_FORTRAN)
  set(SPT_FORTRAN_MODULE_DIR ${PROJECT_BINARY_DIR}/fortran-modules)
  add_library(sptensor_fortran STATIC ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor_capi.f90
    ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor.f90)
  add_library(sptensor::sptensor_fortran ALIAS sptensor_fortran)
  set_target_properties(sptensor_fortran PROPERTIES
    Fortran_MODULE_DIRECTORY ${SPT_FORTRAN_MODULE_DIR}
    EXPORT_NAME sptensor_fortran)
  if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU")
    target_compile_options(sptensor_fortran PRIVATE -std=f2008 -Wall -Wextra)
  endif()
  target_include_directories(sptensor_fortran PUBLIC
    $<BUILD_INTERFACE:${SPT_FORTRAN_MODULE_DIR}>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(sptensor_fortran PUBLIC sptensor)

  install(TARGETS sptensor_fortran EXPORT sptensorTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(FILES ${SPT_FORTRAN_MODULE_DIR}/sptensor.mod ${SPT_FORTRAN_MODULE_DIR}/sptensor_capi.mod
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  install(FILES ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor_capi.f90
    ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor.f90
    DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sptensor)

  configure_file(${PROJECT_SOURCE_DIR}/pkgconfig/sptensor-fortran.pc.in ${PROJECT_BINARY_DIR}/sptensor-fortran.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/sptensor-fortran.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)

  # The distributed API's module (include/sptensor/sptensor_mpi.f90, module
  # sptensor_mpi) when libsptensor_mpi is built. It binds the *_fcomm entry
  # points (communicators as Fortran handles) and does not `use mpi`, so no
  # MPI Fortran compiler is needed to build it; programs using it link
  # -lsptensor_mpi_fortran -lsptensor_fortran -lsptensor_mpi -lsptensor.
  # Not in the sptensorTargets export set, because sptensor_mpi is not.
  if(TARGET sptensor_mpi)
    add_library(sptensor_mpi_fortran STATIC ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor_mpi_capi.f90
      ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor_mpi.f90)
    set_target_properties(sptensor_mpi_fortran PROPERTIES Fortran_MODULE_DIRECTORY ${SPT_FORTRAN_MODULE_DIR})
    if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU")
      target_compile_options(sptensor_mpi_fortran PRIVATE -std=f2008 -Wall -Wextra)
    endif()
    target_link_libraries(sptensor_mpi_fortran PUBLIC sptensor_fortran sptensor_mpi)
    install(TARGETS sptensor_mpi_fortran ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
    install(FILES ${SPT_FORTRAN_MODULE_DIR}/sptensor_mpi.mod ${SPT_FORTRAN_MODULE_DIR}/sptensor_mpi_capi.mod
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
    install(FILES ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor_mpi_capi.f90
      ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor_mpi.f90
      DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/sptensor)
  endif()
endif()
