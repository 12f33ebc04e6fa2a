// The dispatcher: picks the backend for each kernel call from the context.
// Algorithms and the C API call SPT_DISPATCH(ctx, kernel, args...) and never
// name a backend.
//
// Order of choice for one call:
//  1. the effective backend is CUDA (forced, or AUTO with a device) and the
//     kernel has a device implementation (a member of DeviceKernels,
//     device.hpp; detected at compile time): run it there. It returns false
//     when AUTO fell back (device out of memory), then go on;
//  2. the effective backend is REFERENCE: the sequential reference kernel;
//  3. otherwise the OpenMP CPU kernel (kernels without a device version run
//     here under CUDA too, on host data).
#pragma once

#include <type_traits>
#include <utility>

#include "core/context.hpp"
#include "dispatch/device.hpp"
#include "kernels/kernels.hpp"

namespace spt::dispatch {

inline kernels::Exec exec_for(const spt_context_s& ctx) {
  if (effective_backend(ctx) == SPT_BACKEND_REFERENCE) return kernels::Exec{1};
  return kernels::Exec{thread_count(ctx)};
}

// Runs `device(DeviceKernels{})` when that call exists and the context runs
// on CUDA, else `reference` or `cpu` with the Exec for ctx.
template <typename Device, typename Reference, typename Cpu>
decltype(auto) run(const spt_context_s& ctx, Device&& device, Reference&& reference, Cpu&& cpu) {
  const spt_backend backend = effective_backend(ctx);
  if constexpr (std::is_invocable_v<Device&, DeviceKernels>) {
    static_assert(std::is_void_v<decltype(cpu(std::declval<const kernels::Exec&>()))>,
                  "device kernels are only wired for kernels that return void");
    if (backend == SPT_BACKEND_CUDA && device(DeviceKernels{})) return;
  }
  const kernels::Exec exec = backend == SPT_BACKEND_REFERENCE ? kernels::Exec{1} : kernels::Exec{thread_count(ctx)};
  if (backend == SPT_BACKEND_REFERENCE) return reference(exec);
  return cpu(exec);
}

}  // namespace spt::dispatch

// Call kernel `name` of the backend chosen by context `ctx` (an spt_context_s&).
// The first lambda is SFINAE-friendly: it is invocable only when
// DeviceKernels::name(ctx, args...) exists.
#define SPT_DISPATCH(ctx, name, ...)                                                                               \
  ::spt::dispatch::run(                                                                                            \
      (ctx),                                                                                                       \
      [&](auto device_kernels_) -> decltype(decltype(device_kernels_)::name((ctx), __VA_ARGS__)) {                 \
        return decltype(device_kernels_)::name((ctx), __VA_ARGS__);                                                \
      },                                                                                                           \
      [&](const ::spt::kernels::Exec& exec_) -> decltype(auto) {                                                   \
        return ::spt::kernels::reference::name(exec_, __VA_ARGS__);                                                \
      },                                                                                                           \
      [&](const ::spt::kernels::Exec& exec_) -> decltype(auto) { return ::spt::kernels::cpu::name(exec_, __VA_ARGS__); })
