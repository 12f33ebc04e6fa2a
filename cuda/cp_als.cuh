// CP-ALS entirely on the GPU (plugin table entry cp_als, ABI version 2).
//
// The sweep is the core's CPU loop (src/algo/cp_als.cpp) step by step, with
// the same numerics: per mode the COO MTTKRP (mttkrp.cuh), the Hadamard
// product of the other modes' Gram matrices, a Cholesky solve (cuSOLVER
// potrf/potrs) unless the matrix is not positive definite or its reciprocal
// condition number is below machine epsilon, then the pseudo-inverse from a
// symmetric eigen-decomposition (cuSOLVER syevd, eigenvalues above
// R * eps * max|w|); column norms into lambda (2-norm in the first sweep,
// max(max |column|, 1) after, accumulated in double), the Gram of the new
// factor (an own kernel accumulating in double: cuBLAS syrk was slow and
// inaccurate for tall-skinny float32 factors, see cp_als.cu); per sweep
// <X, M> (from the last mode's MTTKRP; in float32 also the rounding noise
// it carries, so the core can ask for <X, M> summed exactly over the
// nonzeros) and ||M||^2 in double (from double copies of the Grams). Only scalars come back to the host: once per mode (the
// solve's branch: Cholesky info, condition, non-finite flags) and once per
// sweep (the two fit terms).
//
// Two streams: the main chain runs on one; each new factor's Gram
// runs on a second while the next mode's MTTKRP proceeds on the first (the
// MTTKRP does not need Grams; the Hadamard product after it waits on an
// event).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "dispatch/plugin_abi.h"
#include "mttkrp.cuh"

namespace spt::cuda {

// Status values of sptensor.h (the numbers are part of the stable ABI).
namespace status {
constexpr int ok = 0;
constexpr int invalid_argument = -1;
constexpr int out_of_memory = -4;
constexpr int unsupported = -5;
constexpr int device = -6;
constexpr int numerical = -8;
}  // namespace status

// Device bytes a CP-ALS of this shape allocates besides the tensor copy:
// factors, the MTTKRP output, the R x R matrices, reduction partials,
// scalars. cuSOLVER's workspace and the cuBLAS/cuSOLVER handles come on top
// (cp_als_library_reserve).
size_t cp_als_device_bytes(uint32_t order, const uint32_t* dims, uint32_t rank, size_t value_size);

// Largest rank the device CP-ALS takes (a Gram tile holds at least one
// factor row in 48 KiB of shared memory); larger ranks run on the CPU.
constexpr uint32_t cp_als_max_rank = 6144;

// What the library handles and the solver workspace are allowed for in the
// working-set check (an upper bound for ranks up to a few thousand).
constexpr size_t cp_als_library_reserve = size_t(64) << 20;

// Called once after the run's workspace is allocated and before the first
// sweep (e.g. to make per-mode sorted copies from what memory is left);
// returns a status and sets `error`.
using CpAlsPrepareFn = std::function<int(std::string& error)>;

// Launches the MTTKRP of the device tensor in `mode` into out (dims[mode] x
// rank, zeroed by the caller) from the device factors of every mode, on
// `stream`; returns the launch error. COO (mttkrp.cuh) and F-COO (fcoo.cuh)
// provide one: the sweep is the same for every format.
template <typename T>
using MttkrpLauncher =
    std::function<cudaError_t(uint32_t mode, const T* const* factors, uint32_t rank, T* out, cudaStream_t stream)>;

// Launches *out += <X, [[lambda; factors]]> summed in double over the
// nonzeros (out: a device double, zeroed by the caller) on `stream`;
// returns the launch error. Empty when the run holds no COO copy of X.
template <typename T>
using ExactInnerLauncher =
    std::function<cudaError_t(const T* const* factors, const T* lambda, uint32_t rank, double* out,
                              cudaStream_t stream)>;

// Runs the CP-ALS of a device tensor of `order` modes (dims[order], on the
// current device) whose MTTKRPs `mttkrp` launches, as described by args
// (spt_plugin_cp_als_args, plugin_abi.h); `exact_inner` answers the
// on_sweep hook's SPT_PLUGIN_EXACT_INNER. Returns a status; on failure
// `error` says what failed. T = float or double.
template <typename T>
int run_cp_als(uint32_t order, const uint32_t* dims, const CpAlsPrepareFn& prepare, const MttkrpLauncher<T>& mttkrp,
               const ExactInnerLauncher<T>& exact_inner, const spt_plugin_cp_als_args& args, int multiprocessors,
               std::string& error);

}  // namespace spt::cuda
