// Tucker-HOOI entirely on the GPU (plugin table entries tucker_hooi_fcoo
// and tucker_hooi_hls, ABI version 6; tucker_hooi_hbcsf, version 7: the
// TTMc is the caller's TtmcLauncher, on F-COO, HLS or B-CSF trees).
//
// The sweep is the core's CPU loop (src/algo/tucker_hooi.cpp) step by step:
// per mode n
//   Y_(n) = X_(n) kron_{m != n} U_m   (TTMc: the F-COO Kronecker product of
//                                      the op-MTTKRP F-COO of mode n; columns
//                                      = the other modes, lowest fastest, the
//                                      CPU's ttmc order)
//   U_n = leading R_n left singular vectors of Y_(n) (I_n x P_n), by shape
//     as the CPU's TuckerSvdPath::automatic:
//     - I_n <= P_n, or R_n > min(I_n, P_n): eigenvectors of the I_n x I_n
//       Gram Y Y^T (cuBLAS gemm) for its R_n largest eigenvalues (cuSOLVER
//       syevdx, range 'I': the CPU's syevr computes only those too);
//     - tall Y (I_n > P_n): the R_n leading eigenpairs (v_r, s_r^2) of the
//       P_n x P_n Gram Y^T Y (gemm + syevdx) and U = Y [v_r / s_r] (gemm);
//       when s_R^2 <= 1e4 eps s_1^2 (the CPU's criterion, in T) that
//       division would amplify the Gram's rounding, and the run takes an
//       SVD of Y_(n) instead: cuSOLVER gesvd (QR iteration, jobu 'S') on
//       the column-major copy of Y (cublas geam transpose), m = I_n >= n =
//       P_n. gesvd rather than gesvdj: the same algorithm family as the
//       CPU's LAPACK route, singular values sorted by definition, and no
//       tolerance / sweep count to tune; it is the rare branch (Y of lower
//       rank than R_n), so its speed hardly matters. Its buffers (two I x P
//       matrices) are taken from the stream's pool only when it runs.
//   signs as the CPU (pyttb nvecs): the largest-magnitude entry of each
//   column (the first on ties) made positive, on the device.
// Per sweep: G = U_{N-1}^T Y_(N-1) (gemm, the core with the first index
// fastest) and ||G||^2 summed in double in a fixed order. Only scalars come
// back to the host: solver infos once per mode (and the two eigenvalues of
// the tall route's criterion), ||G||^2 once per sweep; the fit, convergence
// and the user's callback belong to the core (on_sweep).
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

// Runs the Tucker-HOOI of a device tensor of `order` modes (dims[order], on
// the current device) whose TTMcs `ttmc` launches, as args describes
// (spt_plugin_tucker_args, plugin_abi.h; shapes checked by the caller, and
// every dims[n], prod_{m != n} ranks[m] and ranks[n] below 2^31). Returns a
// status of sptensor.h; on failure `error` says what failed. T = float or
// double.
template <typename T>
int run_tucker_hooi(uint32_t order, const uint32_t* dims, const TtmcLauncher<T>& ttmc,
                    const spt_plugin_tucker_args& args, int multiprocessors, std::string& error);

}  // namespace spt::cuda
