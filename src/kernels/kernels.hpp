// Kernel declarations, written once and stamped into every backend namespace
// (reference = plain sequential oracle, cpu = OpenMP). A backend that drifts
// from the signature fails to compile or link. Algorithms never call these
// directly: they go through src/dispatch/dispatch.hpp.
//
// Conventions: all matrices are row-major MatRefs; `out` arguments are
// overwritten; owned outputs (spt_coo_s etc.) are (re)initialised by the
// kernel. Kernels may allocate before parallel regions and throw spt::Error;
// they never throw from inside a parallel region.
#pragma once

#include "core/coo.hpp"
#include "core/exec.hpp"
#include "core/csf.hpp"
#include "core/csr.hpp"
#include "core/fcoo.hpp"
#include "core/hbcsf.hpp"
#include "core/hicoo.hpp"
#include "core/hls.hpp"
#include "core/matrix.hpp"
#include "core/mode_groups.hpp"
#include "core/scoo.hpp"

namespace spt::kernels {

// Exec, MttkrpStrategy and SummedStats live in core (core/exec.hpp): the
// format builders and sorts take them too. The kernels name them as before.
using spt::Exec;
using spt::MttkrpStrategy;
using spt::SummedStats;

// The kernel lists. Each entry is X(where, return type, name, (parameters
// after the leading `const Exec& exec`)); `where` is DEVICE for a kernel
// that also has a device implementation (declared from this list in
// src/dispatch/device.hpp, DeviceKernels) and HOST for one that runs on the
// host under every backend. Every backend namespace below is stamped from
// these lists (SPT_DECLARE_KERNEL), and so are the dispatcher's entries
// (src/dispatch/dispatch.hpp); docs/architecture.md, "Kernel lists".
//
// Kernels whose signature names the value type T.
#define SPT_TYPED_KERNELS(T, X)                                                                                        \
  /* out(i,:) = sum_{nz with i_mode = i} x * Hadamard_{m != mode} factors[m](i_m, :) */                                \
  X(DEVICE, void, mttkrp, (const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out))           \
  /* same on a CSF tensor (on the tree that holds `mode` closest to its root) */                                       \
  X(HOST, void, mttkrp_csf, (const spt_csf_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out))         \
  /* same on a HiCOO tensor (x.strategy, the §4.3.3 rule when automatic; Exec privatized forces privatized) */         \
  X(DEVICE, void, mttkrp_hicoo, (const spt_hicoo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out))   \
  /* out = x times_mode v, order N-1, sorted and duplicate-free */                                                     \
  X(HOST, void, ttv, (const spt_coo_s& x, uint32_t mode, const T* v, spt_coo_s& out))                                  \
  /* out = semi-sparse x times_mode u^T (u is dims[mode] x R) */                                                       \
  X(DEVICE, void, ttm, (const spt_coo_s& x, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out))                         \
  /* <x, [[lambda; factors]]>, accumulated in double */                                                                \
  X(HOST, double, inner_ktensor, (const spt_coo_s& x, const T* lambda, const ConstMatRef<T>* factors, spt_index rank)) \
  /* same on a CSF tensor (its first tree; repeated coordinates are separate leaves, as in COO) */                     \
  X(HOST, double, inner_ktensor_csf,                                                                                   \
    (const spt_csf_s& x, const T* lambda, const ConstMatRef<T>* factors, spt_index rank))                              \
  X(HOST, void, elementwise_scalar, (spt_elementwise_op op, const spt_coo_s& x, T s, spt_coo_s& out))                  \
  /* dense: out ((I*J) x R) = khatri_rao(a (I x R), b (J x R)) */                                                      \
  X(HOST, void, khatri_rao, (ConstMatRef<T> a, ConstMatRef<T> b, MatRef<T> out))                                       \
  /* dense: out ((I*K) x (J*L)) = kron(a (I x J), b (K x L)) */                                                        \
  X(HOST, void, kronecker, (ConstMatRef<T> a, ConstMatRef<T> b, MatRef<T> out))                                        \
  /* TTM chain, one-shot: out (dims[mode] x prod_{m != mode} factors[m].cols) = X_(mode) times */                      \
  /* kron(U_{N-1}, .., U_{mode+1}, U_{mode-1}, .., U_0); column = Kolda's unfolding of the core (lowest other */       \
  /* mode fastest); factors[mode] is not read; out is overwritten (src/kernels/ttmc.hpp) */                            \
  X(HOST, void, ttmc, (const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out))               \
  /* SsTTM: out = semi-sparse y times_mode u^T (u is dims[mode] x R, mode sparse in y); out is dense in y's */         \
  /* dense modes plus `mode` (block layout: src/core/scoo.hpp); one output block per group of fibers sharing */        \
  /* all other sparse coordinates (src/kernels/ttm_chain.hpp) */                                                       \
  X(DEVICE, void, scoo_ttm, (const spt_scoo_s& y, uint32_t mode, ConstMatRef<T> u, spt_scoo_s& out))                   \
  /* TTMc by the TTM chain: same out (and column order) as ttmc; chain lists the other modes in contraction */         \
  /* order (chain[0] first); x is viewed sorted in ttm_chain_sort_order(mode, chain), whole mode-`mode` */             \
  /* slices per task, intermediates per slice only (src/kernels/ttm_chain.hpp) */                                      \
  X(HOST, void, ttmc_chain,                                                                                            \
    (const spt_coo_s& x, const ConstMatRef<T>* factors, uint32_t mode, const uint32_t* chain, MatRef<T> out))          \
  /* CP-APR Phi: phi = (X_(mode) ./ max(A Pi^T, eps)) Pi at the nonzeros only, A = factors[mode], Pi's rows */         \
  /* formed per nonzero; model values and rows accumulated in double; rows without nonzeros are 0 */                   \
  X(HOST, void, cp_apr_phi,                                                                                            \
    (const ModeGroups& groups, uint32_t mode, const ConstMatRef<T>* factors, double eps, MatRef<T> phi))               \
  /* the same Phi on a HiCOO tensor (superblock schedule or fixed private chunks; thread-count independent) */         \
  X(HOST, void, cp_apr_phi_hicoo,                                                                                      \
    (const spt_hicoo_s& x, uint32_t mode, const ConstMatRef<T>* factors, double eps, MatRef<T> phi))                   \
  /* TTV chain: out (dims[keep_mode] values, overwritten) = X times_{m != keep_mode} vectors[m]; vectors[m] */         \
  /* has dims[m] values, vectors[keep_mode] is not read; accumulated in double, thread-count independent */            \
  X(HOST, void, ttv_chain, (const spt_coo_s& x, uint32_t keep_mode, const T* const* vectors, T* out))                  \
  /* full contraction X times_m vectors[m] over every mode, accumulated in double */                                   \
  X(HOST, double, ttv_all, (const spt_coo_s& x, const T* const* vectors))                                              \
  /* F-COO (src/core/fcoo.hpp), op MTTKRP: the MTTKRP in f.mode (as mttkrp; factors[f.mode] not read) */               \
  X(DEVICE, void, mttkrp_fcoo, (const spt_fcoo_s& f, const ConstMatRef<T>* factors, MatRef<T> out))                    \
  /* F-COO, op TTM: out = x times_{f.mode} u^T, the semi-sparse result of ttm (fibers = f's segments) */               \
  X(DEVICE, void, ttm_fcoo, (const spt_fcoo_s& f, ConstMatRef<T> u, spt_scoo_s& out))                                  \
  /* F-COO, op MTTKRP: the one-shot TTMc in f.mode (same out and column order as ttmc) */                              \
  X(DEVICE, void, ttmc_fcoo, (const spt_fcoo_s& f, const ConstMatRef<T>* factors, MatRef<T> out))                      \
  /* B-CSF / HB-CSF (src/core/hbcsf.hpp): the MTTKRP in h's root mode (as mttkrp; factors[root] not read) */           \
  X(DEVICE, void, mttkrp_hbcsf, (const spt_hbcsf_s& h, const ConstMatRef<T>* factors, MatRef<T> out))                  \
  /* B-CSF / HB-CSF: the MTTKRP of h in any mode < order (out: dims[mode] x rank; factors by mode, */                  \
  /* factors[mode] not read, the root's factor read for a non-root mode); the root runs mttkrp_hbcsf. The */           \
  /* CPU kernel walks the one tree with atomic adds for a non-root mode, so its last bits depend on the */             \
  /* summation order. Throws INVALID_ARGUMENT for a mode out of range. */                                              \
  X(DEVICE, void, mttkrp_hbcsf_mode,                                                                                   \
    (const spt_hbcsf_s& h, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out))                               \
  /* HLS (src/core/hls.hpp): the MTTKRP in h's root mode (as mttkrp; factors[root] not read) */                        \
  X(DEVICE, void, mttkrp_hls, (const spt_hls_s& h, const ConstMatRef<T>* factors, MatRef<T> out))                      \
  /* HLS: the TTMc in h's root mode (same out and column order as ttmc; factors[root] not read) */                     \
  X(DEVICE, void, ttmc_hls, (const spt_hls_s& h, const ConstMatRef<T>* factors, MatRef<T> out))

// Kernels that take the dtype from their tensor arguments (dispatch inside).
#define SPT_GENERIC_KERNELS(X)                                                                                \
  /* squared norm and distinct coordinates of x with repeated coordinates summed (x is not changed) */        \
  X(HOST, SummedStats, summed_stats, (const spt_coo_s& x))                                                    \
  /* x op y elementwise (same dims and dtype); result sorted, duplicate-free */                               \
  X(HOST, void, elementwise, (spt_elementwise_op op, const spt_coo_s& x, const spt_coo_s& y, spt_coo_s& out)) \
  X(HOST, void, unfold_csr, (const spt_coo_s& x, uint32_t mode, spt_csr_s& out))

// Unwraps a parenthesised parameter list: SPT_EXPAND (a, b) is a, b.
#define SPT_EXPAND(...) __VA_ARGS__

// One host backend's declaration of a list entry.
#define SPT_DECLARE_KERNEL(where, ret, name, params) ret name(const Exec& exec, SPT_EXPAND params);

#define SPT_DECLARE_BACKEND(backend)                \
  namespace backend {                               \
  SPT_TYPED_KERNELS(float, SPT_DECLARE_KERNEL)      \
  SPT_TYPED_KERNELS(double, SPT_DECLARE_KERNEL)     \
  SPT_GENERIC_KERNELS(SPT_DECLARE_KERNEL)           \
  }

SPT_DECLARE_BACKEND(reference)
SPT_DECLARE_BACKEND(cpu)
SPT_DECLARE_BACKEND(cpu_x86_64_v3)  // the same kernels for x86-64-v3 (kernels/cpu/variant.hpp)

#undef SPT_DECLARE_BACKEND

}  // namespace spt::kernels
