// V consecutive rank columns handled by one lane as one vector access
// (16 bytes for float32 x 4, double x 2), and the atomic add of such a
// vector: shared by the COO and HiCOO MTTKRP kernels.
#pragma once

#include <type_traits>

namespace spt::cuda {

template <typename T, int V>
struct alignas(sizeof(T) * V) Pack {
  T v[V];
};

template <typename T, int V>
__device__ __forceinline__ void atomic_add_pack(T* p, const Pack<T, V>& x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr bool vector_atomic = std::is_same_v<T, float> && V == 4;  // sm_90 has float4 atomicAdd
#else
  constexpr bool vector_atomic = false;
#endif
  if constexpr (vector_atomic) {
    atomicAdd(reinterpret_cast<float4*>(p), make_float4(x.v[0], x.v[1], x.v[2], x.v[3]));
  } else {
#pragma unroll
    for (int e = 0; e < V; ++e) atomicAdd(p + e, x.v[e]);
  }
}

}  // namespace spt::cuda
