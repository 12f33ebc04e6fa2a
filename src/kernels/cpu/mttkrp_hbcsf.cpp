// CPU (OpenMP) B-CSF / HB-CSF MTTKRP: the executable specification of the
// GPU kernels (layout in src/core/hbcsf.hpp). Each group runs as its GPU
// kernel would, one task per GPU work item:
//
//  COO group  - one task per nonzero (GPU: a thread/lane group per nonzero).
//               Its row belongs to no other nonzero or group: a plain store.
//  CSL group  - one task per slice (GPU: a warp per slice), summing
//               val * Hadamard of the N-1 factor rows; one writer per row.
//  B-CSF group- one task per work unit (GPU: a thread block per unit; a
//               warp per fiber segment): per segment, sum val * leaf-factor
//               row over its leaves, then multiply by the factor rows of its
//               ancestors, climbing node_parent up to level 1; the unit's
//               segments are summed into one row.
//
// Write conflicts: groups own disjoint rows, and so do unsplit units. The
// units of a split slice (unit_split = 1) share a row: the GPU adds them
// with atomics; here each such unit writes its partial row into its own slot
// of a buffer, and a second loop adds each slice's partials in unit order.
// That needs no atomics and gives results that do not depend on the thread
// count or the schedule (tests compare bitwise across thread counts); the
// buffer holds (split units) x R values, at most about
// 2 * nnz / slice_split_nnz rows. Sums (slices, segments, units, partial
// rows) are kept in double and rounded to T once per output element.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Below this many nonzeros per thread the fork costs more than it saves.
constexpr spt_nnz kMinNnzPerThread = 2048;

template <typename T>
void mttkrp_impl(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<T>* factors, MatRef<T> out) {
  const uint32_t order = h.order();
  const uint32_t root = h.root();
  const spt_nnz R = out.cols;
  require(R >= 1, "MTTKRP output needs at least one column");
  require(out.rows == h.dims[root], "MTTKRP output has ", out.rows, " rows, expected dims[", root,
          "] = ", h.dims[root]);
  // Factor of each level (level 0 is the output).
  std::vector<ConstMatRef<T>> F(order);
  for (uint32_t l = 1; l < order; ++l) {
    const uint32_t m = h.mode_order[l];
    require(factors[m].rows == h.dims[m] && factors[m].cols == R, "factor ", m, " is ", factors[m].rows, " x ",
            factors[m].cols, ", expected ", h.dims[m], " x ", R);
    F[l] = factors[m];
  }
  const int threads = static_cast<int>(
      std::max<spt_nnz>(1, std::min<spt_nnz>(spt_nnz(std::max(exec.threads, 1)), h.nnz / kMinNnzPerThread)));

  // Allocate everything before the parallel regions (kernels.hpp).
  const spt_nnz units = h.units();
  std::vector<uint32_t> split_slot(units, 0);  // slot of a split unit in `partials`
  std::vector<uint32_t> split_runs;            // first unit of each split slice, then units
  spt_nnz split_units = 0;
  for (spt_nnz u = 0; u < units; ++u) {
    if (!h.unit_split[u]) continue;
    if (u == 0 || !h.unit_split[u - 1] || h.unit_row[u - 1] != h.unit_row[u]) split_runs.push_back(uint32_t(u));
    split_slot[u] = static_cast<uint32_t>(split_units++);
  }
  split_runs.push_back(static_cast<uint32_t>(units));
  std::vector<double> partials(checked_mul(split_units, R, "HB-CSF split-unit partial rows"));
  std::vector<double> scratch(checked_mul(uint64_t(threads) * 2, R, "HB-CSF scratch rows"));

  const T* coo_val = h.coo_val.get<T>().data();
  const T* csl_val = h.csl_val.get<T>().data();
  const T* leaf_val = h.bcsf_val.get<T>().data();
  const spt_nnz coo_n = h.coo_nnz(), csl_slices = h.csl_slices();
  const spt_nnz split_slices = split_runs.size() - 1;

#pragma omp parallel num_threads(threads)
  {
    double* tmp = scratch.data() + size_t(omp_get_thread_num()) * 2 * R;
    double* acc = tmp + R;

    // Rows that no slice writes must still be zero.
#pragma omp for schedule(static) nowait
    for (int64_t i = 0; i < int64_t(out.rows); ++i) std::fill(out.row(i), out.row(i) + R, T(0));
#pragma omp barrier

    // COO group: one nonzero per (unique) row.
#pragma omp for schedule(static) nowait
    for (int64_t z = 0; z < int64_t(coo_n); ++z) {
      T* o = out.row(h.coo_ind[0][z]);
      const T v = coo_val[z];
      const T* f1 = F[1].row(h.coo_ind[1][z]);
      for (spt_nnz r = 0; r < R; ++r) o[r] = v * f1[r];
      for (uint32_t l = 2; l < order; ++l) {
        const T* f = F[l].row(h.coo_ind[l][z]);
        for (spt_nnz r = 0; r < R; ++r) o[r] *= f[r];
      }
    }

    // CSL group: one slice per task.
#pragma omp for schedule(dynamic, 16) nowait
    for (int64_t s = 0; s < int64_t(csl_slices); ++s) {
      std::fill(acc, acc + R, 0.0);
      for (uint32_t z = h.csl_slice_ptr[s]; z < h.csl_slice_ptr[s + 1]; ++z) {
        const T v = csl_val[z];
        const T* f1 = F[1].row(h.csl_ind[0][z]);
        for (spt_nnz r = 0; r < R; ++r) {
          T p = v * f1[r];
          for (uint32_t l = 2; l < order; ++l) p *= F[l].row(h.csl_ind[l - 1][z])[r];
          acc[r] += p;
        }
      }
      T* o = out.row(h.csl_slice_ind[s]);
      for (spt_nnz r = 0; r < R; ++r) o[r] = static_cast<T>(acc[r]);
    }

    // B-CSF group: one work unit per task.
#pragma omp for schedule(dynamic, 4)
    for (int64_t u = 0; u < int64_t(units); ++u) {
      std::fill(acc, acc + R, 0.0);
      for (uint32_t g = h.unit_segment_ptr[u]; g < h.unit_segment_ptr[u + 1]; ++g) {
        std::fill(tmp, tmp + R, 0.0);
        for (uint32_t z = h.segment_ptr[g]; z < h.segment_ptr[g + 1]; ++z) {
          const T v = leaf_val[z];
          const T* f = F[order - 1].row(h.leaf_ind[z]);
          for (spt_nnz r = 0; r < R; ++r) tmp[r] += v * f[r];
        }
        uint32_t node = g;
        for (uint32_t l = order - 2; l >= 1; --l) {
          const T* f = F[l].row(h.node_ind[l - 1][node]);
          for (spt_nnz r = 0; r < R; ++r) tmp[r] *= f[r];
          if (l >= 2) node = h.node_parent[l - 2][node];
        }
        for (spt_nnz r = 0; r < R; ++r) acc[r] += tmp[r];
      }
      if (h.unit_split[u]) {
        std::copy(acc, acc + R, partials.data() + size_t(split_slot[u]) * R);
      } else {
        T* o = out.row(h.unit_row[u]);
        for (spt_nnz r = 0; r < R; ++r) o[r] = static_cast<T>(acc[r]);
      }
    }
    // (implicit barrier: every partial is written)

    // Split slices: add the partial rows of each slice's units in unit order.
#pragma omp for schedule(dynamic, 8)
    for (int64_t s = 0; s < int64_t(split_slices); ++s) {
      std::fill(acc, acc + R, 0.0);
      for (uint32_t u = split_runs[s]; u < split_runs[s + 1] && h.unit_split[u]; ++u) {
        if (h.unit_row[u] != h.unit_row[split_runs[s]]) break;
        const double* p = partials.data() + size_t(split_slot[u]) * R;
        for (spt_nnz r = 0; r < R; ++r) acc[r] += p[r];
      }
      T* o = out.row(h.unit_row[split_runs[s]]);
      for (spt_nnz r = 0; r < R; ++r) o[r] = static_cast<T>(static_cast<double>(o[r]) + acc[r]);
    }
  }
}

}  // namespace

void mttkrp_hbcsf(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<float>* factors, MatRef<float> out) {
  mttkrp_impl(exec, h, factors, out);
}
void mttkrp_hbcsf(const Exec& exec, const spt_hbcsf_s& h, const ConstMatRef<double>* factors,
                  MatRef<double> out) {
  mttkrp_impl(exec, h, factors, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
