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
# GCP-SGD against pyttb.gcp_opt with its Adam solver on the bundled nations
# tensor (Bernoulli-logit and Poisson): our final exact objective within 1%
# of pyttb's, or below it (issue 26's acceptance check).
if(Python3_Interpreter_FOUND)
  add_test(NAME pyttb_gcp_sgd_crosscheck
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python/check_gcp_sgd_pyttb.py $<TARGET_FILE:sptensor>
            ${CMAKE_CURRENT_SOURCE_DIR}/data/nations.tns.xz)
  set_tests_properties(pyttb_gcp_sgd_crosscheck PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "crosscheck")
endif()
