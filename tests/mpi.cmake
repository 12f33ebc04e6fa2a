# MPI tests of libsptensor_mpi (target sptensor_mpi, built when MPI is found;
# nothing is registered otherwise). tests/mpi/test_mpi.cpp runs under
# `mpirun --oversubscribe --allow-run-as-root -np P` for P = 1, 2, 3, 4, 6, 8:
#   cpd        nations (compressed: rank 0 reads and scatters) - medium-grained
#              on automatic, 1-D, 2-D and 3-D grids, coarse-grained, seeded and
#              user initial factors; fit equal to spt_cpd_als within 1e-10
#   synthetic  .tns files written by the test (plain, comments/blank lines,
#              order-4 extended header): parallel byte-range read equals
#              spt_read, CP-ALS equals serial, tensor from rank-local arrays;
#              .sptb and SPLATT .bin copies read in parallel equal spt_read
#   empty      more ranks than slices (2 x 3 x 2 tensor on one rank; the same
#              as a 9-line file read by up to 8 ranks)
#   gpu        CUDA forced on every rank (np 2, 3; skipped without a GPU): equal
#              to the serial CPU run as cpd, float32 within 1e-5
#   malformed  a bad line in the last rank's range, a missing file, a bad
#              grid, a corrupt .sptb and a SPLATT .bin with a bad index (read
#              in parallel), one rank's allocation failing after sweep 1: the
#              same status and message on every rank, no hang
# Each rank runs one OpenMP thread (2-core machines run P = 8 oversubscribed).
if(NOT TARGET sptensor_mpi)
  return()
endif()

add_executable(test_mpi ${CMAKE_CURRENT_SOURCE_DIR}/mpi/test_mpi.cpp)
target_compile_options(test_mpi PRIVATE -Wall -Wextra)
target_link_libraries(test_mpi PRIVATE sptensor_mpi sptensor MPI::MPI_C)

find_file(SPT_MPI_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
set(SPT_MPI_WORK ${CMAKE_CURRENT_BINARY_DIR}/mpi-work)
file(MAKE_DIRECTORY ${SPT_MPI_WORK})
set(SPT_MPIRUN_FLAGS --oversubscribe --allow-run-as-root ${MPIEXEC_PREFLAGS})
# Shared-memory transport without ptrace-based single copy (containers), and
# no spinning waits on an oversubscribed machine.
set(SPT_MPI_TEST_ENV OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMP_WAIT_POLICY=passive
    OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_mpi_yield_when_idle=1
    OMPI_MCA_rmaps_base_oversubscribe=1)

foreach(np 1 2 3 4 6 8)
  foreach(case IN ITEMS synthetic empty malformed cpd)
    if(case STREQUAL "cpd")
      if(NOT SPT_MPI_NATIONS)
        continue()
      endif()
      set(args cpd ${SPT_MPI_NATIONS})
    else()
      set(args ${case} ${SPT_MPI_WORK})
    endif()
    add_test(NAME mpi_${case}_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${np} $<TARGET_FILE:test_mpi> ${args})
    set_tests_properties(mpi_${case}_np${np} PROPERTIES TIMEOUT 120 ENVIRONMENT "${SPT_MPI_TEST_ENV}"
      LABELS mpi)
  endforeach()
endforeach()

# GPU ranks (CUDA forced; skipped without a GPU): 2 ranks, and 3 (more
# ranks than a 2-GPU host has: two share a GPU).
if(SPT_MPI_NATIONS)
  foreach(np 2 3)
    add_test(NAME mpi_gpu_np${np}
      COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} ${np} $<TARGET_FILE:test_mpi>
              gpu ${SPT_MPI_NATIONS})
    set_tests_properties(mpi_gpu_np${np} PROPERTIES TIMEOUT 120 ENVIRONMENT "${SPT_MPI_TEST_ENV}" LABELS mpi
      SKIP_RETURN_CODE 77)
  endforeach()
endif()

# The CLI under mpirun: summary lines, and a usage error on every rank.
add_test(NAME mpi_cli_cpd
  COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 4 $<TARGET_FILE:sptensor_mpi_cli>
          cpd ${SPT_MPI_WORK}/4-syn3.tns -r 3 --iters 5 --tol 0 --grid 2x2x1 --seed 3)
set_tests_properties(mpi_cli_cpd PROPERTIES TIMEOUT 120 ENVIRONMENT "${SPT_MPI_TEST_ENV}" LABELS mpi
  DEPENDS mpi_synthetic_np4
  PASS_REGULAR_EXPRESSION "final fit 0\\.[0-9]+ after 5 iterations.*time per iteration.*bytes per iteration [0-9]+.*imbalance [0-9.]+")
add_test(NAME mpi_cli_cpd_coarse
  COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 3 $<TARGET_FILE:sptensor_mpi_cli>
          cpd ${SPT_MPI_WORK}/3-syn3.tns -r 3 --iters 4 --tol 0 --coarse --backend cpu)
set_tests_properties(mpi_cli_cpd_coarse PROPERTIES TIMEOUT 120 ENVIRONMENT "${SPT_MPI_TEST_ENV}" LABELS mpi
  DEPENDS mpi_synthetic_np3
  PASS_REGULAR_EXPRESSION "coarse-grained.*final fit 0\\.[0-9]+ after 4 iterations")
add_test(NAME mpi_cli_usage_error
  COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:sptensor_mpi_cli>
          cpd ${SPT_MPI_WORK}/2-syn3.tns)
set_tests_properties(mpi_cli_usage_error PROPERTIES TIMEOUT 60 ENVIRONMENT "${SPT_MPI_TEST_ENV}" LABELS mpi
  WILL_FAIL TRUE)

# The public header as strict C99, from a C client (-Werror).
add_executable(test_mpi_header_c99 ${CMAKE_CURRENT_SOURCE_DIR}/mpi/header_c99.c)
set_target_properties(test_mpi_header_c99 PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(test_mpi_header_c99 PRIVATE -Wall -Wextra -Wpedantic -Werror)
target_link_libraries(test_mpi_header_c99 PRIVATE sptensor_mpi sptensor MPI::MPI_C)
add_test(NAME mpi_header_c99
  COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 2 $<TARGET_FILE:test_mpi_header_c99>)
set_tests_properties(mpi_header_c99 PROPERTIES TIMEOUT 60 ENVIRONMENT "${SPT_MPI_TEST_ENV}" LABELS mpi
  PASS_REGULAR_EXPRESSION "C client: 0 failures")

# Only spt_mpi_* is exported (the internal objects linked in stay local).
add_test(NAME mpi_exports
  COMMAND sh -c "nm -D --defined-only \"$1\" | awk '{print $3}' | grep -v '^spt_mpi_' | grep -v '^$' && exit 1 || exit 0"
          sh $<TARGET_FILE:sptensor_mpi>)
set_tests_properties(mpi_exports PROPERTIES LABELS mpi)

# Fortran client of the distributed API (module sptensor_mpi, communicators
# as Fortran handles through the *_fcomm entry points): under mpirun -np 2
# the distributed CP-ALS fit (medium- and coarse-grained, and from rank-local
# arrays) equals the serial spt_cpd_als fit; see tests/fortran/mpi_cpd_check.f90.
if(TARGET sptensor_mpi_fortran)
  find_package(MPI COMPONENTS Fortran QUIET)
  if(MPI_Fortran_FOUND AND SPT_MPI_NATIONS)
    add_executable(spt_fortran_mpi_cpd_check ${CMAKE_CURRENT_SOURCE_DIR}/fortran/mpi_cpd_check.f90)
    target_link_libraries(spt_fortran_mpi_cpd_check PRIVATE sptensor_mpi_fortran MPI::MPI_Fortran)
    if(CMAKE_Fortran_COMPILER_ID STREQUAL "GNU")
      target_compile_options(spt_fortran_mpi_cpd_check PRIVATE -std=f2008 -Wall -Wextra -fimplicit-none)
    endif()
    add_test(NAME fortran_mpi_cpd
      COMMAND ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 2
              $<TARGET_FILE:spt_fortran_mpi_cpd_check> ${SPT_MPI_NATIONS})
    set_tests_properties(fortran_mpi_cpd PROPERTIES TIMEOUT 120 ENVIRONMENT "${SPT_MPI_TEST_ENV}"
      LABELS "mpi;fortran" PASS_REGULAR_EXPRESSION "fortran mpi \\(P = 2\\): all checks passed")
  else()
    message(STATUS "MPI Fortran bindings or nations.tns.xz not found: test fortran_mpi_cpd not registered")
  endif()
endif()

# Python client of the distributed API (optional module sptensor.mpi over
# mpi4py, communicators passed as comm.py2f() to the *_fcomm entry points):
# under mpirun -np 2 the distributed fits equal sptensor.cp_als's; skips (77)
# when numpy or mpi4py cannot be imported (tests/python_pkg/run_mpi.sh).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(Python3_Interpreter_FOUND)
  add_test(NAME python_mpi_cpd
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python_pkg/run_mpi.sh ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}
            $<TARGET_FILE:sptensor> $<TARGET_FILE:sptensor_mpi> ${CMAKE_CURRENT_SOURCE_DIR}/data
            ${MPIEXEC_EXECUTABLE} ${SPT_MPIRUN_FLAGS} ${MPIEXEC_NUMPROC_FLAG} 2)
  set_tests_properties(python_mpi_cpd PROPERTIES TIMEOUT 180 ENVIRONMENT "${SPT_MPI_TEST_ENV}"
    LABELS "mpi;python" SKIP_RETURN_CODE 77 PASS_REGULAR_EXPRESSION "python mpi \\(P = 2\\): all checks passed")
endif()

# ABI guard of libsptensor_mpi (symbols): no function of
# abi/libsptensor_mpi.symbols may disappear without a SONAME bump.
add_test(NAME mpi_abi_symbols
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mpi/check_mpi_symbols.sh $<TARGET_FILE:sptensor_mpi> ${PROJECT_SOURCE_DIR})
set_tests_properties(mpi_abi_symbols PROPERTIES LABELS "mpi;abi")
