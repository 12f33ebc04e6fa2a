// Error checks shared by the device CP-ALS and Tucker-HOOI runs
// (cp_als.cu, tucker_hooi.cu): a failed CUDA, cuBLAS or cuSOLVER call
// throws a Failure (status of sptensor.h + message) that the run's entry
// catches and returns through the C table.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <cusolverDn.h>

#include <sstream>
#include <string>

#include "cp_als.cuh"
#include "step_failure.cuh"

namespace spt::cuda::library_checks {

template <typename... Parts>
std::string text(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}

inline void check(cudaError_t err, const char* what) {
  if (err == cudaSuccess) return;
  cudaGetLastError();  // clear a non-sticky error
  throw Failure{err == cudaErrorMemoryAllocation ? status::out_of_memory : status::device,
                text(what, " failed (", cudaGetErrorName(err), ": ", cudaGetErrorString(err), ")")};
}
inline void check(cublasStatus_t st, const char* what) {
  if (st == CUBLAS_STATUS_SUCCESS) return;
  throw Failure{st == CUBLAS_STATUS_ALLOC_FAILED ? status::out_of_memory : status::device,
                text("cuBLAS ", what, " failed (", cublasGetStatusName(st), ")")};
}
inline void check(cusolverStatus_t st, const char* what) {
  if (st == CUSOLVER_STATUS_SUCCESS) return;
  throw Failure{st == CUSOLVER_STATUS_ALLOC_FAILED ? status::out_of_memory : status::device,
                text("cuSOLVER ", what, " failed (status ", int(st), ")")};
}
inline void check_launch(const char* what) { check(cudaGetLastError(), what); }

}  // namespace spt::cuda::library_checks
