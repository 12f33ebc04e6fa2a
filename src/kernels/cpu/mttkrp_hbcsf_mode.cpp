// CPU B-CSF / HB-CSF MTTKRP in any mode of one tree (contract: kernels.hpp,
// mttkrp_hbcsf_mode): the host counterpart of launch_mttkrp_hbcsf_nonroot
// (cuda/mttkrp_hbcsf.cu), same tasks and the same tree walk, so that "one
// tree plus a second kernel for the non-root modes" can be checked without a
// GPU and run where the GPU kernel cannot (orders above 8, no device). The
// root mode runs mttkrp_hbcsf. Non-root modes, one task per GPU work item of
// launch_mttkrp_hbcsf_nonroot: a COO nonzero, a CSL slice, a B-CSF work
// unit (its segments in turn: the product of the root row and the rows of
// the levels above the leaves except the output level, then either one add
// per leaf (output = the leaves' mode) or the segment's leaf sum times that
// product, added once into the fiber's output row). Output rows are shared
// between tasks: each element is added with an OpenMP atomic, into a double
// copy of the output (rounded to T once at the end) so that float32 sums
// keep double accuracy.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

template <typename T>
void nonroot_impl(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<T>* factors, uint32_t out_level,
                  MatRef<T> out) {
  const uint32_t order = h.order();
  const uint32_t leaf = order - 1;
  const spt_nnz rank = out.cols;
  std::vector<ConstMatRef<T>> F(order);  // by level; F[out_level] unused
  for (uint32_t l = 0; l < order; ++l)
    if (l != out_level) F[l] = factors[h.mode_order[l]];
  std::vector<double> sums(checked_mul(uint64_t(out.rows), rank, "HB-CSF MTTKRP double sums"), 0.0);
  const int threads = std::max(exec.threads, 1);
  auto add = [&](uint32_t row, spt_nnz r, double v) {
    double& o = sums[size_t(row) * rank + r];
#pragma omp atomic
    o += v;
  };
  const T* coo_val = h.coo_val.get<T>().data();
  const T* csl_val = h.csl_val.get<T>().data();
  const T* bcsf_val = h.bcsf_val.get<T>().data();
  const int64_t coo_nnz = int64_t(h.coo_nnz()), csl_slices = int64_t(h.csl_slices()), units = int64_t(h.units());
#pragma omp parallel num_threads(threads)
  {
    std::vector<T> p(rank);
    std::vector<double> s(rank);
#pragma omp for schedule(static)
    for (int64_t k = 0; k < coo_nnz; ++k) {
      for (spt_nnz r = 0; r < rank; ++r) p[r] = coo_val[k];
      for (uint32_t l = 0; l < order; ++l) {
        if (l == out_level) continue;
        const T* f = F[l].row(h.coo_ind[l][k]);
        for (spt_nnz r = 0; r < rank; ++r) p[r] *= f[r];
      }
      for (spt_nnz r = 0; r < rank; ++r) add(h.coo_ind[out_level][k], r, p[r]);
    }
#pragma omp for schedule(dynamic, 16)
    for (int64_t sl = 0; sl < csl_slices; ++sl) {
      const T* root = F[0].row(h.csl_slice_ind[sl]);
      for (uint32_t z = h.csl_slice_ptr[sl]; z < h.csl_slice_ptr[sl + 1]; ++z) {
        for (spt_nnz r = 0; r < rank; ++r) p[r] = csl_val[z] * root[r];
        for (uint32_t l = 1; l < order; ++l) {
          if (l == out_level) continue;
          const T* f = F[l].row(h.csl_ind[l - 1][z]);
          for (spt_nnz r = 0; r < rank; ++r) p[r] *= f[r];
        }
        for (spt_nnz r = 0; r < rank; ++r) add(h.csl_ind[out_level - 1][z], r, p[r]);
      }
    }
#pragma omp for schedule(dynamic, 4)
    for (int64_t u = 0; u < units; ++u) {
      const T* root = F[0].row(h.unit_row[u]);
      for (uint32_t g = h.unit_segment_ptr[u]; g < h.unit_segment_ptr[u + 1]; ++g) {
        // p = the root row x the rows of levels N-2..1 except out_level.
        for (spt_nnz r = 0; r < rank; ++r) p[r] = root[r];
        uint32_t out_row = 0;
        uint32_t node = g;
        for (uint32_t l = leaf - 1; l >= 1; --l) {
          const uint32_t ind = h.node_ind[l - 1][node];
          if (l == out_level) {
            out_row = ind;
          } else {
            const T* f = F[l].row(ind);
            for (spt_nnz r = 0; r < rank; ++r) p[r] *= f[r];
          }
          if (l >= 2) node = h.node_parent[l - 2][node];
        }
        const uint32_t zb = h.segment_ptr[g], ze = h.segment_ptr[g + 1];
        if (out_level == leaf) {
          for (uint32_t z = zb; z < ze; ++z)
            for (spt_nnz r = 0; r < rank; ++r) add(h.leaf_ind[z], r, bcsf_val[z] * p[r]);
        } else {
          std::fill(s.begin(), s.end(), 0.0);
          for (uint32_t z = zb; z < ze; ++z) {
            const T* f = F[leaf].row(h.leaf_ind[z]);
            for (spt_nnz r = 0; r < rank; ++r) s[r] += bcsf_val[z] * f[r];
          }
          for (spt_nnz r = 0; r < rank; ++r) add(out_row, r, s[r] * p[r]);
        }
      }
    }
  }
  for (spt_nnz i = 0; i < out.rows; ++i)
    for (spt_nnz r = 0; r < rank; ++r) out(i, r) = static_cast<T>(sums[size_t(i) * rank + r]);
}

template <typename T>
void mode_impl(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<T>* factors, uint32_t mode, MatRef<T> out) {
  const uint32_t order = h.order();
  if (mode >= order)
    fail(SPT_ERR_INVALID_ARGUMENT, "HB-CSF MTTKRP: mode ", mode, " is out of range (order ", order, ")");
  uint32_t level = 0;
  for (uint32_t l = 0; l < order; ++l)
    if (h.mode_order[l] == mode) level = l;
  if (level == 0) {
    mttkrp_hbcsf(exec, h, factors, out);
    return;
  }
  nonroot_impl<T>(exec, h, factors, level, out);
}

}  // namespace

void mttkrp_hbcsf_mode(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<float>* factors, uint32_t mode,
                       MatRef<float> out) {
  mode_impl<float>(exec, h, factors, mode, out);
}

void mttkrp_hbcsf_mode(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<double>* factors, uint32_t mode,
                       MatRef<double> out) {
  mode_impl<double>(exec, h, factors, mode, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
