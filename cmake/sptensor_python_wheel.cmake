# The Python wheel: `pip install ./python` builds this project through
# scikit-build-core (python/pyproject.toml), which sets SKBUILD_PLATLIB_DIR
# and installs only the `python` component below: the shared library (and
# the CUDA plugin when one is built) as single files inside the `sptensor`
# package, where sptensor/_lib.py looks for them. A wheel cannot hold
# symlinks, so the library goes in under its SONAME only (libsptensor.so.1,
# the name the loader and the plugin lookup use), not as the versioned file
# plus links of the ordinary install. Headers, pkg-config and CMake package
# files stay out of the wheel (they belong to the ordinary install).
# Included from the top-level CMakeLists.txt after the library target.
if(DEFINED SKBUILD_PLATLIB_DIR)
  set(SPT_WHEEL_PACKAGE_DIR ${SKBUILD_PLATLIB_DIR}/sptensor)
  install(FILES $<TARGET_FILE:sptensor> DESTINATION ${SPT_WHEEL_PACKAGE_DIR}
          RENAME libsptensor.so.${PROJECT_VERSION_MAJOR}
          PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
          COMPONENT python)
  if(TARGET sptensor_cuda)
    install(FILES $<TARGET_FILE:sptensor_cuda> DESTINATION ${SPT_WHEEL_PACKAGE_DIR}
            PERMISSIONS OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE
            COMPONENT python)
  endif()
  message(STATUS "Python wheel: libsptensor.so.${PROJECT_VERSION_MAJOR} into ${SPT_WHEEL_PACKAGE_DIR}")
endif()
