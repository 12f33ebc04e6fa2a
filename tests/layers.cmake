# The layers the build enforces (docs/architecture.md, "Layers"):
# scripts/check_layers.py fails on an include that points up or sideways
# between src/ layers, an include in cuda/ of anything of src/ but the
# plugin ABI header, a source no layer target lists, or a layer target whose
# dependencies differ from the script's table. layers_include_check_self_test
# checks that the checker catches seeded violations.
find_package(Python3 COMPONENTS Interpreter QUIET)
if(NOT Python3_Interpreter_FOUND)
  return()
endif()
add_test(NAME layers_include_check
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py ${PROJECT_SOURCE_DIR})
add_test(NAME layers_include_check_self_test
  COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_layers.py --self-test)
set_tests_properties(layers_include_check layers_include_check_self_test PROPERTIES TIMEOUT 60 LABELS "layers")

# The x86-64-v3 copy of the CPU kernels (src/kernels/cpu/variant.hpp): no
# code it shares with the baseline copy uses instructions beyond x86-64, and
# its kernels do use x86-64-v3's (scripts/check_cpu_variant.py).
if(SPT_CPU_X86_64_V3_KERNELS)
  add_test(NAME cpu_variant_check
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_cpu_variant.py
            $<TARGET_OBJECTS:sptensor_kernels_x86_64_v3>
    COMMAND_EXPAND_LISTS)
  add_test(NAME cpu_variant_check_self_test
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_cpu_variant.py --self-test ${CMAKE_CXX_COMPILER})
  set_tests_properties(cpu_variant_check cpu_variant_check_self_test PROPERTIES
    TIMEOUT 120 LABELS "layers" SKIP_RETURN_CODE 77)
endif()
