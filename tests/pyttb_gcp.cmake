# Cross-check of GCP-OPT against pyttb.gcp_opt with its LBFGSB optimizer
# (pip install pyttb): every loss on small tensors from the same initial
# factors; same iteration count and objectives within 1e-8 relative. Exits
# 77 (skipped) when numpy/pyttb cannot be imported, except with CI=true.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND SPT_LBFGSB_LIBS)
  add_test(NAME pyttb_gcp_crosscheck
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/check_gcp_pyttb.py $<TARGET_FILE:sptensor>)
  set_tests_properties(pyttb_gcp_crosscheck PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "crosscheck")
endif()
