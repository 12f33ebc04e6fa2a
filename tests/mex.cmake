# MEX client test (tests/mex/run_mex_test.sh): the example gateways in
# examples/mex/ built with Octave's `mkoctfile --mex` against the installed
# library and run from octave-cli; results must equal the `sptensor` CLI's.
# Skipped (return code 77) when Octave's mkoctfile/octave-cli are missing, and
# in sanitized builds (Octave would need the sanitizer runtime preloaded).
# Also builds the gateways with the commands of docs/mex.md and runs its
# example, and checks that Ctrl-C (SIGINT) stops sptensor_cpd and
# sptensor_tucker (which print with opts.display meanwhile).
if(NOT TARGET sptensor_cli)
  return()
endif()
find_file(SPT_MEX_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
add_test(NAME mex_octave
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/mex/run_mex_test.sh ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/mex-work
          ${CMAKE_COMMAND} $<TARGET_FILE:sptensor_cli> ${SPT_MEX_NATIONS} "${SPT_SANITIZE}")
set_tests_properties(mex_octave PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
if(NOT SPT_MEX_NATIONS)
  set_tests_properties(mex_octave PROPERTIES DISABLED TRUE)
endif()
