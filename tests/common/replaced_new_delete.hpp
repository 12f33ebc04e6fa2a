// Replaces every global operator new and delete of a test executable with
// the file's own allocate(size, alignment) / release(pointer), for tests that
// count or fail allocations. Include it in exactly one source file of the
// executable, after allocate and release are declared (returning nullptr
// from allocate makes the throwing forms throw std::bad_alloc).
#pragma once

#include <cstddef>
#include <new>

namespace replaced_new_delete_detail {
inline void* or_throw(void* p) {
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace replaced_new_delete_detail

void* operator new(size_t n) { return replaced_new_delete_detail::or_throw(allocate(n, 0)); }
void* operator new[](size_t n) { return replaced_new_delete_detail::or_throw(allocate(n, 0)); }
void* operator new(size_t n, std::align_val_t a) {
  return replaced_new_delete_detail::or_throw(allocate(n, static_cast<size_t>(a)));
}
void* operator new[](size_t n, std::align_val_t a) {
  return replaced_new_delete_detail::or_throw(allocate(n, static_cast<size_t>(a)));
}
void* operator new(size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void* operator new[](size_t n, const std::nothrow_t&) noexcept { return allocate(n, 0); }
void operator delete(void* p) noexcept { release(p); }
void operator delete[](void* p) noexcept { release(p); }
void operator delete(void* p, size_t) noexcept { release(p); }
void operator delete[](void* p, size_t) noexcept { release(p); }
void operator delete(void* p, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete[](void* p, size_t, std::align_val_t) noexcept { release(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { release(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { release(p); }
