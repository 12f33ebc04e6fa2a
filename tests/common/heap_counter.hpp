// Counts a test executable's live heap bytes and their high-water mark: its
// global operator new and delete are replaced (replaced_new_delete.hpp) by
// malloc/posix_memalign and free that add and subtract malloc_usable_size.
// Include it in exactly one source file of the executable; the hook is
// test-only, not in the library.
#pragma once

#include <malloc.h>
#include <stdlib.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>

namespace {

std::atomic<long long> g_live_bytes{0};
std::atomic<long long> g_peak_bytes{0};

void note_allocated(void* p) {
  const long long now = g_live_bytes.fetch_add(static_cast<long long>(malloc_usable_size(p))) +
                        static_cast<long long>(malloc_usable_size(p));
  long long peak = g_peak_bytes.load(std::memory_order_relaxed);
  while (now > peak && !g_peak_bytes.compare_exchange_weak(peak, now)) {
  }
}

void* allocate(size_t n, size_t align) {
  void* p = nullptr;
  if (align <= alignof(std::max_align_t)) p = std::malloc(n ? n : 1);
  else if (posix_memalign(&p, align, n ? n : 1) != 0) p = nullptr;
  if (p) note_allocated(p);
  return p;
}

void release(void* p) {
  if (!p) return;
  g_live_bytes.fetch_sub(static_cast<long long>(malloc_usable_size(p)));
  std::free(p);
}

// Heap bytes from its construction on: the live bytes then are the mark,
// and the high-water mark restarts there.
class HeapWatch {
 public:
  HeapWatch() : before_(g_live_bytes.load()) { g_peak_bytes.store(before_); }
  // The highest live bytes since construction, above the mark.
  long long peak_above() const { return g_peak_bytes.load() - before_; }
  // The live bytes now, above the mark (negative when less is live).
  long long live_above() const { return g_live_bytes.load() - before_; }

 private:
  long long before_;
};

}  // namespace

#include "common/replaced_new_delete.hpp"
