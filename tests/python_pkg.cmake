# The Python package (python/, `import sptensor`): pip install into the test
# virtual environment (Python3_EXECUTABLE, <build>/pyenv from scripts/test.sh),
# then tests/python_pkg/test_package.py against the built library: round
# trips, COO from numpy, MTTKRP vs numpy einsum, cp_als / tucker vs pyttb,
# TTV/TTM/TTMc/F-COO/dense/reorder/cp_apr vs pyttb and numpy, errors,
# backends, library discovery, ctypes struct layouts vs the header, progress
# bars (test_progress.py). The optional sptensor.mpi module is tested by
# python_mpi_cpd (tests/mpi.cmake).
# Skips (77) without numpy or pip, except with CI=true, where it fails.
find_package(Python3 COMPONENTS Interpreter)
add_executable(python_pkg_layout_probe ${CMAKE_CURRENT_SOURCE_DIR}/python_pkg/layout_probe.c)
target_link_libraries(python_pkg_layout_probe PRIVATE sptensor)
if(Python3_Interpreter_FOUND)
  add_test(NAME python_pkg
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python_pkg/run.sh ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/python_pkg $<TARGET_FILE:sptensor> ${CMAKE_CURRENT_SOURCE_DIR}/data
            $<TARGET_FILE:python_pkg_layout_probe>)
  set_tests_properties(python_pkg PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 600 LABELS "python;crosscheck")
  # pip install ./python into a new virtual environment, as a user does: the
  # library is compiled again into the wheel (scikit-build-core), so the test
  # is long (the cost seed, ctest_costs/release.txt, starts it first). Its
  # build runs two compilers (CMAKE_BUILD_PARALLEL_LEVEL in the script) but
  # takes one ctest slot, so the other tests keep running beside it.
  add_test(NAME python_pkg_fresh_install
    COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/python_pkg/fresh_install.sh ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}
            ${CMAKE_CURRENT_BINARY_DIR}/python_pkg_fresh_install ${CMAKE_CURRENT_SOURCE_DIR}/data)
  set_tests_properties(python_pkg_fresh_install PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 1500
    LABELS "python;install")
else()
  message(STATUS "Python 3 not found: the Python package test is not registered")
endif()
