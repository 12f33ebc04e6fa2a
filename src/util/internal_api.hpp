// SPT_INTERNAL_API: the few internal C++ functions and classes that
// libsptensor_mpi.so calls in libsptensor.so. The library is built with
// hidden visibility and exports only its C API; these are exported too
// (cmake/sptensor.map), so that the MPI library links libsptensor.so
// instead of carrying a second copy of the core. They are no part of the
// public ABI: only libsptensor_mpi.so of the same build may call them
// (docs/architecture.md, "Layers"; the ctest abi_exports lists them).
#pragma once

#define SPT_INTERNAL_API __attribute__((visibility("default")))
