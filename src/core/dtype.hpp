// Run-time value type (spt_dtype) to compile-time type dispatch, and a
// value array that holds either float or double.
#pragma once

#include <cstddef>
#include <type_traits>

#include "core/buffer.hpp"
#include "core/error.hpp"

namespace spt {

template <typename T>
struct type_tag {
  using type = T;
};

template <typename T>
constexpr spt_dtype dtype_of() {
  static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "float or double only");
  return std::is_same_v<T, float> ? SPT_FLOAT32 : SPT_FLOAT64;
}

inline bool valid_dtype(spt_dtype d) { return d == SPT_FLOAT32 || d == SPT_FLOAT64; }

inline void check_dtype(spt_dtype d) {
  require(valid_dtype(d), "dtype must be SPT_FLOAT32 (1) or SPT_FLOAT64 (2), got ", static_cast<int>(d));
}

inline size_t dtype_size(spt_dtype d) { return d == SPT_FLOAT32 ? sizeof(float) : sizeof(double); }

inline const char* dtype_name(spt_dtype d) { return d == SPT_FLOAT32 ? "float32" : "float64"; }

// Calls f(type_tag<float>{}) or f(type_tag<double>{}) according to d.
template <typename F>
decltype(auto) with_dtype(spt_dtype d, F&& f) {
  check_dtype(d);
  if (d == SPT_FLOAT32) return f(type_tag<float>{});
  return f(type_tag<double>{});
}

// An owned array of values of a run-time dtype.
class ValueStore {
 public:
  explicit ValueStore(spt_dtype d = SPT_FLOAT64) : dtype_(d) {}
  spt_dtype dtype() const { return dtype_; }
  void set_dtype(spt_dtype d) {
    dtype_ = d;
    f32_.clear();
    f64_.clear();
  }
  size_t size() const { return dtype_ == SPT_FLOAT32 ? f32_.size() : f64_.size(); }
  void resize(size_t n) {
    if (dtype_ == SPT_FLOAT32) f32_.resize(n);
    else f64_.resize(n);
  }
  void assign_zero(size_t n) {
    if (dtype_ == SPT_FLOAT32) f32_.assign(n, 0.0f);
    else f64_.assign(n, 0.0);
  }
  void* data() { return dtype_ == SPT_FLOAT32 ? static_cast<void*>(f32_.data()) : static_cast<void*>(f64_.data()); }
  const void* data() const {
    return dtype_ == SPT_FLOAT32 ? static_cast<const void*>(f32_.data()) : static_cast<const void*>(f64_.data());
  }
  template <typename T>
  buffer<T>& get() {
    if constexpr (std::is_same_v<T, float>) return f32_;
    else return f64_;
  }
  template <typename T>
  const buffer<T>& get() const {
    if constexpr (std::is_same_v<T, float>) return f32_;
    else return f64_;
  }
  void shrink_to_fit() {
    f32_.shrink_to_fit();
    f64_.shrink_to_fit();
  }

 private:
  spt_dtype dtype_;
  buffer<float> f32_;
  buffer<double> f64_;
};

}  // namespace spt
