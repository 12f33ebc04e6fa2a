# ABI checks: exported symbol set, SONAME, and that the public header compiles
# as strict C99 and as C++ against the shared library.
add_test(NAME abi_exports
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/abi/check_exports.sh $<TARGET_FILE:sptensor>
          ${PROJECT_SOURCE_DIR}/include/sptensor/sptensor.h ${PROJECT_SOURCE_DIR}/abi/libsptensor.internal)

add_executable(abi_header_c99 ${CMAKE_CURRENT_SOURCE_DIR}/abi/header_c99.c)
set_target_properties(abi_header_c99 PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF)
target_compile_options(abi_header_c99 PRIVATE -Wall -Wextra -Wpedantic -Werror)
target_link_libraries(abi_header_c99 PRIVATE sptensor)
add_test(NAME abi_header_c99 COMMAND abi_header_c99)

add_executable(abi_header_cxx ${CMAKE_CURRENT_SOURCE_DIR}/abi/header_cxx.cpp)
target_compile_options(abi_header_cxx PRIVATE -Wall -Wextra -Wpedantic -Werror)
target_link_libraries(abi_header_cxx PRIVATE sptensor)
add_test(NAME abi_header_cxx COMMAND abi_header_cxx)
