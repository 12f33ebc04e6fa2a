# Source comments under src/ cuda/ mpi/ include/ python/ tests/ name no GPU
# or CPU model, carry no date and quote no measured timing or speed ratio:
# those numbers live in docs/performance.md and docs/design-measurements.md
# (scripts/check_source_comments.py). The self-test seeds one violation of
# each rule and checks that each is reported.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
add_test(NAME source_comment_hygiene
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_source_comments.py ${PROJECT_SOURCE_DIR})
add_test(NAME source_comment_hygiene_self_test
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_source_comments.py --self-test)
set_tests_properties(source_comment_hygiene source_comment_hygiene_self_test PROPERTIES TIMEOUT 60 LABELS "lint")
