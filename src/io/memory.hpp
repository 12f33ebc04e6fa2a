// Page-fault relief for large fresh arrays. Filling newly allocated memory
// costs one page fault per 4 KiB page, which on virtual machines can be
// slower than the copy itself (docs/design-measurements.md, "Huge pages
// for fresh arrays"). Asking for transparent huge pages
// before the first touch cuts the faults 512-fold. A hint only: without
// THP support it does nothing.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

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

// The arrays of a freshly init_owned tensor (before anything is written).
inline void advise_huge_pages(spt_coo_s& x) {
  for (auto& a : x.own_ind) advise_huge_pages(a.data(), a.size() * sizeof(spt_index));
  advise_huge_pages(x.own_val.data(), x.own_val.size() * dtype_size(x.dtype()));
}

}  // namespace spt::io
