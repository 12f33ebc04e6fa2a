#include "reorder/relabel.hpp"

#include <algorithm>
#include <cstring>

#include "core/bits.hpp"
#include "core/error.hpp"

namespace spt::reorder {

namespace {

int threads_for(spt_nnz work, int threads) { return threads_for_work(threads, work, 16384); }

void relabel_owned_arrays(spt_coo_s& x, const spt_permutation_s& perm, int threads) {
  const spt_nnz n = x.nnz;
  const int t = threads_for(n, threads);
  for (uint32_t m = 0; m < x.order(); ++m) {
    spt_index* ind = x.mutable_ind(m);
    const spt_index* p = perm.per_mode[m].data();
#pragma omp parallel for num_threads(t) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) ind[k] = p[ind[k]];
  }
  x.touched();
}

template <typename T>
void permute_rows_typed(spt_matrix_s& m, const Permutation& p, RowSpace to, int threads) {
  const spt_nnz rows = m.rows, cols = m.cols;
  if (rows == 0 || cols == 0) return;
  const int t = threads_for(rows * cols, threads);
  // Destination row of source row i, and source row of destination row i.
  auto destination = [&](spt_nnz i) -> spt_nnz { return to == RowSpace::reordered ? p[i] : i; };
  auto source = [&](spt_nnz i) -> spt_nnz { return to == RowSpace::reordered ? i : p[i]; };
  T* data = m.ptr<T>();
  if (m.layout == SPT_ROW_MAJOR) {
    buffer<T> copy(checked_mul(rows, cols, "matrix size"));
#pragma omp parallel for num_threads(t) schedule(static)
    for (spt_nnz i = 0; i < rows; ++i) std::memcpy(copy.data() + i * cols, data + i * m.ld, cols * sizeof(T));
#pragma omp parallel for num_threads(t) schedule(static)
    for (spt_nnz i = 0; i < rows; ++i)
      std::memcpy(data + destination(i) * m.ld, copy.data() + source(i) * cols, cols * sizeof(T));
  } else {
    buffer<T> column(rows);
    for (spt_nnz j = 0; j < cols; ++j) {
      T* col = data + j * m.ld;
      std::memcpy(column.data(), col, rows * sizeof(T));
      for (spt_nnz i = 0; i < rows; ++i) col[destination(i)] = column[source(i)];
    }
  }
}

}  // namespace

void relabel_in_place(spt_coo_s& x, const spt_permutation_s& perm, int threads) {
  require_writable(x);
  require_matches(perm, x.dims, "tensor");
  x.make_owned();
  relabel_owned_arrays(x, perm, threads);
}

spt_coo_s relabeled_copy(const spt_coo_s& x, const spt_permutation_s& perm, int threads) {
  require_matches(perm, x.dims, "tensor");
  spt_coo_s y = copy_coo(x, x.dtype());
  relabel_owned_arrays(y, perm, threads);
  return y;
}

void permute_rows(spt_matrix_s& m, const Permutation& p, RowSpace to, int threads) {
  require(p.size() == m.rows, "the permutation has ", p.size(), " labels but the matrix has ", m.rows, " rows");
  with_dtype(m.dtype(), [&](auto tag) { permute_rows_typed<typename decltype(tag)::type>(m, p, to, threads); });
}

}  // namespace spt::reorder
