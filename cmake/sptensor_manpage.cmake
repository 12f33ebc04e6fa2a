# Man page (share/man/man1/sptensor.1) and bash completion
# (share/bash-completion/completions/sptensor) of the `sptensor` CLI,
# generated at build time from the built binary's --help output by
# scripts/gen-manpage.py (so they always match the CLI). Needs Python 3;
# without it they are skipped with a note. Included from the top-level
# CMakeLists.txt after the CLI target.
set(SPT_BUILD_MANPAGE OFF)
if(TARGET sptensor_cli)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    set(SPT_BUILD_MANPAGE ON)
    set(SPT_MANPAGE ${PROJECT_BINARY_DIR}/man/sptensor.1)
    set(SPT_COMPLETION ${PROJECT_BINARY_DIR}/completion/sptensor)
    add_custom_command(OUTPUT ${SPT_MANPAGE} ${SPT_COMPLETION}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${PROJECT_BINARY_DIR}/man ${PROJECT_BINARY_DIR}/completion
      COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/gen-manpage.py $<TARGET_FILE:sptensor_cli>
              --man ${SPT_MANPAGE} --completion ${SPT_COMPLETION}
      DEPENDS sptensor_cli ${PROJECT_SOURCE_DIR}/scripts/gen-manpage.py
      COMMENT "Generating the sptensor man page and bash completion from --help"
      VERBATIM)
    add_custom_target(sptensor_manpage ALL DEPENDS ${SPT_MANPAGE} ${SPT_COMPLETION})
    install(FILES ${SPT_MANPAGE} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1)
    install(FILES ${SPT_COMPLETION} DESTINATION ${CMAKE_INSTALL_DATADIR}/bash-completion/completions)
  endif()
endif()
message(STATUS "sptensor man page and bash completion: ${SPT_BUILD_MANPAGE}")
