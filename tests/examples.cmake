# The C examples in examples/c/ (the ones the user guide points to) are
# compiled as strict C99 with warnings as errors and run on a bundled tensor;
# each exits non-zero when its own result check fails.
file(GLOB SPT_C_EXAMPLES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/examples/c/*.c)
foreach(src ${SPT_C_EXAMPLES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(example_${name} ${src})
  set_target_properties(example_${name} PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
  target_compile_options(example_${name} PRIVATE -Wall -Wextra -Wpedantic -Werror)
  target_link_libraries(example_${name} PRIVATE sptensor m)
  add_test(NAME example_${name}
    COMMAND example_${name} ${CMAKE_CURRENT_SOURCE_DIR}/data/nations.tns.xz 4)
  set_tests_properties(example_${name} PROPERTIES TIMEOUT 120 LABELS "examples"
    ENVIRONMENT "OMP_NUM_THREADS=2;OMP_WAIT_POLICY=passive;OPENBLAS_NUM_THREADS=1")
endforeach()
