# Cross-check of CP-APR (multiplicative updates) against
# pyttb.cp_apr(algorithm="mu") (pip install pyttb): same count tensors, same
# initial factors, same parameters, fixed outer-iteration counts; final
# log-likelihoods must agree to 1e-6 relative. Exits 77 (skipped) when
# numpy/pyttb cannot be imported, except with CI=true.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  add_test(NAME pyttb_cp_apr_crosscheck
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/check_cp_apr_pyttb.py
            $<TARGET_FILE:sptensor> ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data)
  set_tests_properties(pyttb_cp_apr_crosscheck PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "crosscheck")
endif()
