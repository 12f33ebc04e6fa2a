# Client test: install the build into a temporary prefix, then build
# tests/client/client_test.c (C99) against it via pkg-config and via CMake
# find_package(sptensor), run both, and check the SONAME. See
# tests/client/run_client_test.sh.
find_file(SPT_CLIENT_NATIONS nations.tns.xz
  PATHS ${CMAKE_CURRENT_SOURCE_DIR}/data ${PROJECT_SOURCE_DIR}/../shared/data NO_DEFAULT_PATH)
find_program(SPT_READELF readelf)
find_program(SPT_PKG_CONFIG pkg-config)

add_test(NAME client_c_install
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/client/run_client_test.sh
          ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/client-install
          ${CMAKE_COMMAND} ${SPT_CLIENT_NATIONS})
set_tests_properties(client_c_install PROPERTIES TIMEOUT 300)
if(NOT SPT_CLIENT_NATIONS OR NOT SPT_READELF OR NOT SPT_PKG_CONFIG)
  message(STATUS "client_c_install disabled: needs nations.tns.xz, readelf and pkg-config")
  set_tests_properties(client_c_install PROPERTIES DISABLED TRUE)
endif()
