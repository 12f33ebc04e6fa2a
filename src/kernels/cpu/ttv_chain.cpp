// OpenMP TTV chain (X times a vector in every mode but one) and full
// contraction (every mode). Each nonzero's term x * prod_{m != keep} v_m(i_m)
// is formed in double. Deterministic for any thread count: no atomics, and
// every output's terms are added in an order that does not depend on it:
//  - short output modes (kChunks private copies cheap next to nnz): the
//    nonzeros are cut into kChunks fixed ranges, each summed into its own
//    copy in nonzero order, and the copies are added in chunk order;
//  - long output modes: the terms are formed in parallel into an nnz-long
//    array and scattered in nonzero order by one thread (one read-add per
//    nonzero, next to the order-1 gathers of forming them), which is
//    exactly the reference kernel's order.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/buffer.hpp"
#include "core/group_starts.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

constexpr int kChunks = 16;

template <typename T>
inline double term(const spt_coo_s& x, const T* vals, uint32_t keep, const T* const* v, spt_nnz e) {
  double p = static_cast<double>(vals[e]);
  for (uint32_t m = 0; m < x.order(); ++m)
    if (m != keep) p *= static_cast<double>(v[m][x.ind[m][e]]);
  return p;
}

using sorting::chunk_begin;

template <typename T>
void ttv_chain_impl(const Exec& exec, const spt_coo_s& x, uint32_t keep, const T* const* v, T* out) {
  const spt_nnz dim = x.dims[keep], nnz = x.nnz;
  const T* vals = x.values<T>();
  const spt_index* out_ind = x.ind[keep];
  const int threads = static_cast<int>(std::max<spt_nnz>(1, std::min<spt_nnz>(std::max(exec.threads, 1), nnz / 4096 + 1)));
  if (spt_nnz(2) * kChunks * dim <= nnz) {
    const spt_nnz slab = dim;
    buffer<double> priv(checked_mul(kChunks, slab, "TTV chain private outputs"));
#pragma omp parallel num_threads(threads)
    {
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < kChunks * slab; ++i) priv[i] = 0.0;
#pragma omp for schedule(dynamic, 1)
      for (int c = 0; c < kChunks; ++c) {
        double* acc = priv.data() + c * slab;
        const spt_nnz hi = chunk_begin(nnz, c + 1, kChunks);
        for (spt_nnz e = chunk_begin(nnz, c, kChunks); e < hi; ++e) acc[out_ind[e]] += term(x, vals, keep, v, e);
      }
#pragma omp for schedule(static)
      for (spt_nnz i = 0; i < dim; ++i) {
        double s = 0;
        for (int c = 0; c < kChunks; ++c) s += priv[c * slab + i];
        out[i] = static_cast<T>(s);
      }
    }
    return;
  }
  buffer<double> terms(nnz);
  buffer<double> acc(dim);
#pragma omp parallel num_threads(threads)
  {
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < dim; ++i) acc[i] = 0.0;
#pragma omp for schedule(static)
    for (spt_nnz e = 0; e < nnz; ++e) terms[e] = term(x, vals, keep, v, e);
#pragma omp single
    for (spt_nnz e = 0; e < nnz; ++e) acc[out_ind[e]] += terms[e];
#pragma omp for schedule(static)
    for (spt_nnz i = 0; i < dim; ++i) out[i] = static_cast<T>(acc[i]);
  }
}

template <typename T>
double ttv_all_impl(const Exec& exec, const spt_coo_s& x, const T* const* v) {
  const spt_nnz nnz = x.nnz;
  const T* vals = x.values<T>();
  const uint32_t none = x.order();  // no mode is kept
  const int threads = static_cast<int>(std::max<spt_nnz>(1, std::min<spt_nnz>(std::max(exec.threads, 1), nnz / 4096 + 1)));
  double partial[kChunks];
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
  for (int c = 0; c < kChunks; ++c) {
    double s = 0;
    const spt_nnz hi = chunk_begin(nnz, c + 1, kChunks);
    for (spt_nnz e = chunk_begin(nnz, c, kChunks); e < hi; ++e) s += term(x, vals, none, v, e);
    partial[c] = s;
  }
  double total = 0;
  for (int c = 0; c < kChunks; ++c) total += partial[c];
  return total;
}

}  // namespace

#define SPT_INSTANTIATE(T)                                                                                      \
  void ttv_chain(const Exec& exec, const spt_coo_s& x, uint32_t keep_mode, const T* const* vectors, T* out) {  \
    ttv_chain_impl<T>(exec, x, keep_mode, vectors, out);                                                        \
  }                                                                                                             \
  double ttv_all(const Exec& exec, const spt_coo_s& x, const T* const* vectors) {                              \
    return ttv_all_impl<T>(exec, x, vectors);                                                                   \
  }

SPT_INSTANTIATE(float)
SPT_INSTANTIATE(double)
#undef SPT_INSTANTIATE

}  // namespace spt::kernels::SPT_CPU_VARIANT
