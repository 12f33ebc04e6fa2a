// The steps of CP-ALS on the GPU (plugin family CP_STEPS): a session holds
// one run's factors, lambda, MTTKRP output, Grams and solver workspace on
// the device; the loop over sweeps and modes, the solve-branch choice, the
// fit, convergence and callbacks are the core's (src/algo/cp_als.cpp), the
// same loop the CPU runs.
//
// The steps have the CPU's numerics: per mode the MTTKRP (mttkrp.cuh,
// fcoo.cuh), the Hadamard product of the other modes' Gram matrices, its
// Cholesky factor (cuSOLVER potrf) and reciprocal condition number (from
// the exact inverse), the solve by potrs or by the pseudo-inverse from a
// symmetric eigen-decomposition (cuSOLVER syevd, eigenvalues above R * eps
// * max|w|); column norms into lambda (2-norm in the first sweep, max(max
// |column|, 1) after, accumulated in double), the Gram of the new factor (an
// own kernel accumulating in double: cuBLAS syrk was slow and inaccurate
// for tall-skinny float32 factors, see cp_als.cu); per sweep <X, M> (from
// the last mode's MTTKRP; in float32 also the rounding noise it carries, so
// the core can ask for <X, M> summed exactly over the nonzeros) and ||M||^2
// in double (from double copies of the Grams). Only scalars come back to
// the host: once per mode (the solve's branch: Cholesky info, condition,
// non-finite flags) and once per sweep (the fit terms).
//
// Two streams: the main chain runs on one; each new factor's Gram runs on
// a second while the next mode's MTTKRP proceeds on the first (the MTTKRP
// does not need Grams; the Hadamard product after it waits on an event).
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

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

// Most sessions a multi-device group joins (plugin_multi.cu). Every
// session's factors and MTTKRP output have cp_als_max_group - 1 rows of
// slack past dims[m], so that a group of P sessions can exchange P equal
// row shares of ceil(dims[m] / P) rows in place (NCCL reduce-scatter and
// all-gather); the slack rows are never read as factor rows.
constexpr uint32_t cp_als_max_group = 64;

// Where a session keeps what a multi-device group (plugin_multi.cu)
// exchanges: device pointers on the session's device and the streams the
// steps run on.
struct CpAlsBuffers {
  std::vector<void*> factors;  // per mode, dims[m] (+ slack) x rank, row-major
  void* mttkrp = nullptr;      // the MTTKRP output of the last mttkrp() (dims[mode] + slack rows)
  double* column_totals = nullptr;  // rank values: column_totals()'s result
  double* gram_sums = nullptr;      // rank x rank values: gram_sums()'s result
  cudaStream_t stream = nullptr;    // main chain (MTTKRP, solve, normalisation)
  cudaStream_t side = nullptr;      // Grams
  std::vector<uint32_t> dims;
  uint32_t rank = 0;
  size_t value_size = 0;       // sizeof(T)
};

// One CP-ALS run's device state and its steps (plugin_abi.h, CP_STEPS,
// says what each computes). Every step throws library_checks::Failure on a
// CUDA, cuBLAS or cuSOLVER failure. The tensor copies the launchers read
// must outlive the session.
//
// A session owns rows [first, first + count) of each mode (set_rows; all
// rows unless told): the solve, the normalisation, the Gram and the fit's
// inner product work on those rows only, so that sessions on several
// devices share them. The column norms and the Gram are then split in two
// halves around a sum (or max) over the sessions: column_totals() and
// gram_sums() leave this session's share in buffers().column_totals and
// .gram_sums, a group adds them up across devices, and
// normalise_from_totals() and gram_from_sums() finish from the sums. Steps
// that bring scalars back are split the same way (enqueue_*, then read_*)
// so that a group queues work on every device before waiting on any.
class CpAlsSession {
 public:
  virtual ~CpAlsSession() = default;
  virtual void set_factors(const spt_plugin_matrix* factors) = 0;
  virtual void get_factors(spt_plugin_matrix* factors, void* lambda) = 0;
  virtual void set_rows(uint32_t mode, uint64_t first, uint64_t count) = 0;
  virtual void mttkrp(uint32_t mode) = 0;
  virtual void enqueue_normal_matrix(uint32_t mode) = 0;
  virtual spt_plugin_cp_normal_info read_normal_matrix() = 0;
  spt_plugin_cp_normal_info normal_matrix(uint32_t mode) {
    enqueue_normal_matrix(mode);
    return read_normal_matrix();
  }
  // Returns the eigen-solver's info (0 after Cholesky).
  virtual int solve(uint32_t mode, int method) = 0;
  virtual void column_totals(uint32_t mode, bool first_sweep) = 0;
  virtual void normalise_from_totals(uint32_t mode, bool first_sweep) = 0;
  void normalise(uint32_t mode, bool first_sweep) {
    column_totals(mode, first_sweep);
    normalise_from_totals(mode, first_sweep);
  }
  virtual void gram_sums(uint32_t mode) = 0;
  virtual void gram_from_sums(uint32_t mode) = 0;
  void gram(uint32_t mode) {
    gram_sums(mode);
    gram_from_sums(mode);
  }
  // <X, M> over the owned rows of the last mode, its rounding noise, and
  // ||M||^2 (from the Grams: the whole model's).
  virtual void enqueue_fit_terms() = 0;
  virtual spt_plugin_cp_fit_terms read_fit_terms() = 0;
  spt_plugin_cp_fit_terms fit_terms() {
    enqueue_fit_terms();
    return read_fit_terms();
  }
  virtual bool has_exact_inner() const = 0;
  virtual void enqueue_exact_inner() = 0;
  virtual double read_exact_inner() = 0;
  double exact_inner() {
    enqueue_exact_inner();
    return read_exact_inner();
  }
  virtual int32_t non_finite(uint32_t mode) = 0;
  virtual CpAlsBuffers buffers() = 0;
};

// A session for a device tensor of `order` modes (dims[order], on the
// current device) whose MTTKRPs `mttkrp` launches and whose exact <X, M>
// `exact_inner` launches (may be empty); allocates its workspace (throws
// Failure when that fails). T = float or double.
template <typename T>
std::unique_ptr<CpAlsSession> make_cp_als_session(uint32_t order, const uint32_t* dims, uint32_t rank,
                                                  int multiprocessors, MttkrpLauncher<T> mttkrp,
                                                  ExactInnerLauncher<T> exact_inner);

}  // namespace spt::cuda
