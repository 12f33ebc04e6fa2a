# Fortran client tests (only when the Fortran module is built; see
# cmake/sptensor_fortran.cmake):
#   fortran_constants   every C enumerator, SPT_VERSION_*, and the size and
#                       field offsets of every bound option struct equal their
#                       Fortran counterparts (generated C and Fortran programs)
#   fortran_cpd         a Fortran program reads nations.tns.xz and reproduces
#                       the `sptensor` CLI's CP-ALS fit, lambda and factors and
#                       its Tucker fit; MTTKRP on arrays wrapped in place
#   fortran_gcp         a Fortran program runs GCP-OPT and GCP-SGD on
#                       nations.tns.xz and reproduces the CLI's objective and
#                       estimate (tests/fortran/gcp_check.f90)
#   fortran_kernels     TTV/TTM family, F-COO, dense tensors, reordering,
#                       backend info and statistics through the module against
#                       Fortran loops over the nonzeros and the C results
#   fortran_mpi_cpd     (with MPI; registered in tests/mpi.cmake) module
#                       sptensor_mpi: distributed CP-ALS
#                       under mpirun -np 2 from a Fortran communicator handle
#                       has the serial fit (tests/fortran/mpi_cpd_check.f90)
#   fortran_client_install  install into a temporary prefix and build Fortran
#                       programs against it (pkg-config and find_package; with
#                       MPI also mpi_cpd_check.f90 with mpifort, run on 2 ranks)
if(NOT SPT_BUILD_FORTRAN)
  return()
endif()

include(${CMAKE_CURRENT_SOURCE_DIR}/fortran/gen_constants_check.cmake)
set(SPT_FORTRAN_GEN ${CMAKE_CURRENT_BINARY_DIR}/fortran-generated)
spt_fortran_gen_constants_check(${PROJECT_SOURCE_DIR}/include
  ${SPT_FORTRAN_GEN}/constants_c.c ${SPT_FORTRAN_GEN}/constants_f.f90)
add_test(NAME fortran_constants
  COMMAND ${CMAKE_COMMAND} -DC_COMPILER=${CMAKE_C_COMPILER} -DFORTRAN_COMPILER=${CMAKE_Fortran_COMPILER}
          -DINCLUDE_DIR=${PROJECT_SOURCE_DIR}/include
          -DC_SOURCE=${SPT_FORTRAN_GEN}/constants_c.c -DF_SOURCE=${SPT_FORTRAN_GEN}/constants_f.f90
          -DWORK_DIR=${CMAKE_CURRENT_BINARY_DIR}/fortran-constants
          -P ${CMAKE_CURRENT_SOURCE_DIR}/fortran/check_constants.cmake)
set_tests_properties(fortran_constants PROPERTIES TIMEOUT 120 LABELS fortran)

find_file(SPT_FORTRAN_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
# The check-counting module both test programs use, built once (two targets
# compiling it would both generate spt_fortran_checks.mod).
add_library(spt_fortran_test_checks STATIC ${CMAKE_CURRENT_SOURCE_DIR}/fortran/checks.f90)
target_link_libraries(spt_fortran_test_checks PUBLIC sptensor_fortran)
set_target_properties(spt_fortran_test_checks PROPERTIES
  Fortran_MODULE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/fortran-checks-mod)
target_include_directories(spt_fortran_test_checks PUBLIC ${CMAKE_CURRENT_BINARY_DIR}/fortran-checks-mod)

# spt_fortran_check_program(NAME): the test program spt_fortran_NAME_check
# from fortran/NAME_check.f90, on the check module (strict F2008 with gfortran).
function(spt_fortran_check_program name)
  set(target spt_fortran_${name}_check)
  add_executable(${target} ${CMAKE_CURRENT_SOURCE_DIR}/fortran/${name}_check.f90)
  target_link_libraries(${target} PRIVATE spt_fortran_test_checks sptensor_fortran)
  if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU")
    target_compile_options(${target} PRIVATE -std=f2008 -Wall -Wextra -fimplicit-none)
  endif()
endfunction()

# spt_fortran_cli_test(NAME): the test fortran_NAME, fortran/run_fortran_NAME.sh
# running the CLI and then spt_fortran_NAME_check on nations.tns.xz (disabled
# without that file).
function(spt_fortran_cli_test name)
  add_test(NAME fortran_${name}
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fortran/run_fortran_${name}.sh $<TARGET_FILE:sptensor_cli>
            $<TARGET_FILE:spt_fortran_${name}_check> ${SPT_FORTRAN_NATIONS}
            ${CMAKE_CURRENT_BINARY_DIR}/fortran-${name})
  set_tests_properties(fortran_${name} PROPERTIES TIMEOUT 120 LABELS fortran)
  if(NOT SPT_FORTRAN_NATIONS)
    set_tests_properties(fortran_${name} PROPERTIES DISABLED TRUE)
  endif()
endfunction()

spt_fortran_check_program(cpd)
if(TARGET sptensor_cli)
  spt_fortran_cli_test(cpd)
endif()

# GCP-OPT and GCP-SGD through the module, against the CLI's objective and estimate.
spt_fortran_check_program(gcp)
if(TARGET sptensor_cli AND SPT_LBFGSB_LIBS)
  spt_fortran_cli_test(gcp)
endif()

# The bindings beyond CP/Tucker (TTV/TTM family, F-COO, dense tensors,
# reordering, backend info, statistics) against Fortran loops and C results.
spt_fortran_check_program(kernels)
add_test(NAME fortran_kernels COMMAND spt_fortran_kernels_check ${SPT_FORTRAN_NATIONS})
set_tests_properties(fortran_kernels PROPERTIES TIMEOUT 120 ENVIRONMENT "OMP_NUM_THREADS=2;SPT_BACKEND=cpu"
  PASS_REGULAR_EXPRESSION "fortran kernels: all checks passed" LABELS fortran)
if(NOT SPT_FORTRAN_NATIONS)
  set_tests_properties(fortran_kernels PROPERTIES DISABLED TRUE)
endif()

find_program(SPT_FORTRAN_PKG_CONFIG pkg-config)
add_test(NAME fortran_client_install
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/fortran/run_fortran_client_test.sh
          ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/fortran-client ${CMAKE_COMMAND}
          ${CMAKE_Fortran_COMPILER} ${SPT_FORTRAN_NATIONS} "${SPT_SANITIZE}")
# 77 = skipped: a sanitized build's library needs the sanitizer runtime in
# every program that links it, which a plain user build does not have.
set_tests_properties(fortran_client_install PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77 LABELS fortran)
# Disabled too when the .pc files name the configured prefix (see
# SPT_RELOCATABLE_PKGCONFIG): the test installs into a temporary one.
if(NOT SPT_FORTRAN_NATIONS OR NOT SPT_FORTRAN_PKG_CONFIG OR NOT SPT_PC_RELOCATABLE)
  set_tests_properties(fortran_client_install PROPERTIES DISABLED TRUE)
endif()
