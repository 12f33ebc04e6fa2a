# Cross-check of CP-ALS against pyttb (pip install pyttb): same tensors, same
# initial factors, fixed iteration count; fits must agree to 1e-6 relative.
# The script exits 77 (skipped) when numpy/pyttb cannot be imported, except
# with CI=true in the environment, where that is a failure.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME pyttb_cp_als_crosscheck
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/check_cp_als_pyttb.py
            $<TARGET_FILE:sptensor> ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data)
  set_tests_properties(pyttb_cp_als_crosscheck PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "crosscheck")
else()
  message(STATUS "Python 3 not found: the pyttb CP-ALS cross-check is not registered")
endif()
