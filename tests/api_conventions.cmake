# The public headers follow docs/api-conventions.md (one lifecycle per
# format handle, status returns, info and options structs with struct_size,
# doc comments, thread-safety statements): tests/api/check_api_conventions.py.
# api_conventions_self_test checks that the checker reports each rule's
# known violations (the pre-1.0 shapes, e.g. a void spt_csf_free).
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
add_test(NAME api_conventions
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/api/check_api_conventions.py ${PROJECT_SOURCE_DIR}/include)
add_test(NAME api_conventions_self_test
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/api/check_api_conventions.py --self-test
          ${PROJECT_SOURCE_DIR}/include)
set_tests_properties(api_conventions api_conventions_self_test PROPERTIES TIMEOUT 60 LABELS "api")
