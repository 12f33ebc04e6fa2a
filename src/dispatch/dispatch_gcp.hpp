// The dispatcher's entries for the GCP kernel list (kernels/gcp.hpp), kept
// apart from dispatch.hpp so that only GCP code includes the GCP kernels.
// Each entry has the shape dispatch.hpp's SPT_DISPATCH_ENTRY gives a HOST
// kernel: reference and cpu backends, no device version. Call them with
// SPT_DISPATCH as every other kernel.
#pragma once

#include <utility>

#include "dispatch/dispatch.hpp"
#include "kernels/gcp.hpp"

namespace spt::dispatch::kernel_entries {

#define SPT_GCP_DISPATCH_ENTRY(where, ret, name, params)                         \
  struct name {                                                                   \
    static constexpr bool on_device = false;                                      \
    template <typename... Args>                                                   \
    static bool device(const spt_context_s&, Args&...) {                          \
      return false;                                                               \
    }                                                                             \
    template <typename... Args>                                                   \
    static decltype(auto) reference(const kernels::Exec& exec, Args&&... args) {  \
      return kernels::reference::name(exec, std::forward<Args>(args)...);         \
    }                                                                             \
    template <typename... Args>                                                   \
    static decltype(auto) cpu(const kernels::Exec& exec, Args&&... args) {        \
      return kernels::cpu::name(exec, std::forward<Args>(args)...);               \
    }                                                                             \
  };
SPT_GCP_KERNELS(SPT_GCP_DISPATCH_ENTRY)
#undef SPT_GCP_DISPATCH_ENTRY

}  // namespace spt::dispatch::kernel_entries
