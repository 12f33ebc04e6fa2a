// The dispatcher: picks the backend for each kernel call from the context.
// Algorithms and the C API call SPT_DISPATCH(ctx, kernel, args...) and never
// name a backend. (CUDA joins here through the plugin in a later release.)
#pragma once

#include "core/context.hpp"
#include "kernels/kernels.hpp"

namespace spt::dispatch {

inline kernels::Exec exec_for(const spt_context_s& ctx) {
  if (effective_backend(ctx) == SPT_BACKEND_REFERENCE) return kernels::Exec{1};
  return kernels::Exec{thread_count(ctx)};
}

inline bool use_reference(const spt_context_s& ctx) { return effective_backend(ctx) == SPT_BACKEND_REFERENCE; }

}  // namespace spt::dispatch

// Call kernel `name` of the backend chosen by context `ctx` (an spt_context_s&).
#define SPT_DISPATCH(ctx, name, ...)                                                                 \
  (::spt::dispatch::use_reference(ctx)                                                                \
       ? ::spt::kernels::reference::name(::spt::dispatch::exec_for(ctx), __VA_ARGS__)                \
       : ::spt::kernels::cpu::name(::spt::dispatch::exec_for(ctx), __VA_ARGS__))
