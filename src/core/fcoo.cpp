// F-COO construction, decoding and validation (see fcoo.hpp).
#include "core/fcoo.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>

#include "core/coo.hpp"
#include "core/error.hpp"
#include "core/scoo.hpp"
#include "core/sort.hpp"

spt_nnz spt_fcoo_s::segment_of(spt_nnz k) const {
  // Segment of the group's first nonzero, plus the segment starts after it
  // up to and including k.
  const spt_nnz group = k / (spt_nnz(threadlen) * 32);
  const spt_nnz first = group * threadlen * 32;
  spt_nnz s = group_first_segment[group];
  for (spt_nnz j = first + 1; j <= k; ++j) s += starts_segment(j) ? 1 : 0;
  return s;
}

uint64_t spt_fcoo_s::bytes() const {
  uint64_t b = uint64_t(nnz) * (product_modes.size() * sizeof(spt_index) + spt::dtype_size(dtype()));
  b += (bf.size() + sf.size() + group_first_segment.size()) * sizeof(uint32_t);
  b += uint64_t(segments) * index_modes.size() * sizeof(spt_index);
  return b;
}

namespace spt::fcoo {

uint32_t lanes_per_partition(uint64_t row_bytes) {
  const uint64_t chunks = (row_bytes + 31) / 32;
  uint32_t lanes = 1;
  while (lanes < 8 && lanes < chunks) lanes *= 2;
  return lanes;
}

uint32_t suggested_threadlen(spt_nnz nnz, uint64_t row_bytes, int multiprocessors, spt_nnz nonempty_slices) {
  const uint64_t wave = uint64_t(multiprocessors > 0 ? multiprocessors : 132) * 64;
  const uint64_t lanes = lanes_per_partition(row_bytes);
  auto warps = [&](uint64_t threadlen) { return nnz * lanes / (32 * threadlen); };
  const bool few_slices = nonempty_slices > 0 && nonempty_slices <= kFewSlices && nnz >= kFewSlicesMinNnz;
  if (lanes >= 4 && (warps(16) >= wave || few_slices)) return 16;
  return 8;
}

namespace {

void split_modes(uint32_t order, spt_fcoo_operation op, uint32_t mode, std::vector<uint32_t>& index_modes,
                 std::vector<uint32_t>& product_modes) {
  index_modes.clear();
  product_modes.clear();
  for (uint32_t m = 0; m < order; ++m) {
    const bool is_index = op == SPT_FCOO_MTTKRP ? m == mode : m != mode;
    (is_index ? index_modes : product_modes).push_back(m);
  }
}

}  // namespace

spt_fcoo_s from_coo(const spt_coo_s& x, spt_fcoo_operation op, uint32_t mode, uint32_t threadlen, int threads) {
  const uint32_t order = x.order();
  require(order >= 2, "F-COO needs a tensor of order >= 2, got order ", order);
  require(op == SPT_FCOO_MTTKRP || op == SPT_FCOO_TTM, "op must be SPT_FCOO_MTTKRP or SPT_FCOO_TTM, got ",
          static_cast<int>(op));
  require(mode < order, "mode ", mode, " out of range for an order-", order, " tensor (modes are 0-based)");
  require(threadlen == 0 || threadlen == 8 || threadlen == 16 || threadlen == 32,
          "threadlen must be 0 (suggested), 8, 16 or 32, got ", threadlen);
  require(x.nnz < (spt_nnz(1) << 32), "F-COO holds fewer than 2^32 nonzeros, got ", x.nnz);

  spt_fcoo_s f;
  f.dims = x.dims;
  f.nnz = x.nnz;
  f.op = op;
  f.mode = mode;
  f.threadlen = threadlen ? threadlen : suggested_threadlen(x.nnz, 16 * dtype_size(x.dtype()), 0);
  split_modes(order, op, mode, f.index_modes, f.product_modes);

  // Sort by the index modes (segments contiguous), then the product modes
  // (neighbouring nonzeros share factor rows).
  std::vector<uint32_t> sort_order = f.index_modes;
  sort_order.insert(sort_order.end(), f.product_modes.begin(), f.product_modes.end());
  Exec exec;
  exec.threads = std::max(threads, 1);
  const buffer<spt_nnz> perm = sorting::sort_permutation(exec, x, sort_order);
  const spt_nnz n = x.nnz;
  const int t = exec.threads;

  f.product_ind.resize(f.product_modes.size());
  for (size_t j = 0; j < f.product_modes.size(); ++j) {
    const spt_index* src = x.ind[f.product_modes[j]];
    f.product_ind[j].resize(n);
    spt_index* dst = f.product_ind[j].data();
#pragma omp parallel for num_threads(t) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) dst[k] = src[perm[k]];
  }
  f.val.set_dtype(x.dtype());
  f.val.resize(n);
  with_dtype(x.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* src = x.values<T>();
    T* dst = f.val.get<T>().data();
#pragma omp parallel for num_threads(t) schedule(static)
    for (spt_nnz k = 0; k < n; ++k) dst[k] = src[perm[k]];
  });

  // Bit flags: one 32-bit word per 32 nonzeros, each word built by one
  // thread (no shared writes).
  const spt_nnz words = (n + 31) / 32;
  f.bf.assign(words, 0u);
  auto differs_from_previous = [&](spt_nnz k) {
    if (k == 0) return true;
    for (uint32_t m : f.index_modes)
      if (x.ind[m][perm[k]] != x.ind[m][perm[k - 1]]) return true;
    return false;
  };
#pragma omp parallel for num_threads(t) schedule(static)
  for (spt_nnz w = 0; w < words; ++w) {
    uint32_t word = 0;
    const spt_nnz end = std::min<spt_nnz>(n, (w + 1) * 32);
    for (spt_nnz k = w * 32; k < end; ++k)
      if (differs_from_previous(k)) word |= 1u << (k & 31);
    f.bf[w] = word;
  }

  spt_nnz starts = 0;
  for (spt_nnz w = 0; w < words; ++w) starts += static_cast<spt_nnz>(__builtin_popcount(f.bf[w]));
  f.segments = starts;
  set_threadlen(f, f.threadlen);

  // Index-mode coordinates once per segment.
  f.segment_ind.resize(f.index_modes.size());
  for (auto& s : f.segment_ind) s.resize(f.segments);
  for (spt_nnz k = 0, s = 0; k < n; ++k) {
    if (!f.starts_segment(k)) continue;
    for (size_t j = 0; j < f.index_modes.size(); ++j) f.segment_ind[j][s] = x.ind[f.index_modes[j]][perm[k]];
    ++s;
  }
  return f;
}

void set_threadlen(spt_fcoo_s& f, uint32_t threadlen) {
  require(threadlen == 8 || threadlen == 16 || threadlen == 32, "threadlen must be 8, 16 or 32, got ", threadlen);
  f.threadlen = threadlen;
  // Start flags per partition, and the segment number at each warp group
  // (a sequential prefix count over words: popcounts are cheap).
  const spt_nnz parts = f.partitions();
  f.sf.assign((parts + 31) / 32, 0u);
  for (spt_nnz p = 0; p < parts; ++p)
    if (f.starts_segment(p * threadlen)) f.sf[p >> 5] |= 1u << (p & 31);
  const spt_nnz group_nnz = spt_nnz(threadlen) * 32;
  f.group_first_segment.resize(f.groups());
  spt_nnz started = 0;  // segment starts strictly before the current word
  for (spt_nnz w = 0, g = 0; w < f.bf.size(); ++w) {
    if ((w * 32) % group_nnz == 0) {
      // The group's first nonzero starts a segment when its bit is set
      // (counted now) or continues the previous one.
      f.group_first_segment[g++] = static_cast<uint32_t>(started + (f.bf[w] & 1u) - 1);
    }
    started += static_cast<spt_nnz>(__builtin_popcount(f.bf[w]));
  }
}

spt_coo_s to_coo(const spt_fcoo_s& f, int threads) {
  spt_coo_s y;
  y.init_owned(f.dtype(), f.dims, f.nnz);
  const int t = std::max(threads, 1);
  for (size_t j = 0; j < f.product_modes.size(); ++j)
    if (f.nnz) std::memcpy(y.mutable_ind(f.product_modes[j]), f.product_ind[j].data(), f.nnz * sizeof(spt_index));
  for (spt_nnz k = 0, s = 0; k < f.nnz; ++k) {
    if (f.starts_segment(k) && k > 0) ++s;
    for (size_t j = 0; j < f.index_modes.size(); ++j) y.mutable_ind(f.index_modes[j])[k] = f.segment_ind[j][s];
  }
  with_dtype(f.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if (f.nnz) std::memcpy(y.mutable_values<T>(), f.val.get<T>().data(), f.nnz * sizeof(T));
  });
  (void)t;
  std::vector<uint32_t> sorted = f.index_modes;
  sorted.insert(sorted.end(), f.product_modes.begin(), f.product_modes.end());
  y.sorted_by = sorted;
  return y;
}

void require_op(const spt_fcoo_s& f, spt_fcoo_operation op, const char* what) {
  auto name = [](spt_fcoo_operation o) { return o == SPT_FCOO_MTTKRP ? "SPT_FCOO_MTTKRP" : "SPT_FCOO_TTM"; };
  require(f.op == op, what, " needs an F-COO built with ", name(op), ", this one was built with ", name(f.op));
}

void ttm_result_shell(const spt_fcoo_s& f, uint64_t rank, spt_scoo_s& out) {
  require(f.op == SPT_FCOO_TTM, "the TTM result needs an F-COO built with SPT_FCOO_TTM");
  if (rank > 0xffffffffull) fail(SPT_ERR_OVERFLOW, "TTM: R = ", rank, " does not fit a 32-bit dimension");
  out.dims = f.dims;
  out.dims[f.mode] = static_cast<spt_index>(rank);
  out.set_single_dense_mode(f.mode);
  out.fiber_order = f.index_modes;
  out.nfibers = f.segments;
  out.ind.assign(f.order(), {});
  for (size_t j = 0; j < f.index_modes.size(); ++j) out.ind[f.index_modes[j]] = f.segment_ind[j];
  out.values.set_dtype(f.dtype());
  out.values.assign_zero(checked_mul(f.segments, rank, "the TTM result size (fibers x R)"));
}

}  // namespace spt::fcoo
