// The exception a device run's step throws on a failed CUDA, cuBLAS or
// cuSOLVER call (library_checks.cuh): the status of sptensor.h and the
// message. The plugin's entries run inside guarded() (plugin_common.cuh),
// which returns them through the C table.
#pragma once

#include <string>

namespace spt::cuda::library_checks {

struct Failure {
  int code;
  std::string message;
};

}  // namespace spt::cuda::library_checks
