# Every DEVICE entry of the kernel lists has a reference kernel
# (src/kernels/reference/) and a GPU test (tests/unit/test_cuda*.cpp) that
# runs it against that reference kernel (scripts/check_device_kernels.py;
# docs/architecture.md, "Kernel lists"). A CPU-side check: it reads the
# sources, so it runs (and fails) on machines without a GPU too. The
# self-test seeds each kind of violation and checks that it is reported.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
add_test(NAME device_kernels_have_references
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_device_kernels.py ${PROJECT_SOURCE_DIR})
add_test(NAME device_kernels_have_references_self_test
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_device_kernels.py --self-test)
set_tests_properties(device_kernels_have_references device_kernels_have_references_self_test
  PROPERTIES TIMEOUT 60 LABELS "lint")
