# The CLI's generated man page and bash completion (cmake/sptensor_manpage.cmake):
# tests/manpage/check_manpage.sh checks sections, options, groff warnings,
# `bash -n`, and completions of subcommands, options and option values.
if(NOT SPT_BUILD_MANPAGE)
  return()
endif()
add_test(NAME cli_manpage_completion
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/manpage/check_manpage.sh $<TARGET_FILE:sptensor_cli> ${SPT_MANPAGE} ${SPT_COMPLETION}
          ${PROJECT_BINARY_DIR} ${CMAKE_COMMAND} ${CMAKE_CURRENT_BINARY_DIR}/manpage-install)
set_tests_properties(cli_manpage_completion PROPERTIES TIMEOUT 60)
