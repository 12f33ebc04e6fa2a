// The steps of CP-APR on the GPU (plugin family CP_APR_STEPS): a session
// holds one run's grouped nonzeros (one copy per mode, grouped by that
// mode's index in the CPU's order), factors, lambda (double) and every
// mode's Phi on the device; the outer and inner iterations, convergence
// tests and callbacks are the core's (src/algo/cp_apr.cpp), the same loop
// the CPU runs.
//
// The steps repeat the CPU's arithmetic operation for operation, so that a
// float64 or float32 run gives the CPU's COO-group results bit for bit
// where the CPU's order is sequential, and to rounding elsewhere:
// - Phi (one group of lanes per chunk of at most 64 of a row's nonzeros,
//   in order): Pi's row in T (other modes ascending), the model value
//   A(i,:) . Pi(k,:) in double as the CPU's four interleaved partial sums,
//   the chunk accumulated in double; explicit round-to-nearest intrinsics
//   keep the compiler from fusing multiply-adds the CPU does not fuse. A
//   row of one chunk is the CPU's sum; a longer row adds its chunk sums in
//   order (split so that heavy rows do not serialise the kernel).
// - the column 1-norms of normalise and the column sums of the
//   log-likelihood: one thread per column, rows in order (the CPU's order).
// - the KKT violation is a maximum (any order gives the CPU's value).
// - the log-likelihood's sum over the nonzeros is a fixed tree (the CPU's
//   per-thread chunks depend on its thread count): equal to rounding.
// Only scalars come back: the KKT violation per inner iteration and the
// log-likelihood per outer iteration.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <memory>

#include "dispatch/plugin_abi.h"

namespace spt::cuda {

// Largest rank the device CP-APR takes: the Phi kernel stages three
// rank-long double rows per row group in 48 KiB of shared memory.
constexpr uint32_t cp_apr_max_rank = 2048;

// Largest order (the kernels' per-mode pointer tables are sized by it).
constexpr uint32_t cp_apr_max_order = 64;

// Device bytes a CP-APR session allocates for this shape: the grouped
// nonzeros of every mode, factors, Phi, lambda and reduction workspace.
// Saturates at SIZE_MAX instead of overflowing.
size_t cp_apr_device_bytes(uint32_t order, const uint32_t* dims, uint64_t nnz, uint32_t rank, size_t value_size);

// One CP-APR run's device state and its steps (plugin_abi.h, family
// CP_APR_STEPS, says what each computes). Every step throws
// library_checks::Failure on a CUDA failure.
class CpAprSession {
 public:
  virtual ~CpAprSession() = default;
  virtual void set_factors(const spt_plugin_matrix* factors) = 0;
  virtual void get_factors(spt_plugin_matrix* factors, double* lambda) = 0;
  virtual void normalise(uint32_t mode) = 0;
  virtual void scooch(uint32_t mode, double kappa, double kappatol) = 0;
  virtual void redistribute(uint32_t mode) = 0;
  virtual void phi(uint32_t mode, double eps) = 0;
  virtual double kkt_violation(uint32_t mode) = 0;
  virtual void multiply(uint32_t mode) = 0;
  virtual double loglikelihood() = 0;
};

// A session on the current device for a tensor of `order` modes (dims)
// with `nnz` nonzeros, grouped per mode as per_mode says (validated by the
// caller: shapes, row pointers and indices in range); copies the groups and
// allocates the working set (throws Failure when that fails). T = float or
// double.
template <typename T>
std::unique_ptr<CpAprSession> make_cp_apr_session(uint32_t order, const uint32_t* dims, uint64_t nnz, uint32_t rank,
                                                  const spt_plugin_cp_apr_groups* per_mode, int multiprocessors);

}  // namespace spt::cuda
