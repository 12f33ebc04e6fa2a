// B-CSF / HB-CSF MTTKRP in any mode of one tree, dispatched: the device's
// non-root kernel under CUDA, else the OpenMP kernel (REFERENCE runs the
// OpenMP kernel on its one thread, there being no separate reference
// kernel). spt_mttkrp_hbcsf calls it for a non-root mode.
#pragma once

#include <cstdint>

#include "core/context.hpp"
#include "core/hbcsf.hpp"
#include "core/matrix.hpp"
#include "dispatch/dispatch.hpp"
#include "kernels/cpu/mttkrp_hbcsf_mode.hpp"

namespace spt::dispatch {

template <typename T>
void mttkrp_hbcsf_mode(const spt_context_s& ctx, const spt_hbcsf_s& h, const ConstMatRef<T>* factors, uint32_t mode,
                       MatRef<T> out) {
  const auto on_host = [&](const kernels::Exec& exec) { kernels::cpu::mttkrp_hbcsf_mode(exec, h, factors, mode, out); };
  run(
      ctx,
      [&](auto device) -> decltype(decltype(device)::mttkrp_hbcsf_mode(ctx, h, factors, mode, out)) {
        return decltype(device)::mttkrp_hbcsf_mode(ctx, h, factors, mode, out);
      },
      on_host, on_host);
}

}  // namespace spt::dispatch
