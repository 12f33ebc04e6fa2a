// CPU (OpenMP) F-COO kernels: the GPU algorithm's structure on threads.
// Each thread takes an equal range of nonzeros (whatever the slice
// lengths) and reduces it sequentially, segment by segment, using the bit
// flags. Segments that begin and end inside the range belong to that thread
// alone and are written directly; the first (when it began in an earlier
// range) and the last (which may go on into a later range) are kept aside
// and added in range order afterwards: the CPU form of the GPU's boundary
// atomics, and deterministic for a given thread count. Every sum is kept
// in double (segment accumulators, boundary rows) and rounded to T once
// when stored, so float32 results carry one rounding per output element.
#include <omp.h>

#include <algorithm>
#include <vector>

#include "core/error.hpp"
#include "kernels/kernels.hpp"
#include "kernels/ttmc.hpp"
#include "kernels/cpu/variant.hpp"

SPT_CPU_VARIANT_TARGET
namespace spt::kernels::SPT_CPU_VARIANT {

namespace {

// Below this many nonzeros per thread the fork costs more than it saves.
constexpr spt_nnz kMinNnzPerThread = 4096;


// Runs the segmented reduction. `make_worker()` gives each thread an object
// with `add(k, acc)` (adds nonzero k's width-long contribution to the
// double accumulator acc).
// `row(segment)` is the output row (width values) of a segment; all rows
// are zeroed first by the caller.
template <typename T, typename MakeWorker, typename Row>
void segmented_reduce(const Exec& exec, const spt_fcoo_s& f, uint64_t width, MakeWorker&& make_worker, Row&& row) {
  const spt_nnz n = f.nnz;
  if (n == 0) return;
  const int threads = static_cast<int>(
      std::max<spt_nnz>(1, std::min<spt_nnz>(spt_nnz(std::max(exec.threads, 1)), n / kMinNnzPerThread)));
  struct Boundary {
    bool has_head = false;
    spt_nnz head_segment = 0, tail_segment = 0;
    std::vector<double> head, tail;
  };
  // Everything the threads use is allocated here: an allocation failure
  // inside the parallel region could not be reported (kernels.hpp).
  std::vector<Boundary> bounds(threads);
  std::vector<std::vector<double>> accumulators(threads);
  std::vector<decltype(make_worker())> workers;
  for (int t = 0; t < threads; ++t) {
    bounds[t].head.assign(width, 0.0);
    bounds[t].tail.assign(width, 0.0);
    accumulators[t].assign(width, 0.0);
    workers.push_back(make_worker());
  }
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const spt_nnz begin = n * t / threads, end = n * (t + 1) / threads;
    Boundary& b = bounds[t];
    auto& worker = workers[t];
    std::vector<double>& acc = accumulators[t];
    spt_nnz segment = f.segment_of(begin);
    bool first = true;
    const bool continues = !f.starts_segment(begin);
    for (spt_nnz k = begin; k < end; ++k) {
      if (k > begin && f.starts_segment(k)) {
        if (first && continues) {
          b.has_head = true;
          b.head_segment = segment;
          b.head.swap(acc);
        } else {
          T* r = row(segment);
          for (uint64_t c = 0; c < width; ++c) r[c] = static_cast<T>(acc[c]);
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        first = false;
        ++segment;
      }
      worker.add(k, acc.data());
    }
    b.tail_segment = segment;
    b.tail.swap(acc);
  }
  // Boundary pieces in range order: segments never decrease along it and
  // no thread stored these rows, so each segment's pieces are consecutive;
  // sum them in double and round once.
  std::vector<double> sum(width, 0.0);
  bool open = false;
  spt_nnz open_segment = 0;
  auto flush = [&] {
    if (!open) return;
    T* r = row(open_segment);
    for (uint64_t c = 0; c < width; ++c) r[c] = static_cast<T>(static_cast<double>(r[c]) + sum[c]);
    std::fill(sum.begin(), sum.end(), 0.0);
    open = false;
  };
  auto add_piece = [&](spt_nnz segment, const std::vector<double>& piece) {
    if (open && segment != open_segment) flush();
    open = true;
    open_segment = segment;
    for (uint64_t c = 0; c < width; ++c) sum[c] += piece[c];
  };
  for (const Boundary& b : bounds) {
    if (b.has_head) add_piece(b.head_segment, b.head);
    add_piece(b.tail_segment, b.tail);
  }
  flush();
}

// Adds value * Hadamard product of the product modes' factor rows.
template <typename T>
struct HadamardWorker {
  const spt_fcoo_s* f;
  const ConstMatRef<T>* factors;  // indexed by product-mode position
  uint64_t width;
  std::vector<T> prod;
  void add(spt_nnz k, double* acc) {
    const T v = f->val.get<T>()[k];
    for (uint64_t r = 0; r < width; ++r) prod[r] = v;
    for (size_t j = 0; j < f->product_modes.size(); ++j) {
      const T* frow = factors[j].row(f->product_ind[j][k]);
      for (uint64_t r = 0; r < width; ++r) prod[r] *= frow[r];
    }
    for (uint64_t r = 0; r < width; ++r) acc[r] += prod[r];
  }
};

// Adds value * kron(U_{o_last}(i,:), ..., U_{o_0}(i,:)) (lowest mode fastest).
template <typename T>
struct KroneckerWorker {
  const spt_fcoo_s* f;
  const ConstMatRef<T>* factors;  // indexed by product-mode position (ascending modes)
  uint64_t width;
  std::vector<T> row, next;
  void add(spt_nnz k, double* acc) {
    uint64_t len = 1;
    row[0] = T(1);
    for (size_t j = f->product_modes.size(); j-- > 0;) {
      const ConstMatRef<T>& u = factors[j];
      const T* urow = u.row(f->product_ind[j][k]);
      for (uint64_t a = 0; a < len; ++a)
        for (spt_nnz b = 0; b < u.cols; ++b) next[a * u.cols + b] = row[a] * urow[b];
      len *= u.cols;
      std::swap(row, next);
    }
    const T v = f->val.get<T>()[k];
    for (uint64_t c = 0; c < width; ++c) acc[c] += static_cast<double>(v * row[c]);
  }
};

template <typename T>
void zero_rows(const Exec& exec, MatRef<T> out) {
#pragma omp parallel for num_threads(std::max(exec.threads, 1)) schedule(static)
  for (spt_nnz i = 0; i < out.rows; ++i) std::fill(out.row(i), out.row(i) + out.cols, T(0));
}


template <typename T>
void mttkrp_impl(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<T>* factors, MatRef<T> out) {
  fcoo::require_op(f, SPT_FCOO_MTTKRP, "MTTKRP");
  require(f.dtype() == dtype_of<T>(), "tensor dtype does not match the factors");
  const uint64_t rank = out.cols;
  require(out.rows == f.dims[f.mode], "MTTKRP output has ", out.rows, " rows, expected dims[", f.mode, "] = ",
          f.dims[f.mode]);
  for (uint32_t m : f.product_modes)
    require(factors[m].rows == f.dims[m] && factors[m].cols == rank, "factor ", m, " must be ", f.dims[m], " x ",
            rank);
  zero_rows(exec, out);
  const std::vector<ConstMatRef<T>> p = fcoo::product_mode_factors(f, factors);
  const spt_index* rows = f.segment_ind[0].data();
  segmented_reduce<T>(
      exec, f, rank, [&] { return HadamardWorker<T>{&f, p.data(), rank, std::vector<T>(rank)}; },
      [&](spt_nnz s) { return out.row(rows[s]); });
}

template <typename T>
void ttm_impl(const Exec& exec, const spt_fcoo_s& f, ConstMatRef<T> u, spt_scoo_s& out) {
  fcoo::require_op(f, SPT_FCOO_TTM, "TTM");
  require(f.dtype() == dtype_of<T>(), "tensor dtype does not match the matrix");
  require(u.rows == f.dims[f.mode], "TTM matrix has ", u.rows, " rows, expected dims[", f.mode, "] = ",
          f.dims[f.mode]);
  require(u.cols >= 1, "TTM matrix has no columns");
  const uint64_t rank = u.cols;
  fcoo::ttm_result_shell(f, rank, out);
  T* dst = out.values.get<T>().data();
  const ConstMatRef<T> p[1] = {u};
  segmented_reduce<T>(
      exec, f, rank, [&] { return HadamardWorker<T>{&f, p, rank, std::vector<T>(rank)}; },
      [&](spt_nnz s) { return dst + s * rank; });
}

template <typename T>
void ttmc_impl(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<T>* factors, MatRef<T> out) {
  fcoo::require_op(f, SPT_FCOO_MTTKRP, "TTMc");
  require(f.dtype() == dtype_of<T>(), "tensor dtype does not match the factors");
  uint64_t width = 1;
  for (uint32_t m : f.product_modes) {
    require(factors[m].rows == f.dims[m], "factor ", m, " has ", factors[m].rows, " rows, expected dims[", m,
            "] = ", f.dims[m]);
    require(factors[m].cols >= 1, "factor ", m, " has no columns");
    width = checked_mul(width, factors[m].cols, "the TTM-chain column count prod_{m != n} R_m");
  }
  require(out.rows == f.dims[f.mode] && out.cols == width, "TTM-chain output is ", out.rows, " x ", out.cols,
          ", expected dims[", f.mode, "] x prod R = ", f.dims[f.mode], " x ", width);
  zero_rows(exec, out);
  const std::vector<ConstMatRef<T>> p = fcoo::product_mode_factors(f, factors);
  const spt_index* rows = f.segment_ind[0].data();
  segmented_reduce<T>(
      exec, f, width,
      [&] { return KroneckerWorker<T>{&f, p.data(), width, std::vector<T>(width), std::vector<T>(width)}; },
      [&](spt_nnz s) { return out.row(rows[s]); });
}

}  // namespace

void mttkrp_fcoo(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<float>* factors, MatRef<float> out) {
  mttkrp_impl(exec, f, factors, out);
}
void mttkrp_fcoo(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<double>* factors, MatRef<double> out) {
  mttkrp_impl(exec, f, factors, out);
}
void ttm_fcoo(const Exec& exec, const spt_fcoo_s& f, ConstMatRef<float> u, spt_scoo_s& out) {
  ttm_impl(exec, f, u, out);
}
void ttm_fcoo(const Exec& exec, const spt_fcoo_s& f, ConstMatRef<double> u, spt_scoo_s& out) {
  ttm_impl(exec, f, u, out);
}
void ttmc_fcoo(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<float>* factors, MatRef<float> out) {
  ttmc_impl(exec, f, factors, out);
}
void ttmc_fcoo(const Exec& exec, const spt_fcoo_s& f, const ConstMatRef<double>* factors, MatRef<double> out) {
  ttmc_impl(exec, f, factors, out);
}

}  // namespace spt::kernels::SPT_CPU_VARIANT
