// The dispatcher: picks the backend for each kernel call from the context.
// Algorithms and the C API call SPT_DISPATCH(ctx, kernel, args...) and never
// name a backend.
//
// Order of choice for one call:
//  1. the effective backend is CUDA (forced, or AUTO with a device) and the
//     kernel has a device implementation (its list entry in kernels.hpp is
//     marked DEVICE; DeviceKernels, device.hpp): run it there. It returns
//     false when AUTO fell back (device out of memory), then go on;
//  2. the effective backend is REFERENCE: the sequential reference kernel;
//  3. otherwise the OpenMP CPU kernel (kernels without a device version run
//     here under CUDA too, on host data).
#pragma once

#include <type_traits>
#include <utility>

#include "core/context.hpp"
#include "dispatch/device.hpp"
#include "dispatch/plugin_loader.hpp"
#include "kernels/dense.hpp"
#include "kernels/kernels.hpp"

namespace spt::dispatch {

// How the context's CPU kernels run: its thread count and copy of the kernels.
inline kernels::Exec cpu_exec(const spt_context_s& ctx) {
  kernels::Exec exec{thread_count(ctx)};
  exec.cpu_isa = cpu_isa(ctx);
  return exec;
}

inline kernels::Exec exec_for(const spt_context_s& ctx) {
  if (effective_backend(ctx) == SPT_BACKEND_REFERENCE) return kernels::Exec{1};
  return cpu_exec(ctx);
}

// One struct per entry of the kernel lists (kernels.hpp, dense.hpp), named
// like the kernel: reference(exec, args...) and cpu(exec, args...) call the
// host backends; device(ctx, args...) calls DeviceKernels for an entry
// marked DEVICE and, for one marked HOST, is the "not compiled for the
// device" stub: it returns false, so the host backend runs the kernel
// (under a CUDA backend too, on host data). on_device tells which.
namespace kernel_entries {

#define SPT_DEVICE_SLOT_DEVICE(name)                                  \
  static constexpr bool on_device = true;                             \
  template <typename... Args>                                         \
  static bool device(const spt_context_s& ctx, Args&... args) {       \
    return DeviceKernels::name(ctx, args...);                         \
  }
#define SPT_DEVICE_SLOT_HOST(name)                        \
  static constexpr bool on_device = false;                \
  template <typename... Args>                             \
  static bool device(const spt_context_s&, Args&...) {       \
    return false;                                         \
  }
// The x86-64-v3 build of a CPU kernel, where the library has one and the
// Exec asks for it (kernels/cpu/variant.hpp).
#if defined(SPT_HAVE_CPU_X86_64_V3_KERNELS)
#define SPT_CPU_X86_64_V3_CALL(name)                             \
  if (exec.cpu_isa == ::spt::CpuIsa::x86_64_v3)                   \
    return kernels::cpu_x86_64_v3::name(exec, std::forward<Args>(args)...);
#else
#define SPT_CPU_X86_64_V3_CALL(name)
#endif
#define SPT_DISPATCH_ENTRY(where, ret, name, params)                               \
  struct name {                                                                     \
    SPT_DEVICE_SLOT_##where(name)                                                   \
    template <typename... Args>                                                     \
    static decltype(auto) reference(const kernels::Exec& exec, Args&&... args) {    \
      return kernels::reference::name(exec, std::forward<Args>(args)...);           \
    }                                                                               \
    template <typename... Args>                                                     \
    static decltype(auto) cpu(const kernels::Exec& exec, Args&&... args) {          \
      SPT_CPU_X86_64_V3_CALL(name)                                                  \
      return kernels::cpu::name(exec, std::forward<Args>(args)...);                 \
    }                                                                               \
  };
// A list names each typed kernel once; its float and double rows stamp one
// struct, so the typed lists are stamped with one value type only.
SPT_TYPED_KERNELS(float, SPT_DISPATCH_ENTRY)
SPT_GENERIC_KERNELS(SPT_DISPATCH_ENTRY)
SPT_DENSE_TYPED_KERNELS(float, SPT_DISPATCH_ENTRY)
// SPT_DISPATCH_ENTRY stays defined for the lists kept in their own headers
// (dispatch_gcp.hpp), which stamp their entries with it.

}  // namespace kernel_entries

// Runs kernel Entry (a kernel_entries struct) with args on the backend the
// context chooses (see the top of this file).
template <typename Entry, typename... Args>
decltype(auto) run(const spt_context_s& ctx, Args&&... args) {
  const spt_backend backend = effective_backend(ctx);
  if constexpr (Entry::on_device) {
    static_assert(std::is_void_v<decltype(Entry::cpu(std::declval<const kernels::Exec&>(), args...))>,
                  "device kernels are only wired for kernels that return void");
    if (backend == SPT_BACKEND_CUDA && Entry::device(ctx, args...)) return;
  }
  if (backend == SPT_BACKEND_REFERENCE) return Entry::reference(kernels::Exec{1}, std::forward<Args>(args)...);
  return Entry::cpu(cpu_exec(ctx), std::forward<Args>(args)...);
}

}  // namespace spt::dispatch

// Call kernel `name` (an entry of the kernel lists) of the backend chosen by
// context `ctx` (an spt_context_s&). Each argument is evaluated once.
#define SPT_DISPATCH(ctx, name, ...) ::spt::dispatch::run<::spt::dispatch::kernel_entries::name>((ctx), __VA_ARGS__)
