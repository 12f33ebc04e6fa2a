# The Doxygen API reference (docs/Doxyfile over include/sptensor/*.h plus the
# user guide docs/guide.md) builds without a single warning: every public
# symbol is documented. Skips (77) without doxygen, except with CI=true.
add_test(NAME docs_doxygen
  COMMAND ${PROJECT_SOURCE_DIR}/docs/check_doxygen.sh ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/docs)
set_tests_properties(docs_doxygen PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS "docs")
