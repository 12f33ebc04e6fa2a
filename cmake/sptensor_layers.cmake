# The library's layers (docs/architecture.md, "Layers"): one CMake target
# per folder of src/, each with its explicit sources and dependencies that
# only point down:
#
#   util (header-only) <- core <- io, kernels <- dispatch <- reorder, algo <- api
#
# (the CLI, src/cli, links only the shared library and util). A layer's
# objects are compiled once; libsptensor.so and the internal archive the
# tests link are made from all of them (CMakeLists.txt). The same table is
# in scripts/check_layers.py, which fails (ctest layers_include_check) on an
# include that points up or sideways, a source under src/ that no layer
# lists, or a DEPENDS list here that differs from its table.

# spt_add_layer(<layer> DEPENDS <lower layers...> SOURCES <files under src/...>)
# makes the OBJECT library sptensor_<layer>. DEPENDS name layers only; each
# is linked PUBLIC, so a layer's own headers may name the types of the
# layers below it (the headers are compiled into the layers above).
function(spt_add_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "DEPENDS;SOURCES")
  list(TRANSFORM arg_SOURCES PREPEND ${PROJECT_SOURCE_DIR}/src/)
  add_library(sptensor_${layer} OBJECT ${arg_SOURCES})
  target_include_directories(sptensor_${layer} PUBLIC
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
    $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)
  target_compile_definitions(sptensor_${layer} PRIVATE SPT_BUILDING_LIBRARY)
  target_compile_options(sptensor_${layer} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  if(SPT_NATIVE)
    target_compile_options(sptensor_${layer} PRIVATE -march=native)
  endif()
  target_link_libraries(sptensor_${layer} PUBLIC OpenMP::OpenMP_CXX Threads::Threads)
  foreach(dep IN LISTS arg_DEPENDS)
    target_link_libraries(sptensor_${layer} PUBLIC sptensor_${dep})
  endforeach()
  set_property(GLOBAL APPEND PROPERTY SPT_LAYERS ${layer})
endfunction()

# util: header-only helpers below every layer (and the CLI).
add_library(sptensor_util INTERFACE)
target_include_directories(sptensor_util INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/src>)

spt_add_layer(core
  DEPENDS util
  SOURCES
    core/context.cpp core/coo.cpp core/csf.cpp core/csf_keyed_build.cpp core/csf_node_counts.cpp core/subnormals.cpp core/fcoo.cpp core/hbcsf.cpp core/hicoo.cpp
    core/hls.cpp core/ktensor.cpp core/matrix.cpp core/mode_groups.cpp core/radix_sort.cpp
    core/sort.cpp)

spt_add_layer(io
  DEPENDS core
  SOURCES
    io/binary_util.cpp io/compression.cpp io/duplicates.cpp io/input_source.cpp io/io.cpp
    io/output_file.cpp io/splatt_binary.cpp io/spt_binary.cpp io/tns_text_reader.cpp
    io/tns_text_writer.cpp)
target_compile_definitions(sptensor_io PRIVATE ${SPT_COMPRESSION_DEFS})
target_link_libraries(sptensor_io PRIVATE ${SPT_COMPRESSION_LIBS})
# Public to what links the internal archive (unit tests, fuzzers, benchmarks
# include io/checksum.hpp); libsptensor itself exports no xxHash.
target_include_directories(sptensor_io PUBLIC $<BUILD_INTERFACE:${SPT_XXHASH_INCLUDE_DIR}>)

spt_add_layer(kernels
  DEPENDS core
  SOURCES
    kernels/ttm_fibers.cpp kernels/cpu/cp_apr_phi.cpp kernels/cpu/cp_apr_phi_hicoo.cpp
    kernels/cpu/dense.cpp kernels/cpu/elementwise.cpp kernels/cpu/elementwise_scalar.cpp
    kernels/cpu/fcoo.cpp kernels/cpu/gcp.cpp kernels/cpu/hls.cpp kernels/cpu/khatri_rao.cpp kernels/cpu/kronecker.cpp
    kernels/cpu/mttkrp.cpp kernels/cpu/mttkrp_csf.cpp kernels/cpu/mttkrp_hbcsf.cpp
    kernels/cpu/mttkrp_hbcsf_mode.cpp kernels/cpu/mttkrp_hicoo.cpp kernels/cpu/ttm.cpp
    kernels/cpu/ttm_chain.cpp kernels/cpu/ttmc.cpp kernels/cpu/ttv.cpp kernels/cpu/ttv_chain.cpp
    kernels/cpu/unfold_csr.cpp kernels/reference/cp_apr_phi.cpp
    kernels/reference/cp_apr_phi_hicoo.cpp kernels/reference/dense.cpp
    kernels/reference/elementwise.cpp kernels/reference/elementwise_scalar.cpp
    kernels/reference/fcoo.cpp kernels/reference/gcp.cpp kernels/reference/hls.cpp kernels/reference/khatri_rao.cpp
    kernels/reference/kronecker.cpp kernels/reference/mttkrp.cpp kernels/reference/mttkrp_csf.cpp
    kernels/reference/mttkrp_hbcsf.cpp kernels/reference/mttkrp_hicoo.cpp kernels/reference/ttm.cpp
    kernels/reference/ttm_chain.cpp kernels/reference/ttmc.cpp kernels/reference/ttv.cpp
    kernels/reference/ttv_chain.cpp kernels/reference/unfold_csr.cpp)

# The CPU kernels once more for x86-64-v3 (AVX2, FMA, BMI2), into namespace
# spt::kernels::cpu_x86_64_v3: the dispatcher runs them where the CPU has
# those instructions (kernels/cpu/variant.hpp says how the two copies stay
# apart). Not with SPT_NATIVE, which compiles every kernel for the build host,
# and GCC only: Clang ignores `#pragma GCC target`, so its second copy would
# be the baseline again.
if(SPT_CPU_DISPATCH AND NOT SPT_NATIVE AND CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$"
   AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  get_target_property(spt_cpu_kernel_sources sptensor_kernels SOURCES)
  list(FILTER spt_cpu_kernel_sources INCLUDE REGEX "/src/kernels/cpu/[^/]*\\.cpp$")
  add_library(sptensor_kernels_x86_64_v3 OBJECT ${spt_cpu_kernel_sources})
  target_compile_definitions(sptensor_kernels_x86_64_v3 PRIVATE SPT_BUILDING_LIBRARY SPT_CPU_VARIANT_X86_64_V3)
  target_compile_options(sptensor_kernels_x86_64_v3 PRIVATE -Wall -Wextra -Wno-unused-parameter)
  target_link_libraries(sptensor_kernels_x86_64_v3 PUBLIC sptensor_kernels)
  # Seen by every layer above core and by what links the library's objects.
  target_compile_definitions(sptensor_core PUBLIC SPT_HAVE_CPU_X86_64_V3_KERNELS)
  set(SPT_CPU_X86_64_V3_KERNELS ON)
else()
  set(SPT_CPU_X86_64_V3_KERNELS OFF)
endif()

spt_add_layer(dispatch
  DEPENDS kernels
  SOURCES
    dispatch/device.cpp dispatch/device_cp_apr.cpp dispatch/device_hls.cpp dispatch/device_streamed.cpp
    dispatch/device_ttm.cpp dispatch/device_tucker.cpp
    dispatch/gpu_format.cpp dispatch/multi_device.cpp dispatch/plugin_hbcsf.cpp dispatch/plugin_loader.cpp)
target_link_libraries(sptensor_dispatch PRIVATE ${CMAKE_DL_LIBS})

spt_add_layer(reorder
  DEPENDS dispatch
  SOURCES
    reorder/bfs_mcs.cpp reorder/compute.cpp reorder/lexi_order.cpp reorder/partition_refinement.cpp
    reorder/permutation.cpp reorder/random_order.cpp reorder/relabel.cpp)

spt_add_layer(algo
  DEPENDS dispatch
  SOURCES
    algo/cp_als.cpp algo/cp_apr.cpp algo/dense_steps.cpp algo/format_advice.cpp algo/gcp_opt.cpp algo/gcp_sgd.cpp algo/hicoo_operand.cpp algo/lbfgsb.cpp
    algo/memo_mttkrp.cpp algo/mttkrp_operands.cpp algo/normal_equations.cpp algo/summed_norm.cpp
    algo/ttm_chain.cpp algo/tucker_hooi.cpp)
target_include_directories(sptensor_algo PRIVATE ${SPT_CBLAS_INCLUDE_DIR} ${SPT_LAPACKE_INCLUDE_DIR})
if(SPT_LBFGSB_LIBS)
  target_compile_definitions(sptensor_algo PRIVATE SPT_HAVE_LBFGSB=1)
endif()

spt_add_layer(api
  DEPENDS algo reorder io
  SOURCES
    api/api_advice.cpp api/api_context.cpp api/api_coo.cpp api/api_cp_apr.cpp api/api_cpd.cpp
    api/api_csf.cpp api/api_dense.cpp api/api_fcoo.cpp api/api_gcp.cpp api/api_hbcsf.cpp api/api_hicoo.cpp
    api/api_hls.cpp api/api_io.cpp api/api_kernels.cpp api/api_ktensor.cpp api/api_matrix.cpp
    api/api_reorder.cpp api/api_ttm_chain.cpp api/api_ttv_chain.cpp api/api_tucker.cpp)
