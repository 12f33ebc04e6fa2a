// Storage helpers: a std::vector whose resize() leaves new elements
// uninitialised (for large arrays that are filled right after), and checked
// size arithmetic.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdio>
#include <cstdint>
#include <unistd.h>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "core/error.hpp"

namespace spt {

template <typename T, typename A = std::allocator<T>>
class default_init_allocator : public A {
  using traits = std::allocator_traits<A>;

 public:
  template <typename U>
  struct rebind {
    using other = default_init_allocator<U, typename traits::template rebind_alloc<U>>;
  };
  using A::A;
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible<U>::value) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    traits::construct(static_cast<A&>(*this), p, std::forward<Args>(args)...);
  }
};

template <typename T>
using buffer = std::vector<T, default_init_allocator<T>>;

// a * b, failing with SPT_ERR_OVERFLOW when the product does not fit 64 bits.
inline uint64_t checked_mul(uint64_t a, uint64_t b, const char* what) {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a)
    fail(SPT_ERR_OVERFLOW, what, " overflows 64 bits (", a, " * ", b, ")");
  return a * b;
}

inline uint64_t checked_add(uint64_t a, uint64_t b, const char* what) {
  if (b > std::numeric_limits<uint64_t>::max() - a) fail(SPT_ERR_OVERFLOW, what, " overflows 64 bits");
  return a + b;
}

// 4294967295 -> "4,294,967,295".
inline std::string grouped(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

// Bytes as "34.4 GB" (decimal units).
inline std::string human_bytes(double bytes) {
  static const char* const units[] = {"bytes", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  while (bytes >= 1000 && u < 6) {
    bytes /= 1000;
    ++u;
  }
  char text[32];
  std::snprintf(text, sizeof(text), u ? "%.1f %s" : "%.0f %s", bytes, units[u]);
  return text;
}

// Installed physical memory in bytes (0 when unknown).
inline uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

// Fails with SPT_ERR_OUT_OF_MEMORY, before anything is allocated, when a
// computation's working set `bytes` (a lower bound) exceeds the machine's
// physical memory: "<describe()> needs at least <bytes>, more than ...".
// Overcommitting systems would otherwise accept the allocation and fail
// (or swap for hours) later.
template <typename Describe>
void require_fits_memory(uint64_t bytes, Describe&& describe) {
  const uint64_t physical = physical_memory_bytes();
  if (physical && bytes > physical)
    fail(SPT_ERR_OUT_OF_MEMORY, describe(), " needs at least ", human_bytes(static_cast<double>(bytes)),
         ", more than this machine's memory (", human_bytes(static_cast<double>(physical)), ")");
}

// Resizes `v` to n elements. Failures name the array: n * sizeof(element)
// beyond what one allocation can hold is SPT_ERR_OVERFLOW, an allocation
// that fails is SPT_ERR_OUT_OF_MEMORY; both messages read
// "<describe()>: <n> entries (<bytes>)" so the user sees which array, how
// large, and (when describe() says) why.
template <typename Vec, typename Describe>
void resize_named(Vec& v, uint64_t n, Describe&& describe) {
  using T = typename Vec::value_type;
  const uint64_t limit = std::min<uint64_t>(v.max_size(), std::numeric_limits<std::ptrdiff_t>::max() / sizeof(T));
  if (n > limit)
    fail(SPT_ERR_OVERFLOW, describe(), ": ", grouped(n), " entries of ", sizeof(T),
         " bytes exceed the largest possible allocation");
  try {
    v.resize(static_cast<size_t>(n));
  } catch (const std::bad_alloc&) {
    fail(SPT_ERR_OUT_OF_MEMORY, "out of memory for ", describe(), ": ", grouped(n), " entries (",
         human_bytes(static_cast<double>(n) * sizeof(T)), "); free memory or use a smaller problem");
  }
}

}  // namespace spt
