# ctest -P script: compiles the two generated programs (see
# gen_constants_check.cmake) and the module in a scratch folder, runs them
# and compares their output line by line. They use only constants, types,
# sizeof/offsetof and c_sizeof/c_loc, so nothing is linked to the library,
# and a constant missing from sptensor_capi.f90 (generated, re-exported by
# sptensor.f90) fails this test, not the build.
# Variables: C_COMPILER, FORTRAN_COMPILER, INCLUDE_DIR, C_SOURCE, F_SOURCE, WORK_DIR.
cmake_minimum_required(VERSION 3.16)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})
set(C_PROGRAM ${WORK_DIR}/constants_c)
set(F_PROGRAM ${WORK_DIR}/constants_f)
execute_process(COMMAND ${C_COMPILER} -std=c99 -I${INCLUDE_DIR} ${C_SOURCE} -o ${C_PROGRAM}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling the C constant printer failed:\n${out}")
endif()
# The generated module sptensor_capi first: module sptensor uses it.
foreach(source sptensor_capi sptensor)
  execute_process(COMMAND ${FORTRAN_COMPILER} -c ${INCLUDE_DIR}/sptensor/${source}.f90 -o ${WORK_DIR}/${source}.o
    WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "compiling ${source}.f90 failed:\n${out}")
  endif()
endforeach()
execute_process(COMMAND ${FORTRAN_COMPILER} -I${WORK_DIR} ${F_SOURCE} -o ${F_PROGRAM}
  WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling the Fortran constant printer failed (a C enumerator or struct field "
                      "missing from include/sptensor/sptensor_capi.f90? run scripts/gen_bindings.py):\n${out}")
endif()
execute_process(COMMAND ${C_PROGRAM} RESULT_VARIABLE rc_c OUTPUT_VARIABLE c_out)
execute_process(COMMAND ${F_PROGRAM} RESULT_VARIABLE rc_f OUTPUT_VARIABLE f_out)
if(NOT rc_c EQUAL 0 OR NOT rc_f EQUAL 0)
  message(FATAL_ERROR "constant checkers failed to run (C: ${rc_c}, Fortran: ${rc_f})")
endif()
string(REPLACE "\n" ";" c_lines "${c_out}")
string(REPLACE "\n" ";" f_lines "${f_out}")
list(LENGTH c_lines n)
list(LENGTH f_lines n_f)
if(NOT n EQUAL n_f)
  message(FATAL_ERROR "the C program printed ${n} lines, the Fortran one ${n_f}")
endif()
set(bad 0)
foreach(i RANGE 0 ${n})
  if(i EQUAL n)
    break()
  endif()
  list(GET c_lines ${i} c)
  list(GET f_lines ${i} f)
  string(STRIP "${f}" f)
  if(NOT c STREQUAL f)
    message(SEND_ERROR "C: '${c}'   Fortran: '${f}'")
    math(EXPR bad "${bad} + 1")
  endif()
endforeach()
if(bad GREATER 0)
  message(FATAL_ERROR "${bad} of ${n} constants/layout entries differ between the C headers and sptensor.f90")
endif()
message(STATUS "all ${n} constants, struct sizes and field offsets agree")
