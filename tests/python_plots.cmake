# Pictures (issue 24): CPResult.viz(), plot_convergence() and
# scripts/plot_fit.py (the CLI's fit history as an image) render to files that
# must be non-empty PNG/SVG images drawing the model's data. Runs the source
# tree's python/ package (PYTHONPATH) against the built library. Skips (77)
# without numpy or matplotlib, except with CI=true, where it fails.
if(NOT TARGET sptensor_cli)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
find_file(SPT_PLOTS_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
if(Python3_Interpreter_FOUND AND SPT_PLOTS_NATIONS)
  add_test(NAME python_plots
    COMMAND ${CMAKE_COMMAND} -E env PYTHONPATH=${PROJECT_SOURCE_DIR}/python SPTENSOR_LIBRARY=$<TARGET_FILE:sptensor>
            MPLBACKEND=Agg OMP_WAIT_POLICY=passive
            ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/python_pkg/test_plots.py
            ${CMAKE_CURRENT_BINARY_DIR}/python_plots ${SPT_PLOTS_NATIONS} $<TARGET_FILE:sptensor_cli>
            ${PROJECT_SOURCE_DIR}/scripts/plot_fit.py)
  set_tests_properties(python_plots PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "python")
endif()
