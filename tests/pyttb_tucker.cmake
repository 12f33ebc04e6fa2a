# Cross-check of Tucker-HOOI against pyttb.tucker_als (pip install pyttb):
# same tensors, same initial factors, fixed iteration count; fits must agree
# to 1e-6 relative and factor subspaces to principal angles < 1e-6. Exits 77
# (skipped) when numpy/pyttb cannot be imported, except with CI=true.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME pyttb_tucker_crosscheck
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/check_tucker_pyttb.py
            $<TARGET_FILE:sptensor> ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data)
  set_tests_properties(pyttb_tucker_crosscheck PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "crosscheck")
endif()
