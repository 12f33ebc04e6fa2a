// Storage helpers: a std::vector whose resize() leaves new elements
// uninitialised (for large arrays that are filled right after), and checked
// size arithmetic.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
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

}  // namespace spt
