# ABI guard: the public headers' C ABI (prototypes, struct layouts, enum
# values, via libabigail's abidw) and the exported symbols compared with the
# stored baseline in abi/; an incompatible change fails unless the SONAME is
# bumped. Regenerate deliberately with scripts/update-abi-baseline.sh.
# Skips (77) without abigail-tools, except with CI=true.
add_test(NAME abi_baseline
  COMMAND ${CMAKE_COMMAND} -E env CC=${CMAKE_C_COMPILER}
          ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_abi_baseline.sh $<TARGET_FILE:sptensor> ${PROJECT_SOURCE_DIR}
          ${CMAKE_CURRENT_BINARY_DIR}/abi_baseline)
set_tests_properties(abi_baseline PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120 LABELS "abi")
