# Bindings generated from the C headers (docs/architecture.md, "Generated
# bindings"):
#   bindings_up_to_date     scripts/gen_bindings.py --check: the committed
#                           python/sptensor/_capi.py, include/sptensor/sptensor_capi.f90
#                           and tests/python_pkg/layout_probe.c are what the
#                           headers give (run the script after a header change)
#   bindings_generator_self_test  --check notices a function added to a header
#                           (in a scratch copy) and the regenerated files bind it
#   bindings_cover_exports  every function the libraries export is bound in
#                           Python and Fortran or listed with a reason; every
#                           generated prototype resolves in the built library
# The generator needs pycparser (scripts/deps.sh, scripts/test.sh): without
# it the first two skip (77), except under CI=true.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
add_test(NAME bindings_up_to_date
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen_bindings.py --check --cc ${CMAKE_C_COMPILER})
add_test(NAME bindings_generator_self_test
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen_bindings.py --self-test --cc ${CMAKE_C_COMPILER})
add_test(NAME bindings_cover_exports
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/tests/bindings/check_binding_coverage.py
          ${PROJECT_SOURCE_DIR} $<TARGET_FILE:sptensor>)
set_tests_properties(bindings_up_to_date bindings_generator_self_test bindings_cover_exports PROPERTIES
  TIMEOUT 120 SKIP_RETURN_CODE 77 LABELS "lint;bindings")
