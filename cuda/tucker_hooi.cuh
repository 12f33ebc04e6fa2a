// Tucker-HOOI's steps on the GPU (plugin family TUCKER_STEPS, ABI version
// 11): the core's one driver (src/algo/tucker_hooi.cpp) runs the sweeps -
// order of modes, choice of the singular-vector route, core, fit,
// convergence, callbacks - and calls these steps on a session that keeps
// the factors, Y_(n), the Gram matrices and the core on the device from
// the first sweep to the last. The TTMc is the caller's TtmcLauncher, on
// F-COO, HLS or B-CSF trees (cuda/plugin_tucker.cu).
//
// The steps, each the CPU's step of the same name:
//   ttmc(n):  Y_(n) = X_(n) kron_{m != n} U_m (I_n x P_n, columns = the other
//             modes, lowest fastest, the CPU's ttmc order);
//   gram_vectors(n) (I_n <= P_n, or R_n > min(I_n, P_n)): U_n = the
//             eigenvectors of the I_n x I_n Gram Y Y^T (cuBLAS gemm) for its
//             R_n largest eigenvalues (cuSOLVER syevdx, range 'I': the CPU's
//             syevr computes only those too);
//   right_gram(n) (tall Y, I_n > P_n): the R_n leading eigenpairs (v_r,
//             s_r^2) of the P_n x P_n Gram Y^T Y (gemm + syevdx); s_R^2 and
//             s_1^2 go back to the driver, which picks right_vectors(n) (U
//             = Y [v_r / s_r], gemm) or, when s_R^2 is too small next to
//             s_1^2 for that division, svd_vectors(n): cuSOLVER gesvd (QR
//             iteration, jobu 'S') on the column-major copy of Y (cublas
//             geam transpose). gesvd rather than gesvdj: the same algorithm
//             family as the CPU's LAPACK route, singular values sorted by
//             definition, and no tolerance / sweep count to tune; it is the
//             rare branch (Y of lower rank than R_n), so its speed hardly
//             matters. Its buffers (two I x P matrices) are taken from the
//             stream's pool only when it runs;
//   fix_signs(n): the CPU's sign rule (pyttb nvecs): the largest-magnitude
//             entry of each column (the first on ties) made positive;
//   core():   G = U_{N-1}^T Y_(N-1) (gemm, the core with the first index
//             fastest) and ||G||^2 summed in double in a fixed order.
// Only scalars come back to the host: solver infos once per mode (and the
// two eigenvalues of the tall route's criterion), ||G||^2 once per sweep.
//
// Gram matrices by gemm, not syrk: cuBLAS syrk was several times slower
// than gemm for tall-skinny operands (seen in the device CP-ALS,
// cp_als.cu), and the solvers read one triangle only. cuBLAS runs in
// pedantic math mode (no TF32), as the device CP-ALS.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "dispatch/plugin_abi.h"

namespace spt::cuda {

// Device bytes a Tucker-HOOI of this shape needs besides the tensor copies:
// factors, Y_(n), the Gram matrices, eigenvalues, scaled eigenvectors, the
// core, reduction buffers, and an estimate of cuSOLVER's syevdx workspace
// (LAPACK's 1 + 6n + 2n^2 for the largest Gram order n). The handles and
// the gesvd fallback's buffers come on top (tucker_library_reserve; the
// fallback allocates when it runs). Sizes in elements of value_size bytes.
size_t tucker_device_bytes(uint32_t order, const uint32_t* dims, const uint32_t* ranks, size_t value_size);

// What the cuBLAS/cuSOLVER handles are allowed for in the working-set check.
constexpr size_t tucker_library_reserve = size_t(64) << 20;

// Launches Y_(mode) (dims[mode] x prod_{m != mode} ranks[m], row-major,
// zeroed by the caller) += the TTMc of the device tensor from the device
// factors of every mode (factors[mode] is not read), on `stream`; returns
// the launch error.
template <typename T>
using TtmcLauncher = std::function<cudaError_t(uint32_t mode, const T* const* factors, T* out, cudaStream_t stream)>;

// One Tucker-HOOI's device state and its steps (see the top). Every step
// runs on the session's stream; those that return a value or read a solver
// status (set_factor, get_factor, get_core, gram_vectors, right_gram,
// svd_vectors, core) wait for it. A failed step throws
// library_checks::Failure (a status of sptensor.h and the message; a
// solver that did not converge is status::numerical with the CPU's
// message). One thread at a time.
class TuckerSession {
 public:
  virtual ~TuckerSession() = default;
  // U_mode from / to host memory (dims[mode] x ranks[mode], the session's dtype).
  virtual void set_factor(uint32_t mode, const spt_plugin_matrix& f) = 0;
  virtual void get_factor(uint32_t mode, const spt_plugin_matrix& f) = 0;
  // The last core() into host memory (prod ranks values, first index fastest).
  virtual void get_core(void* core) = 0;
  virtual void ttmc(uint32_t mode) = 0;
  virtual void gram_vectors(uint32_t mode) = 0;
  virtual void right_gram(uint32_t mode, double* smallest_kept, double* largest) = 0;
  virtual void right_vectors(uint32_t mode) = 0;
  virtual void svd_vectors(uint32_t mode) = 0;
  virtual void fix_signs(uint32_t mode) = 0;
  virtual double core() = 0;
};

// A session for a tensor of `order` modes (dims[order]) at `ranks`, on the
// current device, whose TTMcs `ttmc` launches (it must stay valid, with
// what it reads, for the session's life). Allocates the factors, Y, the
// Gram matrices, the core, the solver workspace, a stream and the library
// handles; throws library_checks::Failure when that fails. The caller has
// checked the shapes (every dims[n], prod_{m != n} ranks[m] and ranks[n]
// below 2^31) and the free memory (tucker_device_bytes). T = float or
// double.
template <typename T>
std::unique_ptr<TuckerSession> make_tucker_session(uint32_t order, const uint32_t* dims, const uint32_t* ranks,
                                                   TtmcLauncher<T> ttmc, int multiprocessors);

}  // namespace spt::cuda
