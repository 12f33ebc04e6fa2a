# The CUDA plugin: the GPU tests (tests/unit/test_cuda*.cpp) find the plugin
# this build made (the tests link the library statically, so "beside
# libsptensor.so" would be the test's own directory), and the plugin must
# not need libcudart.so (runtime linked statically) nor export anything but
# its entry point.
if(TARGET sptensor_cuda)
  foreach(src ${SPT_UNIT_TESTS})
    get_filename_component(name ${src} NAME_WE)
    if(name MATCHES "^test_cuda")
      target_compile_definitions(${name} PRIVATE SPT_CUDA_PLUGIN_FILE="$<TARGET_FILE:sptensor_cuda>")
      add_dependencies(${name} sptensor_cuda)
    endif()
  endforeach()
endif()
# The chained-TTMc kernel test calls the kernels directly (as bench_gpu):
# it links the kernel library; without CUDA only its host tests are built.
if(TARGET test_cuda_chain AND TARGET sptensor_cuda_kernels)
  target_link_libraries(test_cuda_chain PRIVATE sptensor_cuda_kernels)
  target_compile_definitions(test_cuda_chain PRIVATE SPT_TEST_CUDA_KERNELS=1)
endif()
# The streamed-path test checks the chunk plan, a host function of the
# kernel library, on any machine where the plugin is built.
if(TARGET test_cuda_streamed AND TARGET sptensor_cuda_kernels)
  target_link_libraries(test_cuda_streamed PRIVATE sptensor_cuda_kernels)
  target_compile_definitions(test_cuda_streamed PRIVATE SPT_TEST_CUDA_KERNELS=1)
endif()
if(TARGET test_cuda AND TARGET sptensor_cuda)
  add_test(NAME cuda_plugin_linkage
    COMMAND sh -c "readelf -d \"$0\" | grep -q 'NEEDED.*libcudart' && { echo 'plugin needs libcudart.so'; exit 1; }; \
syms=$(nm -D --defined-only \"$0\" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | grep -vE '^(_init|_fini|_edata|_end|__bss_start)$'); \
[ \"$syms\" = spt_cuda_plugin_entry ] || { echo \"plugin exports: $syms\"; exit 1; }; echo 'plugin linkage OK'"
            $<TARGET_FILE:sptensor_cuda>)
endif()

# A plugin with a future interface version must be refused with a message
# (on any machine; the plugin is plain C).
if(TARGET test_cuda)
  add_library(spt_fake_cuda_plugin MODULE ${CMAKE_CURRENT_SOURCE_DIR}/cuda/fake_plugin.c)
  target_include_directories(spt_fake_cuda_plugin PRIVATE ${PROJECT_SOURCE_DIR}/src)
  add_dependencies(test_cuda spt_fake_cuda_plugin)
  add_test(NAME cuda_plugin_version_mismatch
    COMMAND test_cuda --gtest_filter=CudaPlugin.VersionMismatchRefused)
  set_tests_properties(cuda_plugin_version_mismatch PROPERTIES
    ENVIRONMENT "SPT_PLUGIN_PATH=$<TARGET_FILE:spt_fake_cuda_plugin>;SPT_EXPECT_PLUGIN_REFUSED=1")
  # Without an NVIDIA driver the library's own search loads no plugin.
  add_test(NAME cuda_plugin_not_loaded_without_driver
    COMMAND test_cuda --gtest_filter=CudaPlugin.NotLoadedWithoutADriverDevice)
  set_tests_properties(cuda_plugin_not_loaded_without_driver PROPERTIES
    ENVIRONMENT "SPT_PLUGIN_PATH=;SPT_EXPECT_NO_DRIVER_LOAD=1")
endif()
