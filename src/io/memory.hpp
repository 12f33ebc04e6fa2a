// Page-fault relief for large fresh arrays. Filling newly allocated memory
// costs one page fault per 4 KiB page, which on virtual machines can be
// slower than the copy itself (docs/design-measurements.md, "Huge pages
// for fresh arrays"). Asking for transparent huge pages
// before the first touch cuts the faults 512-fold. A hint only: without
// THP support it does nothing.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/coo.hpp"

namespace spt::io {

inline void advise_huge_pages(const void* p, size_t n) {
#ifdef MADV_HUGEPAGE
  constexpr size_t kMin = size_t(4) << 20;  // below this the faults are cheap anyway
  if (!p || n < kMin) return;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + 4095) & ~uintptr_t(4095);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + n) & ~uintptr_t(4095);
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

// memcpy split across threads (large copies into fresh memory are
// bound by page faults and per-core bandwidth, not by the bus).
inline void parallel_copy(void* dst, const void* src, size_t n, int threads) {
  constexpr size_t kPiece = size_t(1) << 20;
  const size_t pieces = (n + kPiece - 1) / kPiece;
#pragma omp parallel for num_threads(threads) schedule(dynamic, 2) if (pieces > 1)
  for (size_t i = 0; i < pieces; ++i) {
    const size_t b = i * kPiece;
    std::memcpy(static_cast<char*>(dst) + b, static_cast<const char*>(src) + b, std::min(kPiece, n - b));
  }
}

// The arrays of a freshly init_owned tensor (before anything is written).
inline void advise_huge_pages(spt_coo_s& x) {
  for (auto& a : x.own_ind) advise_huge_pages(a.data(), a.size() * sizeof(spt_index));
  advise_huge_pages(x.own_val.data(), x.own_val.size() * dtype_size(x.dtype()));
}

}  // namespace spt::io
