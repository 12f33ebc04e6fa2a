# Bad-input catalogue of the `sptensor` tool (tests/cli/bad_input.sh): each
# case must fail with the documented exit status and one line on stderr
# naming the problem, and never crash.
if(NOT TARGET sptensor_cli)
  return()
endif()
add_test(NAME cli_bad_input
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/cli/bad_input.sh $<TARGET_FILE:sptensor_cli> ${CMAKE_CURRENT_BINARY_DIR}/cli-bad-input)
set_tests_properties(cli_bad_input PROPERTIES TIMEOUT 300)
