// Running sums of the GPU kernels: RunningSum<T> accumulates products of T.
//
// float64 sums are plain doubles. float32 sums are compensated float32
// pairs (Kahan summation): `sum` holds the rounded total and `lost` what
// its roundings dropped, so the error stays within about two float32
// roundings of the sum of the terms' magnitudes however many terms are
// added, as a double sum's would, at four float32 additions per term. A
// double running sum costs a float-to-double conversion per term, which the
// GPU issues at a small fraction of its float32 rate. The expressions below
// rely on IEEE float semantics (no fast-math reassociation in this plugin's
// build).
#pragma once

namespace spt::cuda {

// Trivially constructible (usable in shared memory): start from a value.
struct CompensatedFloat {
  float sum;
  float lost;  // the value is sum - lost

  CompensatedFloat() = default;
  __device__ __forceinline__ CompensatedFloat(float x) : sum(x), lost(0.0f) {}  // NOLINT: a sum of one term

  __device__ __forceinline__ CompensatedFloat& operator+=(float x) {
    const float y = x - lost;
    const float t = sum + y;
    lost = (t - sum) - y;
    sum = t;
    return *this;
  }
  __device__ __forceinline__ CompensatedFloat& operator+=(const CompensatedFloat& o) {
    *this += o.sum;
    lost += o.lost;
    return *this;
  }
  // Scales the sum (the product rounds once, as a float32 product does).
  __device__ __forceinline__ CompensatedFloat& operator*=(float g) {
    sum *= g;
    lost *= g;
    return *this;
  }
  __device__ __forceinline__ float value() const { return sum - lost; }
  __device__ __forceinline__ explicit operator float() const { return value(); }
};

template <typename T>
struct RunningSumOf {
  using type = T;
};
template <>
struct RunningSumOf<float> {
  using type = CompensatedFloat;
};
template <typename T>
using RunningSum = typename RunningSumOf<T>::type;

// The sum rounded to its element type.
__device__ __forceinline__ float rounded(const CompensatedFloat& s) { return s.value(); }
__device__ __forceinline__ double rounded(double s) { return s; }

// Warp shuffle (xor) of a running sum (both halves of a compensated pair)
// or of a plain value.
__device__ __forceinline__ float shfl_xor(unsigned mask, float s, int lane_mask) {
  return __shfl_xor_sync(mask, s, lane_mask);
}
__device__ __forceinline__ double shfl_xor(unsigned mask, double s, int lane_mask) {
  return __shfl_xor_sync(mask, s, lane_mask);
}
__device__ __forceinline__ CompensatedFloat shfl_xor(unsigned mask, const CompensatedFloat& s, int lane_mask) {
  CompensatedFloat r;
  r.sum = __shfl_xor_sync(mask, s.sum, lane_mask);
  r.lost = __shfl_xor_sync(mask, s.lost, lane_mask);
  return r;
}

}  // namespace spt::cuda
