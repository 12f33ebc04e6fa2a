#include "kernels/ttm_fibers.hpp"

#include <algorithm>
#include <numeric>

#include "core/error.hpp"
#include "core/group_starts.hpp"

namespace spt::kernels {

TtmFibers::TtmFibers(const Exec& exec, const spt_coo_s& x, uint32_t mode) : x_(x) {
  const uint32_t order = x.order();
  if (x.sorted_by.size() == order && x.sorted_by.back() == mode) {
    others_.assign(x.sorted_by.begin(), x.sorted_by.end() - 1);
    own_starts_ = sorting::group_starts(exec, x, others_);
  } else {
    grouped_ = std::make_unique<sorting::ModeFibers>(exec, x, mode);
    others_ = grouped_->other_modes();
  }
}

void ttm_result_shell(const Exec& exec, const TtmFibers& fibers, const spt_coo_s& x, uint32_t mode, spt_nnz rank,
                      spt_scoo_s& out) {
  const spt_nnz count = fibers.count();
  const buffer<spt_nnz>& fiber_ptr = fibers.starts();
  const spt_coo_s& s = fibers.sorted();
  out.dims = x.dims;
  out.dims[mode] = static_cast<spt_index>(rank);
  out.set_single_dense_mode(mode);
  out.fiber_order = fibers.others();
  out.nfibers = count;
  out.ind.assign(x.order(), {});
  for (uint32_t m : fibers.others())
    resize_named(out.ind[m], count, [&] { return cat("TTM result: the indices of mode ", m, " (fibers)"); });
  out.values.set_dtype(x.dtype());
  const spt_nnz nvals = checked_mul(count, rank, "semi-sparse value count");
  with_dtype(x.dtype(), [&](auto tag) {
    resize_named(out.values.get<typename decltype(tag)::type>(), nvals,
                 [&] { return cat("TTM result: the values (", count, " fibers x rank ", rank, ")"); });
  });
  const int threads = std::max(1, exec.threads);
  for (uint32_t m : fibers.others()) {
    const spt_index* src = s.ind[m];
    spt_index* dst = out.ind[m].data();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz f = 0; f < count; ++f) dst[f] = src[fiber_ptr[f]];
  }
}

ScooTtmGroups scoo_ttm_groups(const Exec& exec, const spt_scoo_s& y, uint32_t mode) {
  const std::vector<uint32_t> sparse = y.sparse_modes();
  const spt_nnz n = y.nfibers;
  const int threads = std::max(1, exec.threads);
  ScooTtmGroups res;
  // Group key: the sparse modes but `mode`, in the order the fibers are
  // sorted by (or ascending after our own sort).
  const bool grouped = y.fiber_order.size() == sparse.size() && y.fiber_order.back() == mode;
  if (grouped) {
    res.key.assign(y.fiber_order.begin(), y.fiber_order.end() - 1);
  } else {
    for (uint32_t m : sparse)
      if (m != mode) res.key.push_back(m);
    res.perm.resize(n);
    std::iota(res.perm.begin(), res.perm.end(), spt_nnz(0));
    std::vector<uint32_t> by = res.key;
    by.push_back(mode);
    std::stable_sort(res.perm.begin(), res.perm.end(), [&](spt_nnz a, spt_nnz b) {
      for (uint32_t m : by)
        if (y.ind[m][a] != y.ind[m][b]) return y.ind[m][a] < y.ind[m][b];
      return false;
    });
  }
  auto fiber = [&](spt_nnz k) { return res.fiber(k); };
  const int chunks = static_cast<int>(std::min<spt_nnz>(threads, std::max<spt_nnz>(n, 1)));
  res.starts = sorting::collect_starts(n, chunks, [&](spt_nnz k) {
    const spt_nnz f = fiber(k), g = fiber(k - 1);
    for (uint32_t m : res.key)
      if (y.ind[m][f] != y.ind[m][g]) return true;
    return false;
  });
  return res;
}

void scoo_ttm_result_shell(const Exec& exec, const ScooTtmGroups& groups, const spt_scoo_s& y,
                           const ScooTtmShape& shape, spt_scoo_s& out) {
  const spt_nnz count = groups.count();
  out.dims = shape.dims;
  out.dense_modes = shape.dense;
  out.dense_mode = shape.dense[0];
  out.fiber_order = groups.key;
  out.nfibers = count;
  out.ind.assign(y.order(), {});
  for (uint32_t m : groups.key)
    resize_named(out.ind[m], count, [&] { return cat("TTM result: the indices of mode ", m, " (fibers)"); });
  out.values.set_dtype(y.dtype());
  const spt_nnz nvals = checked_mul(count, shape.out_block, "semi-sparse value count");
  with_dtype(y.dtype(), [&](auto tag) {
    resize_named(out.values.get<typename decltype(tag)::type>(), nvals, [&] {
      return cat("TTM result: the values (", count, " fibers x ", shape.out_block, " dense entries each)");
    });
  });
  const int threads = std::max(1, exec.threads);
  for (uint32_t m : groups.key) {
    const spt_index* src = y.ind[m].data();
    spt_index* dst = out.ind[m].data();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (spt_nnz g = 0; g < count; ++g) dst[g] = src[groups.fiber(groups.starts[g])];
  }
}

}  // namespace spt::kernels
