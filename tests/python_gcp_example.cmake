# The Python example of docs/gcp.md (examples/python/gcp_counts.py) runs on
# the bundled tensors with the package from python/ and the built library.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND SPT_LBFGSB_LIBS)
  add_test(NAME python_gcp_example
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${PROJECT_SOURCE_DIR}/python SPTENSOR_LIBRARY=$<TARGET_FILE:sptensor>
            ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/examples/python/gcp_counts.py ${CMAKE_CURRENT_SOURCE_DIR}/data)
  set_tests_properties(python_gcp_example PROPERTIES TIMEOUT 300 LABELS "python")
endif()
