# Client test: install the build into a temporary prefix (not the configured
# one), then, with only PKG_CONFIG_PATH / CMAKE_PREFIX_PATH pointing there,
# build and run tests/client/client_test.c (C99) via pkg-config and via CMake
# find_package(sptensor), the C and Fortran examples of README.md and
# docs/guide.md with their documented commands verbatim, then move the
# installed tree and build from the new place again (relocatable .pc and
# CMake package files), and load it through the Python package's pkg-config
# route. See tests/client/run_client_test.sh.
find_file(SPT_CLIENT_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
find_program(SPT_READELF readelf)
find_program(SPT_PKG_CONFIG pkg-config)
find_package(Python3 COMPONENTS Interpreter QUIET)

add_test(NAME client_c_install
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/client/run_client_test.sh
          ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/client-install
          ${CMAKE_COMMAND} ${SPT_CLIENT_NATIONS} "$<$<BOOL:${Python3_Interpreter_FOUND}>:${Python3_EXECUTABLE}>")
set_tests_properties(client_c_install PROPERTIES TIMEOUT 300)
if(NOT SPT_CLIENT_NATIONS OR NOT SPT_READELF OR NOT SPT_PKG_CONFIG)
  message(STATUS "client_c_install disabled: needs nations.tns.xz, readelf and pkg-config")
  set_tests_properties(client_c_install PROPERTIES DISABLED TRUE)
elseif(NOT SPT_PC_RELOCATABLE)
  message(STATUS "client_c_install disabled: the .pc files name the configured prefix "
                 "(SPT_RELOCATABLE_PKGCONFIG=OFF or an absolute install dir), the test installs elsewhere")
  set_tests_properties(client_c_install PROPERTIES DISABLED TRUE)
endif()
